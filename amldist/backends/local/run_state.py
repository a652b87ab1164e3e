"""A local run's ``status.json``: what ``amldist job list/show/logs/cancel`` read while and after it runs.

The supervisor (:mod:`amldist.backends.local.supervisor`) keeps one :class:`RunState` per job and
calls it at three points: :meth:`RunState.started` once the processes run, :meth:`RunState.update`
on every poll (it writes only when a process has exited), :meth:`RunState.finished` at the end. A
pipeline's runner keeps one :class:`PipelineState` the same way, its steps in the same file. Every
write replaces the file in one step (a temporary file, then a rename) inside the run folder opened
once (a descriptor, not a path), so a reader never sees half a file and nothing is ever written
through a link someone planted in the run folder (the rename replaces the link itself).

The file holds the supervisor's pid and its start time; the supervisor also keeps its run folder
open while it runs, so that ``cancel`` signals only a process that proves to be that run's
(:func:`amldist.backends.local.proc.belongs_to_run`) and ``show`` can tell a run whose supervisor
died (SIGKILL, a crash, a reboot) from one still running. The file is read back as data, never as
authority: :mod:`amldist.backends.local.records` reads it bounded, regular files only, typed.
Statuses use Azure ML's words (:mod:`amldist.backends.base`): ``NotStarted``, ``Running``,
``Completed``, ``Failed``, ``Canceled``. ``amldist job cancel`` leaves a ``cancel_requested`` file in
the run folder before it sends SIGTERM: the supervisor then records ``Canceled`` by
``amldist job cancel`` rather than a stop by a signal. Any stop by a signal (Ctrl-C too) is a
cancellation, as a job stopped by its user is ``Canceled`` on Azure ML; ``stopped_by`` says which.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

from amldist.backends.base import CANCELED, COMPLETED, FAILED, NOT_STARTED, RUNNING, TERMINAL, signal_name
from amldist.backends.local import proc
from amldist.backends.local.state_retry import RetryingWrite
from amldist.engine import state_files

STATUS_FILE = "status.json"
CANCEL_FILE = "cancel_requested"
FORMAT_VERSION = 1
__all__ = ["CANCELED", "COMPLETED", "FAILED", "NOT_STARTED", "RUNNING", "TERMINAL"]
# The step runner's own words for a step (summary.json) -> Azure ML's, as status.json records them.
STEP_STATUS = {"waiting": NOT_STARTED, "not started": NOT_STARTED, "skipped": NOT_STARTED, "running": RUNNING,
               "completed": COMPLETED, "failed": FAILED, "stopped": CANCELED}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _open_folder(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def write_state(folder: str | int, data: dict, name: str = STATUS_FILE) -> None:
    """Replace ``folder/name`` with ``data`` in one step, never through a link
    (:func:`amldist.engine.state_files.write_state`)."""
    state_files.write_state(folder, data, name)


def request_cancel(run_dir: str) -> None:
    """Leave the ``cancel_requested`` marker; never through an existing file or link (one already there
    is a request already made)."""
    state_files.create_marker(run_dir, CANCEL_FILE, f"{now_iso()} pid {os.getpid()}\n")


def cancel_requested(run_dir: str) -> bool:
    """Whether ``amldist job cancel`` left its marker (a regular file, not something planted)."""
    return state_files.marker_present(run_dir, CANCEL_FILE)


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
            "faults": [{**f.to_json(), "fired_at": None} for f in getattr(plan, "faults", ())],
            "attempt": getattr(plan, "attempt", None),
            "code_source": plan.code_source,  # where the code was copied from: `job diagnose` points there
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
        canceled_by_command = cancel_requested(self.run_dir)
        if outcome == "ok":
            status = COMPLETED
        elif outcome == "signal" or canceled_by_command:
            status = CANCELED
            self.data["stopped_by"] = "amldist job cancel" if canceled_by_command else signal_name(stop_signal)
        else:
            status = FAILED
            self.data["error"] = (f"ran past limits.timeout ({timeout}s)" if outcome == "timeout"
                                  else f"{failed_label or 'a process'} exited with a non-zero code")
        self._end(status)
        return self.data


    def amend_error(self, text: str) -> None:
        """After the end: the diagnosed cause replaces the supervisor's "a process exited" error."""
        self.data["error"] = text
        self._write()


class PipelineState(_StateFile):
    """The status.json of one local pipeline run, kept by its step runner
    (:mod:`amldist.backends.local.pipeline_run`): the same fields as a job's, steps in place of ranks."""

    def __init__(self, pp, pid: int | None = None):
        super().__init__(pp.run_dir, pid)
        self.data = {
            **self._owner(),
            "name": pp.name,
            "kind": "pipeline",
            "status": RUNNING,
            "steps": [{"name": s.name, "status": NOT_STARTED, "exit_code": None, "start_time": None,
                       "end_time": None, "duration_seconds": None, "needs": list(s.needs),
                       "run_dir": s.plan.run_dir, "note": None} for s in pp.steps],
            "outputs": {name: {"path": path, "type": None} for name, path in pp.outputs.items()},
            "logs": None,
        }
        self._clocks: dict[str, float] = {}
        self._write()

    def _step(self, name: str) -> dict:
        return next(s for s in self.data["steps"] if s["name"] == name)

    def step_started(self, name: str) -> None:
        self._clocks[name] = time.monotonic()
        self._step(name).update(status=RUNNING, start_time=now_iso())
        self._write()

    def step_ended(self, name: str, status: str, exit_code: int | None) -> None:
        """``status`` in Azure ML's words; ``exit_code`` the step's failing process's own code."""
        began = self._clocks.get(name)
        self._step(name).update(status=status, exit_code=exit_code, end_time=now_iso(),
                                duration_seconds=None if began is None else round(time.monotonic() - began, 3))
        self._write()

    def step_not_started(self, name: str, note: str) -> None:
        self._step(name).update(status=NOT_STARTED, note=note)
        self._write()

    def finished(self, *, stop_signal: int | None = None) -> dict:
        """Record the pipeline's end from its steps: Completed when all completed, Canceled when a signal
        (or ``amldist job cancel``) stopped it, else Failed naming the failed steps."""
        statuses = [s["status"] for s in self.data["steps"]]
        if cancel_requested(self.run_dir) or stop_signal is not None:
            status = CANCELED
            self.data["stopped_by"] = ("amldist job cancel" if cancel_requested(self.run_dir)
                                       else signal_name(stop_signal))
        elif all(s == COMPLETED for s in statuses):
            status = COMPLETED
        else:
            status = FAILED
            failed = [s["name"] for s in self.data["steps"] if s["status"] == FAILED]
            self.data["error"] = f"step(s) {', '.join(failed) or '?'} failed"
        self._end(status)
        return self.data


def record_end(sup, outcome: str, failed: int | None) -> dict | None:
    """The supervisor's last word: record the end in status.json, then print where everything is
    (status, duration, each rank's exit code and log, the outputs), as ``az ml job create`` ends
    with the job's state. Returns the recorded state (None when the run had no state yet)."""
    state: RunState | None = getattr(sup, "state", None)
    if state is None:
        return None
    plan = sup.plan
    if sup.drill is not None:  # what the drill did, in place of what it planned
        fired = {f["text"]: f for f in sup.drill.fired}
        state.data["faults"] = [fired.get(f["text"], f) for f in state.data["faults"]]
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
