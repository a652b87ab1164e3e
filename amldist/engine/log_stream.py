"""Copying the new lines of growing log files to a terminal: each line once, in constant memory.

Used by ``submit --local --stream`` (the supervisor's ``pump``) and ``amldist job logs [--follow]``.
Each log is read from where the last read ended, in chunks of :data:`CHUNK` bytes; a line not
finished yet (no ``\\n`` or ``\\r`` at its end: a progress bar being drawn) is kept in memory, never
read again from the file, and printed once it ends, or in pieces of :data:`MAX_LINE` bytes when it
never does, or at the end of the run. With a prefix (``[rank 1] ``), ``\\r`` ends a line as ``\\n``
does (``\\r\\n`` is one end), so each state of a progress bar is printed once, on its own line; with
no prefix (``raw``) the text is written as the program wrote it, ``\\r`` included, as ``cat`` would.
Only regular files are read (opened non-blocking and without following a link, checked after
opening): a log a rank replaced by a FIFO cannot block the run's supervisor, nor one replaced by a link
to ``/dev/zero`` or to a file elsewhere be read; with ``within`` (the run folder), a log whose folder
resolves outside it is not read either. Used by the local and the Slurm backends.
"""

from __future__ import annotations

import os
import re
import stat

from amldist.engine.state_files import resolves_inside

CHUNK = 64 * 1024
MAX_LINE = 64 * 1024  # a longer unfinished line is printed in pieces: memory stays bounded
_LINE_END = re.compile(rb"\r\n|\r|\n")


def open_regular(path: str):
    """``path`` opened for reading in binary when it is a regular file, else None (never blocks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


class LogFollower:
    """Where each log was read to, and its unfinished last line."""

    def __init__(self, write, *, raw: bool = False):
        self.write = write  # called with text made of whole lines
        self.raw = raw  # without a prefix: the program's own line ends (\r included)
        self.offsets: dict[str, int] = {}
        self.pending: dict[str, bytes] = {}

    def copy(self, path: str, prefix: str = "", *, final: bool = False, within: str | None = None) -> None:
        """Print the complete lines added to ``path`` since the last call (and the unfinished one when
        ``final``), each prefixed with ``prefix``; with ``within``, only a log inside that folder."""
        if within is not None and not resolves_inside(within, path):
            return
        fh = open_regular(path)
        if fh is None:
            return
        with fh:
            fh.seek(self.offsets.get(path, 0))
            while chunk := fh.read(CHUNK):
                self.offsets[path] = self.offsets.get(path, 0) + len(chunk)
                self._lines(path, self.pending.pop(path, b"") + chunk, prefix)
        if final and self.pending.get(path):
            self._emit([(self.pending.pop(path), b"\n")], prefix)

    def _lines(self, path: str, data: bytes, prefix: str) -> None:
        lines, start = [], 0
        keep_bare = self.raw and not prefix
        for end in _LINE_END.finditer(data):
            if end.group() == b"\r" and end.end() == len(data):
                break  # maybe the first half of "\r\n": decided when the next byte comes
            line = data[start:end.start()]
            if line or end.group() != b"\r" or keep_bare:  # a bare \r (a bar's first draw) is no line
                lines.append((line, end.group()))
            start = end.end()
        rest = data[start:]
        while len(rest) > MAX_LINE:
            lines.append((rest[:MAX_LINE], b"" if keep_bare else b"\n"))
            rest = rest[MAX_LINE:]
        self._emit(lines, prefix)
        if rest:
            self.pending[path] = rest

    def _emit(self, lines: list[tuple[bytes, bytes]], prefix: str) -> None:
        if not lines:
            return
        if self.raw and not prefix:
            self.write(b"".join(line + end for line, end in lines).decode("utf-8", "replace"))
        else:
            self.write("".join(prefix + line.decode("utf-8", "replace") + "\n" for line, _ in lines))
