"""A local run's ``status.json``: what ``amldist job show/list/cancel`` read while and after it runs.

The supervisor (:mod:`amldist.backends.local.supervisor`) keeps one :class:`RunState` per run and
calls it at three points: :meth:`RunState.started` once the processes run, :meth:`RunState.update`
on every poll (it writes only when a process has exited), :meth:`RunState.finished` at the end.
Every write replaces the file in one step (a temporary file, then ``os.replace``), so a reader
never sees half a file.

The file holds the supervisor's pid and its start time (``/proc/<pid>/stat``, field 22), so
that ``cancel`` signals only that process and ``show`` can tell a run whose supervisor died
(SIGKILL, a crash, a reboot) from one still running. Statuses use Azure ML's words:
``Running``, ``Completed``, ``Failed``, ``Canceled``. ``amldist job cancel`` leaves a
``cancel_requested`` file in the run folder before it sends SIGTERM: the supervisor then records
``Canceled`` rather than a stop by a signal. Any stop by a signal (Ctrl-C too) is a
cancellation, as a job stopped by its user is ``Canceled`` on Azure ML; ``stopped_by`` says which.
"""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import datetime, timezone

from amldist.backends.base import CANCELED, COMPLETED, FAILED, NOT_STARTED, RUNNING, TERMINAL
from amldist.backends.local import proc
from amldist.backends.local.state_retry import RetryingWrite

STATUS_FILE = "status.json"
CANCEL_FILE = "cancel_requested"
RUNNING, COMPLETED, FAILED, CANCELED = "Running", "Completed", "Failed", "Canceled"
TERMINAL = (COMPLETED, FAILED, CANCELED)
FORMAT_VERSION = 1


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None
    when the process is gone or is a zombie. A pid reused by another process has another start time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == "Z":
        return None
    return int(fields[19])  # fields after the command name start at field 3: 22 - 3


def write_atomically(path: str, data: dict) -> None:
    """Replace ``path`` with ``data`` as JSON in one step (readers see the old or the new file)."""
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def read_state(run_dir: str) -> dict | None:
    """The run's status.json, or None when it has none (a run from before status files, or one
    being created)."""
    try:
        with open(os.path.join(run_dir, STATUS_FILE), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def supervisor_alive(state: dict) -> bool:
    """Whether the supervisor named in ``state`` still runs (same pid *and* same start time)."""
    pid, started = state.get("pid"), state.get("pid_start_time")
    if not isinstance(pid, int):
        return False
    current = process_start_time(pid)
    return current is not None and (started is None or current == started)


def effective(state: dict) -> dict:
    """``state`` as a reader should see it: a ``Running`` run whose supervisor is gone is
    ``Failed`` (nothing will ever record its end)."""
    if state.get("status") == RUNNING and not supervisor_alive(state):
        state = {**state, "status": FAILED,
                 "error": "amldist stopped without recording the end of the run (killed or crashed)"}
    return state


def signal_name(signum: int | None) -> str | None:
    if signum is None:
        return None
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_code_text(code: int | None) -> str:
    """``0``, ``3``, ``-15 (SIGTERM)``, or ``-`` while running."""
    if code is None:
        return "-"
    return f"{code} ({signal_name(-code)})" if code < 0 else str(code)


class _StateFile:
    """What a job's and a pipeline's state share: the run folder held open, the owner's pid and start
    time, one safe write."""

    def __init__(self, run_dir: str, pid: int | None = None):
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, STATUS_FILE)
        self.started_clock = time.monotonic()
        self.dir_fd: int | None = _open_folder(run_dir)  # held while the run runs: the proof it is ours
        self.pid = os.getpid() if pid is None else pid

    def _owner(self) -> dict:
        return {"format": FORMAT_VERSION, "pid": self.pid, "pid_start_time": proc.start_time(self.pid),
                "start_time": now_iso(), "end_time": None, "duration_seconds": None, "run_dir": self.run_dir,
                "stopped_by": None, "error": None}

    def _end(self, status: str) -> None:
        self.data["status"] = status
        self.data["end_time"] = now_iso()
        self.data["duration_seconds"] = round(time.monotonic() - self.started_clock, 3)
        self._write()
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None

    def _write(self) -> None:
        """A failed write (disk full for a moment) is retried and reported, never fatal (state_retry)."""
        if not hasattr(self, "_retry"):
            self._retry = RetryingWrite(os.path.join(os.path.relpath(self.run_dir), STATUS_FILE))
        self._retry(lambda: write_state(self.run_dir if self.dir_fd is None else self.dir_fd, self.data))


