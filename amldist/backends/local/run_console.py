"""What a local run prints besides its processes' output: the code copy's progress and the run's last lines.

- :class:`CopyProgress`: a large ``code:`` folder (:data:`LARGE_FILES` files or :data:`LARGE_BYTES` bytes,
  counted as the copy goes) gets a progress line on stderr: rewritten in place on a terminal (at most
  every :data:`EVERY_SECONDS`), one line when it starts being large and one when it is done otherwise,
  so a log file does not fill with counters. A small folder prints nothing.
- :func:`end_lines`: the end of a run's output: the last lines of rank 0's log (of the failing rank's when
  a rank failed, which the supervisor already prints) and the command that shows every log,
  ``amldist job logs NAME`` (with ``--run-root`` when the run is not under ``./.amldist/runs``). The status
  and the one duration of the run are in the summary above these lines (``run_state.summary_lines``).
"""

from __future__ import annotations

import os
import shlex
import time

LARGE_FILES = 2000
LARGE_BYTES = 100 * 2**20
EVERY_SECONDS = 0.5
TAIL_LINES = 10
DEFAULT_RUN_ROOT = os.path.join(".amldist", "runs")


class CopyProgress:
    """``progress(files, size)`` after each file the copy writes; ``done()`` at the end."""

    def __init__(self, source: str, stream, *, interactive: bool | None = None):
        self.source, self.stream = source, stream
        self.interactive = stream.isatty() if interactive is None else interactive
        self.started = time.monotonic()
        self.shown_at = 0.0
        self.files = self.size = 0
        self.large = False

    def __call__(self, files: int, size: int) -> None:
        self.files, self.size = files, size
        if not self.large and (files >= LARGE_FILES or size >= LARGE_BYTES):
            self.large = True
            if not self.interactive:
                self._write(f"copying the code folder {self.source} into the run (a large folder; .amlignore "
                            "leaves out what the job does not need) ...\n")
        now = time.monotonic()
        if self.large and self.interactive and now - self.shown_at >= EVERY_SECONDS:
            self.shown_at = now
            self._write(f"\r\x1b[K{self._counts()} ...")

    def done(self) -> None:
        if self.large:
            self._write(("\r\x1b[K" if self.interactive else "") + f"{self._counts()}, done in "
                        f"{time.monotonic() - self.started:.1f}s\n")

    def _counts(self) -> str:
        return f"copying code: {self.files:,} files, {self.size / 2**20:,.1f} MB"

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal is gone: the copy goes on
            pass


def logs_command(job_name: str, run_dir: str, *, rank: int | None = None, cwd: str | None = None) -> str:
    """``amldist job logs NAME`` as it finds this run from ``cwd`` (a pipeline's step: ``PIPELINE --step NAME``)."""
    argv = ["amldist", "job", "logs", job_name]
    run_root = os.path.dirname(os.path.abspath(run_dir))
    where = os.path.normpath(os.path.relpath(run_root, cwd or os.getcwd()))
    if os.path.dirname(where) == DEFAULT_RUN_ROOT:  # .amldist/runs/<pipeline>/<step>
        argv = ["amldist", "job", "logs", os.path.basename(where), "--step", job_name]
    elif where != DEFAULT_RUN_ROOT:
        argv += ["--run-root", where]
    if rank is not None:
        argv += ["--rank", str(rank)]
    return shlex.join(argv)


def end_lines(job_name: str, run_dir: str, log_path: str | None, *, failed_rank: int | None = None,
              tail: str = "") -> list[str]:
    """The run's last lines: rank 0's log tail (when it completed) and where every log is."""
    lines = []
    if failed_rank is None and log_path and tail:
        lines.append(f"--- last lines of rank 0's log ({os.path.relpath(log_path)}) ---")
        lines += tail.splitlines()[-TAIL_LINES:]
    if failed_rank is not None:
        lines.append(f"that rank's whole log: {logs_command(job_name, run_dir, rank=failed_rank)}")
    lines.append(f"every rank's log: {logs_command(job_name, run_dir)}")
    return lines
