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
