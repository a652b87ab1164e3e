"""Finding and stopping every process a local run started, grandchildren included.

Each process amldist starts gets its own session (``start_new_session``), so it and
everything it forks share a session id, even processes that change their process group:
Open MPI's ``mpirun`` puts every rank in a process group of its own, so killing mpirun's
group alone would leave the ranks running. On Linux the members of each session are found
in ``/proc``; elsewhere the process groups are signalled (the best a portable program can do).
A process that starts a session of its own (a daemon) escapes both, as it would escape a
container's job runner too.
"""

from __future__ import annotations

import os
import signal
import time

_PROC = "/proc"


def session_members(sessions: set[int]) -> set[int]:
    """Live processes whose session id is in ``sessions`` (Linux), else an empty set."""
    found: set[int] = set()
    if not sessions or not os.path.isdir(_PROC):
        return found
    for entry in os.listdir(_PROC):
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        # "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) in sessions:
            found.add(int(entry))
    return found


def signal_sessions(sessions: set[int], sig: int) -> int:
    """Send ``sig`` to every member of ``sessions``; returns how many processes got it."""
    sent = 0
    for pid in session_members(sessions):
        try:
            os.kill(pid, sig)
            sent += 1
        except (ProcessLookupError, PermissionError):
            pass
    if os.path.isdir(_PROC):
        return sent
    for sid in sessions:  # no /proc: the process group of each leader is the portable fallback
        try:
            os.killpg(sid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return sent


def stop_sessions(sessions: set[int], popens, grace: float) -> None:
    """SIGTERM everything in ``sessions``, wait up to ``grace`` seconds, then SIGKILL what is left.

    ``popens`` (the direct children) are reaped so that no zombie is left behind either.
    """
    if not sessions:
        return
    signal_sessions(sessions, signal.SIGTERM)
    deadline = time.monotonic() + max(grace, 0.0)
    while time.monotonic() < deadline:
        for p in popens:
            p.poll()
        if not session_members(sessions) and all(p.returncode is not None for p in popens):
            break
        time.sleep(0.05)
    signal_sessions(sessions, signal.SIGKILL)
    for p in popens:
        try:
            p.wait(timeout=5)
        except Exception:  # noqa: BLE001 - a process that survives SIGKILL is beyond our reach
            pass
    # Members whose parent already exited are reparented and reaped by init; wait for them to go.
    deadline = time.monotonic() + 5
    while session_members(sessions) and time.monotonic() < deadline:
        time.sleep(0.02)
