"""Finding and stopping every process a local run started, grandchildren included, whatever ends amldist.

Each process amldist starts gets its own session (``start_new_session``), so it and
everything it forks share a session id, even processes that change their process group:
Open MPI's ``mpirun`` puts every rank in a process group of its own, so killing mpirun's
group alone would leave the ranks running. On Linux the members of each session are found
in ``/proc``; elsewhere the process groups are signalled (the best a portable program can do).

No orphans when amldist itself dies without cleaning up (SIGKILL, a crash), on Linux:

- :class:`Watchdog`: a small separate process (this file run as a script, standard library
  only) in a session of its own, so the terminal's SIGHUP/SIGINT do not reach it. amldist
  sends it each session id through a pipe; the pipe's other end closes when amldist dies
  however it dies, and the watchdog then stops those sessions (SIGTERM, the grace, SIGKILL).
  PR_SET_PDEATHSIG alone would reach only the direct children, not mpirun's ranks or the
  ranks' own children;
- :func:`die_with_parent`: each direct child also gets PR_SET_PDEATHSIG, which covers the
  instant between its fork and the watchdog hearing of its session;
- :class:`Subreaper`: during a run amldist is a child subreaper (PR_SET_CHILD_SUBREAPER), so a
  process that leaves its session (``setsid``, a daemon) and loses its parent is adopted by
  amldist rather than by init, and is stopped with the rest (:func:`stop_adopted`, repeated
  until no new orphan appears);
- the **run marker**: every process amldist starts gets ``AMLDIST_RUN_MARKER=<unique token>`` in its
  environment, which every descendant inherits through fork, exec, ``setsid`` and daemonising
  alike. :func:`stop_marked` finds them all in ``/proc/<pid>/environ``, whatever session or parent
  they have now, and stops them until no new one appears; the watchdog does the same when amldist
  was killed. So a rank's ``setsid`` daemon, and a daemon's child re-parented after amldist listed
  the processes, do not survive the run. (A process that clears its environment before it execs,
  ``env -i``, or one that overwrites its environment in memory, escapes the marker; the nets above
  and below still hold it.)
- the **descendants**, structurally: the supervisor is a subreaper, so every process of the run,
  whatever its session or environment, stays its descendant (an orphan is re-parented to it, not to
  init). While the run goes, the supervisor lists its descendants (:func:`descendants`, from
  ``/proc/<pid>/task/<tid>/children``) every :data:`TRACK_SECONDS` and tells the watchdog each new one
  with its start time. When amldist dies, its orphans go to init and the tree is lost, so the
  watchdog stops what it was told of (same pid *and* start time: never a reused pid) and everything
  below those, frozen first (SIGSTOP) so that none can fork or exit meanwhile, then SIGTERM, the grace,
  SIGKILL (:func:`stop_trees`).

What still escapes when amldist itself is SIGKILLed (a normal end, a failure, a timeout, Ctrl-C and
``job cancel`` stop every descendant): a process that leaves the session, clears or overwrites the
marker and loses its parent all within the last :data:`TRACK_SECONDS` before amldist died (it was never
listed), or one that a process of the run starts and orphans while it is being stopped during the
watchdog's grace (it is re-parented to init in between two looks). Closing these needs the kernel to
hold the run's processes together whatever they do: a cgroup (``cgroup.kill``) or a PID namespace,
which need privileges amldist does not assume. A process that becomes another user (``su - other``,
``sudo -u``) can only be signalled by that user or root: run as an unprivileged user it survives.

Hand-written rather than psutil: psutil is not a dependency, and what is needed is a
``/proc`` scan and two ``prctl`` calls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

_PROC = "/proc"
RUN_MARKER = "AMLDIST_RUN_MARKER"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
TRACK_SECONDS = 0.25  # how often the supervisor tells the watchdog of its new descendants


def _stat_fields(pid: str | int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ... (None if gone)."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()  # comm may hold spaces and parentheses


def session_members(sessions: set[int]) -> set[int]:
    """Live processes whose session id is in ``sessions`` (Linux), else an empty set."""
    found: set[int] = set()
    if not sessions or not os.path.isdir(_PROC):
        return found
    for entry in os.listdir(_PROC):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields and len(fields) > 3 and fields[0] != "Z" and int(fields[3]) in sessions:
                found.add(int(entry))
    return found


def children_of(parent: int) -> set[int]:
    """The pids of ``parent``'s children, zombies included (they still need reaping); Linux, else empty."""
    found: set[int] = set()
    if not os.path.isdir(_PROC):
        return found
    for entry in os.listdir(_PROC):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields and len(fields) > 1 and int(fields[1]) == parent:
                found.add(int(entry))
    return found


