"""Ignore patterns matched in linear time (RE2), or refused where only a backtracking matcher exists."""

from __future__ import annotations

import time

import pytest

from amldist.errors import UserError
from amldist.rules import ignore_files
from amldist.rules.ignore_files import MAX_WILDCARDS, check_backtracking, is_ignored, spec_from_lines

PATHOLOGICAL = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


def test_a_pathological_pattern_is_matched_in_linear_time():
    spec = spec_from_lines([PATHOLOGICAL, "*.pyc", "!keep.pyc", "logs/"])
    started = time.monotonic()
    assert not is_ignored(spec, "a" * 250, False)
    assert is_ignored(spec, "a" * 100 + "b", False)
    assert is_ignored(spec, "x/y.pyc", False) and not is_ignored(spec, "keep.pyc", False)
    assert is_ignored(spec, "logs", True)
    assert time.monotonic() - started < 1.0


def test_without_re2_a_pattern_with_too_many_wildcards_is_refused(monkeypatch):
    monkeypatch.setattr(ignore_files, "_has_re2", lambda: False)
    assert spec_from_lines(["*a*b*c*d"]) is not None  # 4 wildcards: fast enough for a backtracking matcher
    with pytest.raises(UserError, match="wildcards"):
        spec_from_lines([PATHOLOGICAL])


@pytest.mark.parametrize("line, refused", [("*.pyc", False), ("**/build/**", False), ("*a*b*c*d", False),
                                           ("*a*b*c*d*e", True), (PATHOLOGICAL, True), ("\\*\\*\\*\\*\\*x", False)])
def test_the_backtracking_bound(line, refused):
    if refused:
        with pytest.raises(UserError, match=f"more than {MAX_WILDCARDS}"):
            check_backtracking([line], "the pattern", hint="h")
    else:
        check_backtracking([line], "the pattern", hint="h")
