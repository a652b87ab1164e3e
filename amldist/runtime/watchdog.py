"""The stall watchdog: a rank that makes no progress for ``stall_timeout`` seconds stops the job,
every rank writing its Python stack to its own log first, instead of the job idling until
``limits.timeout``.

Turned on by ``init_distributed(stall_timeout=SECONDS)`` or, for scripts left as they are, the
variable ``AMLDIST_STALL_TIMEOUT`` (seconds; set it in the job's ``environment_variables``). Off
otherwise: nothing is started and nothing costs.

Progress, defined simply: the main thread's innermost Python frame is somewhere else (another
code object, line or bytecode offset) than at the previous look, or the script called
:func:`amldist.runtime.progress`. A main thread blocked in one call (a collective, a sleep, a lock,
a read) for ``stall_timeout`` seconds is stuck; one running Python code, or calling into torch
from Python, is not. Choose a timeout longer than the longest step (the first step compiles and
warms caches: minutes on a GPU), or call ``progress()`` inside a long wait you expect.

How (no ``sys.settrace``, nothing on the main thread): each rank runs one daemon thread that looks
at the main thread's frame (``sys._current_frames()``) every ``interval`` seconds and publishes
"last progress, last look, where" in the process group's own store (torch's TCPStore, served by
rank 0). A rank whose own main thread has not progressed for ``stall_timeout`` reads every rank's
entry, names the rank whose progress is oldest (the one that stalled first; the others stopped
when they reached a collective it never joined), and posts that name. Every rank's thread, on
seeing it, prints the ``stall`` line and its threads' stacks (``faulthandler``) to stderr, which is
its log, waits until every rank has done so (at most a few seconds) and exits with
:data:`STALL_EXIT_CODE`: the stuck rank first, the others a moment later.
A rank whose main thread holds the GIL (stuck in C code that never releases it) starves its own
watchdog thread: faulthandler's C timer, re-armed on every look, then writes its stacks, and the
other ranks name it, since its entry in the store stops moving. ``amldist job diagnose`` reads the
line and the stuck rank's stack.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections.abc import Mapping

from .dist_env import DistEnvError

STALL_VAR = "AMLDIST_STALL_TIMEOUT"
STALL_EXIT_CODE = 124  # as timeout(1) exits
PREFIX = "amldist/stall/"
LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3", "amldist/runtime/", "<frozen ")
COLLECTIVES = ("torch/distributed/distributed_c10d.py", "torch/distributed/c10d_logger.py")

_progress_calls = 0


def progress() -> None:
    """Tell the watchdog the script is making progress (for a long wait that is expected)."""
    global _progress_calls
    _progress_calls += 1


def stall_timeout(value, environ: Mapping[str, str]) -> float | None:
    """The timeout asked for (an argument wins over AMLDIST_STALL_TIMEOUT), None when off."""
    source = "stall_timeout" if value is not None else STALL_VAR
    raw = value if value is not None else environ.get(STALL_VAR, "").strip()
    if raw in ("", None, 0, "0"):
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise DistEnvError(f"{source}={str(raw)[:40]!r} is not a number of seconds; set it to e.g. 600, "
                           "or 0 to turn the stall watchdog off") from None
    if not 0 < seconds < 10**7:
        raise DistEnvError(f"{source}={seconds:g} must be a positive number of seconds (e.g. 600), or 0 for off")
    return seconds


def in_collective(frame) -> bool:
    """Whether the thread at ``frame`` is inside a torch.distributed call (waiting for the other ranks)."""
    while frame is not None:
        if frame.f_code.co_filename.replace("\\", "/").endswith(COLLECTIVES):
            return True
        frame = frame.f_back
    return False


def where(frame) -> str:
    """``file:line in function`` of the innermost frame that is the user's (else the innermost)."""
    innermost = frame
    while frame is not None:
        if not any(part in frame.f_code.co_filename for part in LIBRARY):
            break
        frame = frame.f_back
    frame = frame or innermost
    if frame is None:
        return "?"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


