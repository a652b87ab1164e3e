"""No function in amldist/ is over 60 lines (the project's bar: a function a reader takes in at once).

The test lists every offender (file, line, name, length), not just the first, so one run shows all
that is left to split. Length counts the lines from ``def`` (decorators included) to the function's
last line, docstring and comments included, as a reader sees them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "amldist"
MAX_LINES = 60


def long_functions(root: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` for each function or method in ``root`` longer than ``limit``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_counter_finds_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(61))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\n@staticmethod\ndef long():\n{body}")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:6 long (63 lines)"]


def test_no_function_is_over_60_lines():
    offenders = long_functions()
    assert offenders == [], f"{len(offenders)} function(s) over {MAX_LINES} lines:\n" + "\n".join(offenders)