class RunState(_StateFile):
    """The status.json of one local job run, kept by its supervisor."""

    def __init__(self, plan, pid: int | None = None):
        super().__init__(plan.run_dir, pid)
        launcher = plan.processes is not plan.ranks  # one mpirun starts the ranks
        self.data = {
            **self._owner(),
            "name": plan.job_name,
            "kind": "job",
            "status": RUNNING,
            "distribution": plan.kind,
            "ranks": [{"label": r.label, "rank": r.rank, "node": r.node, "log": r.log_path, "pid": None,
                       "exit_code": None} for r in plan.ranks],
            "launcher": ({"label": plan.processes[0].label, "log": plan.processes[0].log_path, "pid": None,
                          "exit_code": None} if launcher else None),
            "outputs": {name: {"path": path, "type": kind} for name, (path, kind) in plan.outputs.items()},
            "logs": plan.log_dir,
            "stopped_by": None,
            "error": None,
        }
        self._codes: list = []
        self._write()

    @property
    def _processes(self) -> list[dict]:
        return [self.data["launcher"]] if self.data["launcher"] else self.data["ranks"]

    def started(self, popens) -> None:
        for entry, popen in zip(self._processes, popens):
            entry["pid"] = popen.pid
        self._write()

    def update(self, codes) -> None:
        """Record the exit codes of processes that ended since the last call (``codes``: one per
        process started, None while it runs)."""
        codes = list(codes)
        if codes == self._codes and not getattr(getattr(self, "_retry", None), "unsaved", False):
            return  # nothing new, and the last state reached the disk
        self._codes = codes
        for entry, code in zip(self._processes, codes):
            if code is not None and entry.get("exit_code") is None:
                entry["exit_time"] = round(time.time(), 3)  # when it was seen to end: `job diagnose` orders by it
            entry["exit_code"] = code
        if self.data["launcher"] and codes and codes[0] == 0:  # mpirun exits 0 only when every rank did
            for entry in self.data["ranks"]:
                entry["exit_code"] = 0
        self._write()

    def finished(self, outcome: str, codes, *, stop_signal: int | None = None, failed_label: str | None = None,
                 timeout: int | None = None) -> dict:
        """Record the end: ``outcome`` is the supervisor's ("ok", "failed", "timeout", "signal")."""
        self._codes = []
        self.update(codes)
        canceled_by_command = os.path.exists(os.path.join(self.run_dir, CANCEL_FILE))
        if outcome == "ok":
            status = COMPLETED
        elif outcome == "signal" or canceled_by_command:
            status = CANCELED
            self.data["stopped_by"] = "amldist job cancel" if canceled_by_command else signal_name(stop_signal)
        else:
            status = FAILED
            self.data["error"] = (f"ran past limits.timeout ({timeout}s)" if outcome == "timeout"
                                  else f"{failed_label or 'a process'} exited with a non-zero code")
        self.data["status"] = status
        self.data["end_time"] = now_iso()
        self.data["duration_seconds"] = round(time.monotonic() - self.started_clock, 3)
        self._write()
        return self.data

    def _write(self) -> None:
        try:
            write_atomically(self.path, self.data)
        except OSError:  # the run folder vanished or the disk is full: the run itself goes on
            pass


def record_end(sup, outcome: str, failed: int | None) -> dict | None:
    """The supervisor's last word: record the end in status.json, then print where everything is
    (status, duration, each rank's exit code and log, the outputs), as ``az ml job create`` ends
    with the job's state. Returns the recorded state (None when the run had no state yet)."""
    state: RunState | None = getattr(sup, "state", None)
    if state is None:
        return None
    plan = sup.plan
    data = state.finished(outcome, [p.returncode for p in sup.popens], stop_signal=sup.stop_signal,
                          failed_label=plan.processes[failed].label if failed is not None else None,
                          timeout=plan.timeout)
    try:
        sup.out.write("".join(line + "\n" for line in summary_lines(data)))
        sup.out.flush()
    except (OSError, ValueError):  # the terminal is gone (SIGHUP): status.json has it all
        pass
    return data


def summary_lines(data: dict, *, cwd: str | None = None) -> list[str]:
    """Status, duration, per-rank exit codes and logs, outputs: what a run left and where."""
    rel = lambda path: os.path.relpath(path, cwd or os.getcwd())
    duration = data.get("duration_seconds")
    lines = [f"status: {data['status']}" + (f" after {duration:.1f}s" if isinstance(duration, (int, float)) else "")
             + (f" (stopped by {data['stopped_by']})" if data.get("stopped_by") else "")]
    for entry in data.get("ranks", []):
        lines.append(f"  {entry['label']} (node {entry['node']}): exit {exit_code_text(entry['exit_code'])}, "
                     f"log {rel(entry['log'])}")
    if data.get("launcher"):
        entry = data["launcher"]
        lines.append(f"  {entry['label']}: exit {exit_code_text(entry['exit_code'])}, log {rel(entry['log'])}")
    for name, output in (data.get("outputs") or {}).items():
        lines.append(f"  output {name}: {rel(output['path'])}")
    return lines
