"""Copying the new lines of growing log files to a terminal: each line once, in constant memory.

Used by ``submit --local --stream`` (the supervisor's ``pump``). Each log is read from where the
last read ended, in chunks of :data:`CHUNK` bytes; a line not finished yet (no ``\\n`` or ``\\r``
at its end: a progress bar being drawn) is kept in memory, never read again from the file, and
printed once it ends, or in pieces of :data:`MAX_LINE` bytes when it never does, or at the end of
the run. ``\\r`` ends a line as ``\\n`` does (``\\r\\n`` is one end), so each state of a progress bar
is printed once, on its own line, as Azure ML's log viewer shows it.
"""

from __future__ import annotations

import re

CHUNK = 64 * 1024
MAX_LINE = 64 * 1024  # a longer unfinished line is printed in pieces: memory stays bounded
_LINE_END = re.compile(rb"\r\n|\r|\n")


class LogFollower:
    """Where each log was read to, and its unfinished last line."""

    def __init__(self, write):
        self.write = write  # called with text made of whole lines, each ending in "\n"
        self.offsets: dict[str, int] = {}
        self.pending: dict[str, bytes] = {}

    def copy(self, path: str, prefix: str = "", *, final: bool = False) -> None:
        """Print the complete lines added to ``path`` since the last call (and the unfinished one when
        ``final``), each prefixed with ``prefix``."""
        try:
            fh = open(path, "rb")
        except OSError:
            return
        with fh:
            fh.seek(self.offsets.get(path, 0))
            while chunk := fh.read(CHUNK):
                self.offsets[path] = self.offsets.get(path, 0) + len(chunk)
                self._lines(path, self.pending.pop(path, b"") + chunk, prefix)
        if final and self.pending.get(path):
            self._emit([self.pending.pop(path)], prefix)

    def _lines(self, path: str, data: bytes, prefix: str) -> None:
        lines, start = [], 0
        for end in _LINE_END.finditer(data):
            if end.group() == b"\r" and end.end() == len(data):
                break  # maybe the first half of "\r\n": decided when the next byte comes
            line = data[start:end.start()]
            if line or end.group() != b"\r":  # a bare \r with nothing before it (a bar's first draw) is no line
                lines.append(line)
            start = end.end()
        rest = data[start:]
        while len(rest) > MAX_LINE:
            lines.append(rest[:MAX_LINE])
            rest = rest[MAX_LINE:]
        self._emit(lines, prefix)
        if rest:
            self.pending[path] = rest

    def _emit(self, lines: list[bytes], prefix: str) -> None:
        if lines:
            self.write("".join(prefix + line.decode("utf-8", "replace") + "\n" for line in lines))
