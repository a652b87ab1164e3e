"""Small helpers for the validator's tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
ROOT = HERE.parents[1]


def fixture_files(group: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / group).rglob("*") if p.suffix in (".yml", ".yaml"))


def expectations(path: Path) -> set[tuple[str, str]]:
    """The ``# expect: CODE FIELD`` lines written at the top of an invalid fixture (FIELD ``-``: none)."""
    found = set()
    for line in path.read_text().splitlines():
        match = re.match(r"#\s*expect:\s*(\S+)\s+(\S+)", line)
        if match:
            found.add((match.group(1), None if match.group(2) == "-" else match.group(2)))
    return found


def run_cli(*args, cwd=None, timeout=120, env=None):
    """``python -m amldist ...`` in a subprocess: (exit code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "amldist", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr
