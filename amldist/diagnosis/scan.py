"""Finding the last line of a log that matches a pattern, for every signature, in one pass over the log.

A job of 1,024 ranks leaves 1,024 log tails and the signature table holds some 60 patterns: tried one by one,
line by line, that is ~100 million regex calls. Here every pattern goes into one RE2 set
(``re2.Set``, google-re2: a dependency already, for pathspec) that scans a log once and says which patterns
occur anywhere in it; only those are then searched for their last line. RE2 runs in time linear in the text
whatever the pattern or the text (a megabyte line of repeated prefixes cannot make it backtrack), which is
why it is used rather than ``re`` for text that comes from a job.

Patterns are matched per line: ``.`` never crosses a newline, and a pattern that starts with ``^`` matches at
a line's start, after torch's ``[rankN]:`` prefix.
"""

from __future__ import annotations

import re
import zlib

import re2

# torch prefixes error lines with "[rankN]: " (and "[default0]:" under torchrun's --tee)
RANK_PREFIX = re.compile(r"^\[(?:default|rank)\d+\]: ?")
ICASE = int(re.IGNORECASE)
_LINE_START = r"(?m)^(?:\[(?:default|rank)\d+\]: ?)?"
MAX_LINE_CHARS = 1000  # a line longer than this is shown around its match (a finding holds at most this much)
SET_MEMORY = 256 << 20  # RE2's DFA budget for the set: 60 patterns need a few MB; out of budget a set matches nothing


class _Scanner:
    """The registered patterns, their RE2 set, and the log scanned last (signatures run on one log at a time).

    RE2 works on UTF-8 bytes: a log is encoded once per scan (a str would be encoded, and every match position
    mapped back to characters, at each call). Which patterns occur in a log is remembered by the log's hash and
    length and CRC-32 for the last :data:`MEMO` logs, so a second look at the same log (the analysis reads each rank
    twice) costs no second scan."""

    MEMO = 4096

    def __init__(self):
        self.keys: dict[str, int] = {}
        self.compiled: list = []
        self.set = None
        self.text: str | None = None
        self.data: bytes = b""
        self.memo_key: tuple = ()
        self.memo: dict = {}

    def index(self, pattern: str, icase: bool) -> int:
        key = ("(?i)" if icase else "") + (_LINE_START + pattern[1:] if pattern.startswith("^") else pattern)
        found = self.keys.get(key)
        if found is None:
            found = self.keys[key] = len(self.compiled)
            self.compiled.append(re2.compile(key.encode(), _options()))
            self.set = None  # rebuilt with the new pattern on the next scan
        return found

    def occurs(self, text: str, index: int) -> bool:
        if text is not self.text:
            self.text, self.data = text, text.encode("utf-8", "replace")
            self.memo_key = (len(self.data), zlib.crc32(self.data))  # cheaper than hash() of a new str
        memo_key = self.memo_key
        known, hits = self.memo.get(memo_key, (0, frozenset()))
        if index >= known:  # a pattern registered after this log was scanned: scan again with all of them
            if len(self.memo) >= self.MEMO:
                self.memo.clear()
            known, hits = self.memo[memo_key] = (len(self.compiled), self.hits(self.data))
        return index in hits

    def hits(self, data: bytes) -> frozenset:
        if self.set is None:
            self.set = re2.Set.SearchSet(_options())
            for key in self.keys:
                self.set.Add(key.encode())
            self.set.Compile()
        return frozenset(self.set.Match(data) or ())


def _options():
    options = re2.Options()
    options.max_mem = SET_MEMORY
    options.never_nl = True  # a match never spans lines, even through [^ ] or \s
    return options


_SCANNER = _Scanner()


def last_line(text: str, pattern: str, flags: int = re.IGNORECASE) -> str | None:
    """The last line of ``text`` that matches ``pattern`` (RE2 syntax; ``re.IGNORECASE`` in ``flags`` for any case),
    without torch's rank prefix and surrounding blanks; None when no line does."""
    index = _SCANNER.index(pattern, bool(int(flags) & ICASE))
    if not text or not _SCANNER.occurs(text, index):
        return None
    data, last = _SCANNER.data, None
    for last in _SCANNER.compiled[index].finditer(data):
        pass
    if last is None:
        return None
    start = data.rfind(b"\n", 0, last.start()) + 1
    end = data.find(b"\n", last.end())
    end = len(data) if end < 0 else end
    if end - start > MAX_LINE_CHARS:  # a megabyte line: the part around the match, said to be cut
        cut_start = max(start, last.start() - MAX_LINE_CHARS // 4)
        cut_end = min(end, cut_start + MAX_LINE_CHARS)
        return (f"[{cut_start - start:,} bytes cut] " if cut_start > start else "") + \
            data[cut_start:cut_end].decode("utf-8", "replace").strip() + \
            (f" [{end - cut_end:,} bytes cut]" if cut_end < end else "")
    return RANK_PREFIX.sub("", data[start:end].decode("utf-8", "replace")).strip()
