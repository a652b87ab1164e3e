"""A standard output that is closed or full: ``amldist ... | head``, ``amldist ... > /dev/full``.

- The reader went away (``| head``, ``| less`` quit early: EPIPE, BrokenPipeError): what amldist
  was doing is done or cut by the reader's choice, so amldist ends quietly, with the command's own
  exit code when it had finished (0 when its work succeeded) and 0 when printing was cut short.
  Standard output is then pointed at ``/dev/null`` so that Python's last flush at exit neither
  prints "Exception ignored ..." nor turns the exit code into 120.
- The output cannot be written (``> /dev/full``: ENOSPC, or EIO, EFBIG, EDQUOT): one line on
  standard error, exit 1 (the work's result could not be delivered).

Only the output side is handled here; a run's own files are written by code that reports their
failures itself.
"""

from __future__ import annotations

import errno
import os
import sys

_READER_GONE = (errno.EPIPE,)
_CANNOT_WRITE = tuple(getattr(errno, name) for name in ("ENOSPC", "EIO", "EFBIG", "EDQUOT") if hasattr(errno, name))


def closed_at_start_to_devnull() -> None:
    """A standard output or error closed before amldist started (``amldist ... >&-``): Python then holds None
    for it, and the first print would be an internal error. It is pointed at /dev/null instead, so the command
    runs and ends with its own code, as when the reader went away."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 (lives as long as the process)


def is_output_error(exc: BaseException) -> bool:
    """Whether ``exc`` says standard output is closed or full (rather than some file amldist writes)."""
    return isinstance(exc, OSError) and (exc.errno in _READER_GONE or exc.errno in _CANNOT_WRITE)


def flushed(code: int) -> int:
    """``code`` after flushing standard output now (so a closed or full one is seen here, not at exit)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        if not is_output_error(exc):
            raise
        return handle(exc, code)
    return code


def handle(exc: OSError, code: int = 0) -> int:
    """The exit code for a closed (``code``, quietly) or full (1, one line) standard output."""
    _silence_stdout()
    if exc.errno in _READER_GONE:
        return code
    try:
        print(f"error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
    except OSError:
        pass
    return 1


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null and drop what Python still buffers for it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        return
    try:
        sys.stdout.flush()  # the buffer now goes to /dev/null
    except OSError:
        pass