class Watchdog:
    """One rank's stall watchdog (see the module docstring). ``store`` is a torch distributed Store."""

    def __init__(self, rank: int, world: int, store, timeout: float, *, interval: float | None = None,
                 out=None, exit=os._exit, main_thread: int | None = None):
        self.rank, self.world, self.store, self.timeout = rank, world, store, timeout
        self.interval = interval or min(max(timeout / 8, 0.05), 2.0)
        self.out = out or sys.stderr
        self.exit = exit
        self.main = main_thread if main_thread is not None else threading.main_thread().ident
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="amldist-stall-watchdog", daemon=True)
        self._position = None
        self._calls = _progress_calls
        self.last_progress = time.time()
        self.where = "?"
        self.waiting = False  # in a collective: waiting for the others, not the cause

    def start(self) -> "Watchdog":
        self.arm()  # before the thread first runs: the main thread may hold the GIL from now on
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        faulthandler.cancel_dump_traceback_later()

    def arm(self) -> None:
        """faulthandler's own timer (a C thread that needs no GIL) dumps every thread's stack if this
        thread does not re-arm it in time: a main thread that holds the GIL (stuck in C code that never
        releases it) starves this thread, and the other ranks name the rank whose entry went stale."""
        if hasattr(self.out, "fileno"):
            faulthandler.dump_traceback_later(self.timeout + 5 * self.interval, repeat=False, file=self.out)

    def look(self, now: float) -> None:
        """Compare the main thread's frame with the last look; progress moves ``last_progress``."""
        frame = sys._current_frames().get(self.main)
        position = None if frame is None else (id(frame.f_code), frame.f_lineno, frame.f_lasti, id(frame))
        if position != self._position or _progress_calls != self._calls:
            self.last_progress = now
        self._position, self._calls = position, _progress_calls
        self.where = where(frame) if frame is not None else "?"
        self.waiting = in_collective(frame)

    def _run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                self.arm()
                now = time.time()
                self.look(now)
                self.store.set(f"{PREFIX}{self.rank}",
                               f"{self.last_progress:.3f} {now:.3f} {int(self.waiting)} {self.where}")
                if self.store.check([PREFIX + "culprit"]):
                    return self.stop_job(self.store.get(PREFIX + "culprit").decode("utf-8", "replace"))
                if now - self.last_progress >= self.timeout:
                    self.accuse(now)
        except Exception:  # the store went away (rank 0 ended, the group was torn down): nothing to watch
            return None

    def accuse(self, now: float) -> None:
        """Name the stuck rank and post it, once for the whole job: of the ranks outside any collective
        the one whose progress is oldest (the others wait for it), else the oldest of all."""
        entries = [(self.last_progress, not self.waiting, self.rank, self.where)]
        for rank in range(self.world):
            key = f"{PREFIX}{rank}"
            if rank != self.rank and self.store.check([key]):
                last, _seen, waiting, place = self.store.get(key).decode("utf-8", "replace").split(" ", 3)
                entries.append((float(last), waiting == "0", rank, place))
        outside = [e for e in entries if e[1]]
        last, _outside, rank, place = min(outside or entries)
        age = now - min(e[0] for e in entries)
        what = (f"made no progress for {now - last:.1f} s" if now - last >= self.timeout else
                f"never reached the collective the other ranks waited {age:.1f} s in")
        if self.store.add(PREFIX + "claims", 1) == 1:
            self.store.set(PREFIX + "culprit", f"{rank} {what}; it is at {place}")

    def stop_job(self, culprit: str) -> None:
        """Write the stall line and this rank's stacks to its log, then end the process."""
        stuck, what = culprit.split(" ", 1)
        faulthandler.cancel_dump_traceback_later()
        try:
            self.out.write(f"amldist.runtime: stall: rank {stuck} {what}; every rank writes its Python stack "
                           f"to its log and stops (this is rank {self.rank}; stall_timeout {self.timeout:g} s)\n")
            self.out.flush()
            faulthandler.dump_traceback(file=self.out, all_threads=True)
            self.out.flush()
            from . import evidence

            evidence.write("stall", detail=f"stall: rank {stuck} {what}",
                           frame=evidence.stack_frame(sys._current_frames().get(self.main)))
        finally:
            self.store.add(PREFIX + "dumped", 1)
        self.wait_for_others(int(stuck))
        self.exit(STALL_EXIT_CODE)

    def wait_for_others(self, stuck: int) -> None:
        """Every rank waits until all have written their stacks (at most a few seconds: the stuck rank's
        leaving would end the others' collectives before they write); then the stuck rank leaves first,
        the others a moment later, so the launcher reports the stuck rank."""
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                if self.store.add(PREFIX + "dumped", 0) >= self.world:
                    break
            except Exception:  # rank 0, which serves the store, has left
                break
            time.sleep(0.05)
        if self.rank != stuck:
            time.sleep(0.5)


def job_store(env, timeout: float = 30.0):
    """A client of the store the group's rendezvous serves (rank 0's TCPStore at MASTER_ADDR:MASTER_PORT),
    a connection of its own, so the watchdog never waits behind the group's use of the store."""
    import datetime

    from torch.distributed import TCPStore

    return TCPStore(env.master_addr, int(env.master_port), is_master=False, wait_for_workers=False,
                    timeout=datetime.timedelta(seconds=timeout))
