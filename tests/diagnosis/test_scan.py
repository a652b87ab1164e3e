"""The one-pass scanner (RE2 set, then the last matching line) answers as the plain rule does: the last line of
the log that matches the pattern, read line by line with Python's ``re`` after torch's ``[rankN]:`` prefix."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amldist.diagnosis.scan import RANK_PREFIX, last_line
from amldist.diagnosis.signatures import SIGNATURES
from tests.conftest import budget
from tests.diagnosis.test_signature_lines import CASES

PATTERNS = [s.entry.pattern for s in SIGNATURES if hasattr(s, "entry")] + [r"^Killed\b|oom[-_ ]kill"]
PIECES = [text for _name, _code, text in CASES if text] + [
    "2024-05-02 10:00:01,100 INFO step 10", "[rank3]: Killed", "Killed by a signal", "é ü 中文 \x1b[31m", "", "  ",
    "NET/IB : Got completion", "from peer 10.0.0.5<1> with status=12", "[default0]:ncclSystemError"]


def reference(text: str, pattern: str, flags: int) -> str | None:
    regex = re.compile(pattern, flags)
    for line in reversed(text.split("\n")):
        line = RANK_PREFIX.sub("", line)
        if regex.search(line):
            return line.strip()
    return None


@pytest.mark.budget
@settings(max_examples=budget(100, 300), deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12), st.sampled_from(PATTERNS), st.booleans())
def test_the_scanner_finds_the_line_the_plain_rule_finds(pieces, pattern, icase):
    text = "\n".join(pieces)
    flags = re.IGNORECASE if icase else 0
    assert last_line(text, pattern, flags) == reference(text, pattern, flags)


def test_a_match_never_spans_two_lines():
    assert last_line("Got completion from peer\nx with status=12\n", r"Got completion from peer [^ ]+ with", 0) is None
    assert last_line("NET/IB : a\nGot async event : port error", r"NET/IB ?: .*Got async event", 0) is None
