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

import re2

# torch prefixes error lines with "[rankN]: " (and "[default0]:" under torchrun's --tee)
RANK_PREFIX = re.compile(r"^\[(?:default|rank)\d+\]: ?")
_LINE_START = r"(?m)^(?:\[(?:default|rank)\d+\]: ?)?"
MAX_LINE_CHARS = 1000  # a line longer than this is shown around its match (a finding holds at most this much)
SET_MEMORY = 256 << 20  # RE2's DFA budget for the set: 60 patterns need a few MB; out of budget a set matches nothing


class _Scanner:
    """The registered patterns, their RE2 set, and the last text scanned (signatures run on one log at a time)."""

    def __init__(self):
        self.keys: dict[str, int] = {}
        self.compiled: list = []
        self.set = None
        self.text: str | None = None
        self.hits: frozenset = frozenset()

    def index(self, pattern: str, icase: bool) -> int:
        key = ("(?i)" if icase else "") + (_LINE_START + pattern[1:] if pattern.startswith("^") else pattern)
        found = self.keys.get(key)
        if found is None:
            found = self.keys[key] = len(self.compiled)
            self.compiled.append(re2.compile(key, _options()))
            self.set, self.text = None, None  # rebuilt with the new pattern on the next scan
        return found

    def occurs(self, text: str, index: int) -> bool:
        if self.set is None:
            self.set = re2.Set.SearchSet(_options())
            for key in self.keys:
                self.set.Add(key)
            self.set.Compile()
        if text is not self.text:
            self.text, self.hits = text, frozenset(self.set.Match(text) or ())
        return index in self.hits


def _options():
    options = re2.Options()
    options.max_mem = SET_MEMORY
    options.never_nl = True  # a match never spans lines, even through [^ ] or \s
    return options


_SCANNER = _Scanner()


def last_line(text: str, pattern: str, flags: int = re.IGNORECASE) -> str | None:
    """The last line of ``text`` that matches ``pattern`` (RE2 syntax; ``re.IGNORECASE`` in ``flags`` for any case),
    without torch's rank prefix and surrounding blanks; None when no line does."""
    index = _SCANNER.index(pattern, bool(flags & re.IGNORECASE))
    if not text or not _SCANNER.occurs(text, index):
        return None
    last = None
    for last in _SCANNER.compiled[index].finditer(text):
        pass
    if last is None:
        return None
    start = text.rfind("\n", 0, last.start()) + 1
    end = text.find("\n", last.end())
    end = len(text) if end < 0 else end
    if end - start > MAX_LINE_CHARS:  # a megabyte line: the part around the match, said to be cut
        cut_start = max(start, last.start() - MAX_LINE_CHARS // 4)
        cut_end = min(end, cut_start + MAX_LINE_CHARS)
        return (f"[{cut_start - start:,} characters cut] " if cut_start > start else "") + \
            text[cut_start:cut_end].strip() + (f" [{end - cut_end:,} characters cut]" if cut_end < end else "")
    return RANK_PREFIX.sub("", text[start:end]).strip()
