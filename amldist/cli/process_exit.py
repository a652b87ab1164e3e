"""How the ``amldist`` process ends: Python's teardown is skipped once nothing is left that needs it.

After the command, Python's own shutdown clears every module and frees every object one by one, collecting
garbage as it goes. With azure-ai-ml loaded (about 2,000 modules and 190,000 objects) that teardown is about a
sixth of an Azure dry run's CPU (3.1 s instead of 3.8 s, median of 9, on 2 cores); with only amldist's modules
it is a few hundredths of a second (``bench/bench_cli_exit.py`` measures both against the plain exit, in the
same run). Nothing of the command's result is in that teardown, so :func:`exit_now` ends the process in the
order Python would, then stops short of the teardown:

1. any other non-daemon thread still running: Python's normal exit, which waits for it (nothing is cut);
2. the ``atexit`` handlers run (logging's flush and close, temporary folders, multiprocessing's clean-up,
   coverage's data file), as at a normal exit;
3. one garbage collection, so an object reachable only through a reference cycle is still finalised (a file
   object closed, its buffer written);
4. standard output and error flushed; a closed or full standard output ends as everywhere else
   (:mod:`amldist.cli.closed_output`);
5. ``os._exit(code)``.

Only the ``amldist`` command does this (``python -m amldist`` and the console script); :func:`amldist.cli.main.main`
called from Python returns its code and leaves the caller's process alone. Only the standard library and
:mod:`amldist.cli.closed_output`: it is the last thing every command runs.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

from amldist.cli import closed_output


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` as described in the module's docstring."""
    others = any(t is not threading.current_thread() and not t.daemon for t in threading.enumerate())
    run_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's own; another Python exits as usual
    if others or threading.current_thread() is not threading.main_thread() or run_handlers is None:
        sys.exit(code)
    try:
        run_handlers()
        gc.collect()
        try:
            code = closed_output.flushed(code)
        except ValueError:
            pass  # standard output was closed by the command itself: nothing of it is left to write
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # nowhere left to say it; Python's own exit would have dropped it too
    except KeyboardInterrupt:  # Ctrl-C while ending: the shell's code for it, never a traceback
        code = 130
    os._exit(code)