def _children_files(pid: int) -> list[int] | None:
    """The children of every thread of ``pid`` (a child belongs to the thread that forked it); None when
    this kernel has no ``children`` files, [] when ``pid`` is gone."""
    try:
        threads = os.listdir(f"{_PROC}/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in threads:
        try:
            with open(f"{_PROC}/{pid}/task/{tid}/children", "rb") as fh:
                found.extend(int(child) for child in fh.read().split())
        except FileNotFoundError:
            if tid == str(pid) and os.path.isdir(f"{_PROC}/{pid}/task/{tid}"):
                return None  # the thread is there, its children file is not: no CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return found


def descendants(roots) -> set[int]:
    """Every live descendant of the pids in ``roots`` (not the roots themselves), zombies included; Linux."""
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        children = _children_files(pid)
        if children is None:  # no children files: one scan of every process's parent instead
            children = children_of(pid)
        for child in children:
            if child not in found:
                found.add(child)
                todo.append(child)
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


def stop_sessions(sessions: set[int], popens, grace: float, *, cut_short=lambda: False) -> None:
    """SIGTERM everything in ``sessions``, wait up to ``grace`` seconds, then SIGKILL what is left.

    ``cut_short()`` is asked while waiting: True (a second Ctrl-C) ends the grace at once.
    ``popens`` (the direct children) are reaped so that no zombie is left behind either.
    """
    if not sessions:
        return
    signal_sessions(sessions, signal.SIGTERM)
    deadline = time.monotonic() + max(grace, 0.0)
    while time.monotonic() < deadline and not cut_short():
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


def start_of(pid: int) -> int | None:
    """The start time of ``pid`` (``/proc/<pid>/stat`` field 22), None when gone or a zombie."""
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20 or fields[0] == "Z":
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def _freeze(roots: set[int]) -> set[int]:
    """SIGSTOP ``roots`` and everything below them, again until no new process appears (one that forked
    between a look and its stop is found below its now stopped parent); returns what was stopped."""
    frozen: set[int] = set()
    for _ in range(50):
        new = (set(roots) | descendants(set(roots) | frozen)) - frozen
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        frozen |= new
    return frozen


def stop_trees(roots: set[int], grace: float) -> None:
    """Stop ``roots`` and all their descendants (module docstring): frozen, SIGTERM (then SIGCONT, so that
    each can act on it), up to ``grace`` seconds while newcomers below them get SIGTERM too, then frozen
    again and SIGKILLed until none is left. Each pid is compared with its start time, never a reused one."""
    known = {pid: start for pid in _freeze(roots) if (start := start_of(pid)) is not None}
    _signal_all(known, signal.SIGTERM)
    _signal_all(known, signal.SIGCONT)
    deadline = time.monotonic() + max(grace, 0.0)
    while time.monotonic() < deadline:
        known = _still_alive(known)
        if not known:
            return
        for pid in descendants(known) - known.keys():
            if (start := start_of(pid)) is not None:
                known[pid] = start
                _signal_all((pid,), signal.SIGTERM)
        time.sleep(0.05)
    for _ in range(20):
        known = _still_alive(known)
        if not known:
            return
        known.update({pid: start for pid in _freeze(set(known)) if (start := start_of(pid)) is not None})
        _signal_all(known, signal.SIGKILL)
        time.sleep(0.05)


def _still_alive(known: dict) -> dict:
    return {pid: start for pid, start in known.items() if start_of(pid) == start}


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through libc; False where there is no prctl (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(option, value, 0, 0, 0) == 0


def die_with_parent(parent: int):
    """A ``preexec_fn`` that gives the child PR_SET_PDEATHSIG (SIGTERM), or None off Linux.

    libc is loaded here, in the parent: the child, between fork and exec, only calls it. A parent
    that died before the call is caught by comparing getppid() with ``parent``.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class Subreaper:
    """amldist as a child subreaper for the length of a run (Linux); see the module docstring.

    ``adopted()`` are the children amldist did not start itself: orphans of the run's processes.
    """

    def __init__(self, own_children=()):
        self.pid = os.getpid()
        self.before = children_of(self.pid)
        self.own = set(own_children)
        self.enabled = _prctl(PR_SET_CHILD_SUBREAPER, 1)

    def adopted(self) -> set[int]:
        return children_of(self.pid) - self.before - self.own

    def close(self) -> None:
        if self.enabled:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


def marked_processes(marker: str) -> set[int]:
    """Live processes (not zombies) whose environment holds ``RUN_MARKER=marker``; Linux, else empty."""
    needle = f"{RUN_MARKER}={marker}".encode()
    found: set[int] = set()
    if not marker or not os.path.isdir(_PROC):
        return found
    for entry in os.listdir(_PROC):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"{_PROC}/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        fields = _stat_fields(entry) if needle in environ.split(b"\0") else None
        if fields and fields[0] != "Z":
            found.add(int(entry))
    return found


def stop_marked(marker: str, grace: float, *, rounds: int = 20) -> None:
    """Stop every process carrying the run's marker: SIGTERM, up to ``grace`` seconds, then SIGKILL,
    again until none is left (a process may start another while it is stopped); at most ``rounds``."""
    pids = marked_processes(marker)
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + max(grace, 0.0)
    while pids and time.monotonic() < deadline:
        time.sleep(0.05)
        pids = marked_processes(marker)
    for _ in range(rounds):
        if not pids:
            return
        _signal_all(pids, signal.SIGKILL)
        time.sleep(0.05)
        pids = marked_processes(marker)


def _signal_all(pids, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_adopted(reaper: Subreaper, grace: float, *, rounds: int = 10) -> None:
    """Stop and reap the orphans ``reaper`` adopted, again until no new one appears (an orphan's own
    child is adopted once its parent is stopped); at most ``rounds`` times."""
    for _ in range(rounds):
        pids = reaper.adopted()
        if not pids:
            return
        _stop_and_reap(pids, grace)
        grace = 0.0  # the newcomers had their warning with the first round


def _stop_and_reap(pids: set[int], grace: float) -> None:
    """SIGTERM, up to ``grace`` seconds, SIGKILL, each reaped (they are amldist's children now)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            for pid in list(pids):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    pids.discard(pid)
            time.sleep(0.02)
        if not pids:
            return


class Watchdog:
    """The separate process that stops the run's sessions if amldist dies first (module docstring).

    ``watch(sid)`` after each start; ``close()`` at the normal end (the watchdog then exits
    without touching anything).
    """

    def __init__(self, grace: float, marker: str):
        read_end, self._pipe = os.pipe()  # both ends non-inheritable: no rank holds the pipe open
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), "--watch", str(max(grace, 0.0)), marker],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(read_end)

    def watch(self, session: int) -> None:
        os.write(self._pipe, f"{session}\n".encode())

    def track(self, pid: int, start: int) -> None:
        """A descendant of amldist (``start``: its start time), to stop if amldist dies."""
        os.write(self._pipe, f"p {pid} {start}\n".encode())

    def close(self) -> None:
        if self._pipe < 0:
            return
        try:
            os.write(self._pipe, b"done\n")
        except OSError:
            pass
        os.close(self._pipe)
        self._pipe = -1
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _watch(grace: float, marker: str) -> int:
    """The watchdog's side: read session ids until "done" (exit) or end of file (stop them all)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    sessions: set[int] = set()
    known: dict[int, int] = {}  # the descendants amldist listed -> their start times
    buffer = b""
    while True:
        chunk = os.read(0, 4096)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line == b"done":
                return 0
            if line.startswith(b"p "):
                _, pid, start = line.split()
                known[int(pid)] = int(start)
            else:
                sessions.add(int(line))
    roots = set(_still_alive(known)) | session_members(sessions) | marked_processes(marker)
    stop_trees(roots, grace)  # every listed descendant, whatever its session or environment, and all below
    stop_sessions(sessions, [], 0)  # anything that joined a session or took the marker meanwhile
    stop_marked(marker, 0)
    return 0


if __name__ == "__main__":  # the watchdog process (see Watchdog); run with -I -S, standard library only
    sys.exit(_watch(float(sys.argv[2]), sys.argv[3]))
