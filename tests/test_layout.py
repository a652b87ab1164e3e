"""The package's folders say what they hold: none is named like a test folder (``spec/``, ``specs/``,
``test/``, ``tests/``), which many readers and tools (RSpec's convention, test discovery) skip; and the
model, read by everything, names no Azure type and imports no azure-ai-ml (not even inside a function,
which import-linter's forbidden contract covers too)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "amldist"
TEST_LIKE = {"spec", "specs", "test", "tests"}


def test_no_package_folder_is_named_like_tests():
    folders = [p.relative_to(ROOT) for p in PACKAGE.rglob("*") if p.is_dir() and p.name.lower() in TEST_LIKE]
    assert folders == []


def test_the_model_imports_nothing_of_azure():
    found = []
    for path in sorted((PACKAGE / "model").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}:{node.lineno} {name}" for name in names
                      if name.split(".")[0] == "azure" or name.startswith("amldist.azure_sdk")]
    assert found == []
