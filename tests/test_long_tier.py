"""Every entry of the long tier's table (tests/long_tier.py) names a test that exists, and says what covers it."""

from __future__ import annotations

import importlib

import pytest

from tests.long_tier import LONG, covered_by


@pytest.mark.parametrize("key", sorted(LONG))
def test_every_entry_names_an_existing_test_and_its_cover(key):
    path, _, test = key.partition("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    function = test.split("[", 1)[0]
    assert callable(getattr(module, function, None)), f"{key}: no such test (renamed? update tests/long_tier.py)"
    cover = LONG[key]
    assert cover and cover != key


def test_a_case_id_is_matched_exactly_and_a_bare_name_matches_every_case():
    LONG["tests/x.py::test_a[1]"] = "tests/x.py::test_a[0]"
    LONG["tests/x.py::test_b"] = "tests/x.py::test_c"
    try:
        assert covered_by("tests/x.py::test_a[1]") == "tests/x.py::test_a[0]"
        assert covered_by("tests/x.py::test_a[0]") is None
        assert covered_by("tests/x.py::test_b[anything]") == "tests/x.py::test_c"
        assert covered_by("tests/x.py::test_c") is None
    finally:
        del LONG["tests/x.py::test_a[1]"], LONG["tests/x.py::test_b"]


def _budget_tests(source: str) -> tuple[set[str], set[str]]:
    """(tests sized by budget(), directly or through a module constant such as FAST; tests marked budget)."""
    import ast

    tree = ast.parse(source)

    def calls_budget(node) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "budget"
                   for n in ast.walk(node))

    sized_names = {t.id for node in tree.body if isinstance(node, ast.Assign) and calls_budget(node.value)
                   for t in node.targets if isinstance(t, ast.Name)}
    sized, marked = set(), set()
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        if calls_budget(node) or any(isinstance(n, ast.Name) and n.id in sized_names
                                     for d in node.decorator_list for n in ast.walk(d)):
            sized.add(node.name)
        if any(ast.unparse(d) == "pytest.mark.budget" for d in node.decorator_list):
            marked.add(node.name)
    return sized, marked


def test_a_test_sized_by_budget_is_marked_budget_and_the_other_way_round():
    """CI's long tier selects `-m "long or budget"`: a test sized by budget() without the mark would never run at
    its long budget in CI, and a mark without budget() would run the same test twice for nothing."""
    from tests.conftest import ROOT

    found = 0
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        sized, marked = _budget_tests(path.read_text(encoding="utf-8"))
        assert sized == marked, f"{path.relative_to(ROOT)}: sized {sorted(sized)}, marked {sorted(marked)}"
        found += len(sized)
    assert found >= 10  # the checker sees the budgeted tests at all


def test_the_budget_checker_finds_either_half_missing():
    unmarked = "FAST = settings(max_examples=budget(1, 2))\n@FAST\ndef test_a(): pass\n"
    assert _budget_tests(unmarked) == ({"test_a"}, set())
    unsized = "@pytest.mark.budget\ndef test_b(): pass\n"
    assert _budget_tests(unsized) == (set(), {"test_b"})
