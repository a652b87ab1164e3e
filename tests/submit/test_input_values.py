"""--input values are the text typed, read by the input's type only where it says so (issue 17 pt 8)."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.submit.overrides import apply_inputs, parse_inputs


@pytest.mark.parametrize("typed, current, expected", [
    ("0123", "x", "0123"), ("1:30", "x", "1:30"), ("yes", "x", "yes"), ("null", "x", "null"), ("", "x", ""),
    ("07", 1, 7), ("2.5", 0.1, 2.5), ("false", True, False), ("abc", 1, "abc"),
    ("0123", {"type": "string", "default": "a"}, "0123"), ("0123", {"type": "integer", "default": 1}, 123),
    ("1e-3", {"type": "number"}, 0.001), ("True", {"type": "boolean"}, True), ("1:30", {"type": "integer"}, "1:30"),
])
def test_a_value_is_text_unless_the_input_is_typed(typed, current, expected):
    job = {"inputs": {"x": current}}
    value = apply_inputs(job, parse_inputs([f"x={typed}"]))["inputs"]["x"]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text", ["a\n=1", "a\nb=1", "=1", "a b=1", "a;b=1"])
def test_a_name_that_is_not_an_input_name_is_one_line(text):
    with pytest.raises(UserError) as info:
        parse_inputs([text])
    assert "\n" not in str(info.value)
