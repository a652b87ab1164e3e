"""Job names: one folder name and one printable word (rules/names.py)."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.rules.names import check_job_name, is_job_name


@pytest.mark.parametrize("name", ["a", "job_1", "Train-2026", "0abc", "x" * 255])
def test_valid_job_names(name):
    assert is_job_name(name) and check_job_name(name) == name


@pytest.mark.parametrize("name", ["abc\n", "abc\r\n", "a\x1b[31m", "", "-a", "_a", "a/b", "..", "a b", "x" * 256,
                                  "é", None, 3])
def test_invalid_job_names_are_one_escaped_line(name):
    assert not is_job_name(name)
    with pytest.raises(UserError) as caught:
        check_job_name(name)
    assert caught.value.exit_code == 2
    assert "\n" not in caught.value.message and "\x1b" not in caught.value.message
