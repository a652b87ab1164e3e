"""Writing a run's ``status.json`` when the disk is full for a moment: retry, report, never stop the run.

A write that fails (ENOSPC, EDQUOT, EIO, the folder gone) is tried again a few times at once (a
rank that filled the disk often frees it within moments), and when it still fails the run goes
on: the state is kept in memory, marked unsaved, and written at the next chance (the
supervisor's next poll, the end of the run). One warning line says so on standard error, and
one note when a write succeeds again; no failed write ever ends a healthy run or is recorded
as a crash (it is the recording that failed, not the run).
"""

from __future__ import annotations

import sys
import time

from amldist.model.files import FileProblem

RETRY_DELAYS = (0.05, 0.2)  # seconds between the tries of one write: short, the supervisor is polling


class RetryingWrite:
    """Runs one file write with retries; ``unsaved`` says the last write did not reach the disk."""

    def __init__(self, what: str, err=None):
        self.what = what
        self.err = err
        self.unsaved = False
        self._reported = False

    def __call__(self, write) -> bool:
        """Call ``write()`` until it succeeds or the tries are used up; True when it succeeded."""
        error = None
        for delay in (0.0, *RETRY_DELAYS):
            if delay:
                time.sleep(delay)
            try:
                write()
            except (OSError, FileProblem) as exc:  # FileProblem: model.files' wording of an OSError
                error = exc
                continue
            self._succeeded()
            return True
        self.unsaved = True
        self._report(error)
        return False

    def _succeeded(self) -> None:
        self.unsaved = False
        if self._reported:
            self._say(f"note: {self.what} is written again")
            self._reported = False

    def _report(self, error) -> None:
        if not self._reported:
            reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
            self._say(f"warning: cannot write {self.what} ({reason}); the run goes on and amldist writes it "
                      "again at the next change")
            self._reported = True

    def _say(self, line: str) -> None:
        try:
            print(line, file=self.err or sys.stderr, flush=True)
        except (OSError, ValueError):  # the terminal is gone too: status.json will say it all
            pass
