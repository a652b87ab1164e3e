"""Run the real ``amldist`` command under a memory cap and a time limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

from tests.conftest import ROOT

MEMORY_CAP = 2 << 30  # address space of one amldist process: a runaway read dies here, not in the machine
EXIT_CODES = (0, 1, 2)  # success, invalid input, usage; 3 is an internal error, anything else a crash


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float

    def assert_clean(self, codes=EXIT_CODES):
        """Exit 0/1/2, no traceback, no internal error, every stderr line a plain message."""
        assert self.code in codes, (self.code, self.err[-2000:])
        assert "Traceback" not in self.err and "internal error" not in self.err, self.err[-2000:]
        assert "internal-error" not in self.out, self.out[-2000:]


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def amldist(*args, cwd=None, timeout=60, stdin=subprocess.DEVNULL) -> Result:
    """``python -m amldist ARGS`` in a subprocess capped at MEMORY_CAP; a hang fails the test at ``timeout``."""
    env = {k: v for k, v in os.environ.items() if k != "AMLDIST_DEBUG"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "amldist", *map(str, args)], capture_output=True, text=True,
                          errors="replace", timeout=timeout, cwd=cwd or ROOT, env=env, preexec_fn=_cap, stdin=stdin)
    return Result(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started)
