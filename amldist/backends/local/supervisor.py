"""Running a local plan: the run folder, the processes, and how a run ends.

How a run ends, and the exit code of ``amldist submit --local``:

- every process exits 0: exit 0;
- a process exits non-zero: the others get ``grace_seconds`` to finish on their own, then
  SIGTERM, then (``grace_seconds`` later) SIGKILL; the failing rank and the tail of its log
  are printed; exit 1;
- the job runs past ``limits.timeout``: everything is stopped the same way at once; exit 1;
- Ctrl-C, SIGTERM or SIGHUP (the terminal closed, ssh dropped) to amldist: everything is stopped
  at once (SIGTERM, the grace, SIGKILL; a second Ctrl-C skips the grace); exit 128 + the signal
  (130, 143, 129). During the code copy the partial run folder is removed;
- amldist itself killed (SIGKILL) or crashing: its watchdog stops every process of the run
  (:mod:`amldist.backends.local.process_groups`).

Processes left behind by a finished command (``sleep 100 &``) are stopped too, as the end of
an Azure ML job ends its container. On a terminal a status line shows the processes'
states; ``--stream`` also copies every log line to the terminal, prefixed by its rank.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

from amldist.backends.base import RETRIES_CANCELED_FILE
from amldist.backends.local.fault_drill import FaultDrill
from amldist.backends.local.plan import LocalPlan, with_ports
from amldist.engine.launchers import free_ports
from amldist.engine.log_stream import LogFollower
from amldist.backends.local.process_groups import (RUN_MARKER, TRACK_SECONDS, Subreaper, Watchdog, descendants,
                                                   die_with_parent, start_of, stop_adopted, stop_marked, stop_sessions)
from amldist.backends.local.run_console import CopyProgress, end_lines
from amldist.engine.run_folder import fill_job_and_code, new_run_folder, python_wrappers
from amldist.engine.state_files import marker_present
from amldist.backends.local.run_state import CANCEL_FILE, RunState, record_end, request_cancel

TAIL_LINES = 20
POLL_SECONDS = 0.02
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Interrupted(BaseException):
    """A stop signal while the run folder is being filled (no process runs yet)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def prepare_folder(p: LocalPlan) -> None:
    """Create the run folder: job.yml, the code snapshot, outputs/ and user_logs/ (see
    :func:`amldist.engine.run_folder.new_run_folder`)."""
    new_run_folder(p.run_dir, f"a local run named {p.job_name!r} already exists",
                   "pass --name NEW, or leave the name out", lambda: _fill_folder(p))


def _fill_folder(p: LocalPlan) -> None:
    if p.python:
        python_wrappers(p)
    progress = CopyProgress(os.path.relpath(p.code_source), sys.stderr) if p.code_source else None
    fill_job_and_code(p, progress)  # a large folder's copy shows its progress
    if progress is not None:
        progress.done()
    os.makedirs(p.log_dir)


class Supervisor:
    """Starts the plan's processes and watches them until the run ends."""

    def __init__(self, p: LocalPlan, *, grace: float, status: bool, stream: bool, out=None):
        self.plan = p
        self.grace = grace
        self.status = status
        self.stream = stream
        self.out = out or sys.stdout
        self.popens: list[subprocess.Popen] = []
        self.sessions: set[int] = set()
        self.stop_signal: int | None = None
        self.follower = LogFollower(self.write)  # --stream: each log line once, in constant memory
        self.marker = f"{p.job_name}.{os.getpid()}.{os.urandom(6).hex()}"  # RUN_MARKER in every process
        self.started = time.monotonic()
        self._status_shown = False
        self.running = False  # before start(): a stop signal interrupts the preparation instead
        self.watchdog: Watchdog | None = None
        self.state = None  # run_state.RunState: the run's status.json, set by launch()
        self.reaper: Subreaper | None = None
        self.tracked: dict[int, int] = {}  # descendants the watchdog knows of -> their start times
        self._tracked_at = 0.0
        self.drill: FaultDrill | None = None  # --inject: the faults acted out on this run's processes

    # -- starting -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the watchdog, become a subreaper, then start every planned process."""
        self.watchdog = Watchdog(self.grace, self.marker)
        self.reaper = Subreaper(own_children=(self.watchdog.proc.pid,))
        preexec = die_with_parent(os.getpid())
        for spec in self.plan.processes:
            if self.stop_signal is not None:
                break
            with open(spec.log_path, "wb") as log:
                popen = subprocess.Popen(
                    spec.argv, env={**spec.env, RUN_MARKER: self.marker}, cwd=spec.cwd, stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True, preexec_fn=preexec,
                )
            self.watchdog.watch(popen.pid)
            self.popens.append(popen)
            self.sessions.add(popen.pid)
            self.reaper.own.add(popen.pid)
        if self.plan.faults and self.stop_signal is None:
            self.drill = FaultDrill(self.plan.faults, self.plan.processes, self.popens)
            self.drill.start()

    # -- watching -------------------------------------------------------------------------
    def track(self) -> None:
        """Tell the watchdog of every new descendant (every TRACK_SECONDS): a subreaper's descendants are
        every process of the run, whatever its session or environment (process_groups' docstring)."""
        now = time.monotonic()
        if self.watchdog is None or now - self._tracked_at < TRACK_SECONDS:
            return
        self._tracked_at = now
        for pid in descendants((os.getpid(),)) - {self.watchdog.proc.pid}:
            start = start_of(pid)
            if start is not None and self.tracked.get(pid) != start:
                self.tracked[pid] = start
                self.watchdog.track(pid, start)

    def watch(self) -> tuple[str, int | None]:
        """Wait for the end; returns (outcome, index of the failing process or None).

        Outcomes: "ok", "failed", "timeout", "signal".
        """
        timeout = self.plan.timeout
        last_status = 0.0
        while True:
            if self.stop_signal is not None:
                return "signal", None
            codes = [p.poll() for p in self.popens]
            if self.state is not None:
                self.state.update(codes)
            failed = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
            if failed is not None:
                return "failed", failed
            if all(c == 0 for c in codes):
                return "ok", None
            if timeout and time.monotonic() - self.started > timeout:
                return "timeout", None
            now = time.monotonic()
            self.track()
            if self.stream:
                self.pump()
            if self.status and now - last_status >= 0.5:
                self.show_status(codes)
                last_status = now
            time.sleep(POLL_SECONDS)

    def wait_others(self, seconds: float) -> None:
        """Give the processes still running up to ``seconds`` to end on their own."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.stop_signal is None:
            if all(p.poll() is not None for p in self.popens):
                return
            self.track()
            if self.stream:
                self.pump()
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        """Stop every process of the run (a second Ctrl-C meanwhile cuts the grace short), then the
        orphans amldist adopted, then tell the watchdog all is done."""
        if self.drill is not None:  # no fault fires during the stop; a stopped (hung) rank can take SIGTERM
            self.drill.close()
        stop_sessions(self.sessions, self.popens, self.grace, cut_short=lambda: self.grace == 0)
        stop_marked(self.marker, self.grace)  # daemons that left the sessions (setsid), and their children
        if self.reaper is not None:
            stop_adopted(self.reaper, self.grace)
            self.reaper.close()
        stop_marked(self.marker, 0)  # anything a stopping process started meanwhile
        if self.watchdog is not None:
            self.watchdog.close()

    # -- output ---------------------------------------------------------------------------
    def show_status(self, codes) -> None:
        running = sum(c is None for c in codes)
        done = sum(c == 0 for c in codes)
        elapsed = time.monotonic() - self.started
        self.write(f"\r\x1b[K[amldist] {self.plan.job_name}: {running} running, {done} done, {elapsed:.0f}s")
        self._status_shown = True

    def clear_status(self) -> None:
        if self._status_shown:
            self.write("\r\x1b[K")
            self._status_shown = False

    def write(self, text: str) -> None:
        """Write to the terminal; a terminal that is gone (SIGHUP: EIO) must not stop the stopping."""
        if not text.startswith("\r"):
            self.clear_status()  # a log line replaces the status line
        try:
            self.out.write(text)
            self.out.flush()
        except OSError:
            pass

    def pump(self, final: bool = False) -> None:
        """Copy new complete lines of every rank's log to the terminal (``--stream``)."""
        for spec in self.plan.ranks:
            self.follower.copy(spec.log_path, f"[{spec.label}] ", final=final)

    def install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return {}

        def handler(signum, frame):
            if not self.running:
                raise Interrupted(signum)
            if self.stop_signal is not None:  # a second Ctrl-C: no more patience
                self.grace = 0
            self.stop_signal = signum

        return {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}


def launch(p: LocalPlan, *, out=None, err=None) -> int:
    """Create the run folder, run the plan, report; returns the exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if p.ports:  # chosen now, not when planned: free a moment before the processes start
        p = with_ports(p, free_ports(p.ports))
    status = out.isatty() if p.status_line is None else p.status_line
    sup = Supervisor(p, grace=p.grace_seconds, status=status, stream=p.stream, out=out)
    previous = sup.install_signals()
    try:
        prepare_folder(p)
    except Interrupted as stop:
        _restore(previous)
        print(f"error: job {p.job_name} stopped by {signal.Signals(stop.signum).name} before it started; "
              "the partial run folder was removed", file=err)
        return 128 + stop.signum
    except BaseException:
        _restore(previous)
        raise
    sup.running = True  # from here on a stop signal ends the run the normal way
    for note in p.notes:
        print(f"note: {note}", file=err)
    for warning in p.warnings:  # values Azure ML's shell would read differently
        print(f"warning: {warning}", file=err)
    rel_run = os.path.relpath(p.run_dir)
    # sup.write: a closed stdout (`| head` that quit) must not stop the run before it starts
    sup.write(f"job {p.job_name}: {len(p.ranks)} process(es), python {p.python}, run folder {rel_run}\n")
    busy = _hold_port(p.busy_port)
    try:
        sup.state = RunState(p)
        if retries_canceled(p):  # `amldist job cancel` came while this attempt was made: it starts nothing
            request_cancel(p.run_dir)
            sup.stop_signal = signal.SIGTERM
        sup.start()
        sup.state.started(sup.popens)
        outcome, failed = sup.watch()
        if outcome == "failed":
            sup.wait_others(p.grace_seconds)
    finally:
        sup.stop()  # every process of the run, also after an exception in the loop
        _restore(previous)
        if busy is not None:
            busy.close()
        if p.stream:
            sup.pump(final=True)
        sup.clear_status()
    record_end(sup, outcome, failed)
    explained = _explain(sup, outcome)
    try:
        return _report(sup, outcome, failed, out, err, explained)
    except OSError:  # the terminal is gone (SIGHUP, `| head`): the run's own outcome still decides the code
        return 0 if outcome == "ok" else 128 + sup.stop_signal if sup.stop_signal else 1


def retries_canceled(p: LocalPlan) -> bool:
    """Whether ``amldist job cancel`` stopped the retries this attempt (a later one) belongs to: the marker in
    the first attempt's run folder (:meth:`amldist.backends.base.Backend.cancel_retries`). Read once status.json
    says this attempt runs, in this process: the retry loop read it before the attempt was made, so a cancel
    that came since is seen here, and one that comes later finds the attempt running and stops it."""
    first = (p.attempt or {}).get("of")
    if not first or first == p.job_name:
        return False
    return marker_present(os.path.join(os.path.dirname(p.run_dir), first), RETRIES_CANCELED_FILE)


def say(text: str, stream) -> None:
    """Print a line for the user; a stream that is gone (``| head`` that quit, a closed terminal) must not
    stop a run that is starting or change the exit code of one that ended: the run's files say it all."""
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):
        pass


def _restore(previous: dict) -> None:
    for sig, old in previous.items():
        signal.signal(sig, old)


def _explain(sup: Supervisor, outcome: str):
    """The plan's explainer on a failed run: (rank label, one line), recorded as status.json's error so that
    `amldist job show` says what the error line says; None when there is none or it cannot tell."""
    if outcome != "failed" or sup.plan.explain is None or sup.state is None:
        return None
    try:
        explained = sup.plan.explain(sup.plan.run_dir)
    except Exception:  # the diagnosis is a courtesy: the run's own report stands without it
        return None
    if explained is not None:
        sup.state.amend_error(f"{explained[0]}: {explained[1]}")
    return explained


def _report(sup: Supervisor, outcome: str, failed: int | None, out, err, explained=None) -> int:
    p = sup.plan
    logs = os.path.relpath(p.log_dir)
    if outcome == "ok":  # the status and the run's one duration are in the summary printed before
        rank0 = p.ranks[0].log_path if p.ranks else None
        print("\n".join(end_lines(p.job_name, p.run_dir, rank0, tail=_tail(rank0) if rank0 else "")), file=out)
        return 0
    if outcome == "signal":
        name = signal.Signals(sup.stop_signal).name
        if os.path.exists(os.path.join(p.run_dir, CANCEL_FILE)):  # `amldist job cancel` from another terminal
            print(f"job {p.job_name} was canceled (amldist job cancel); every process was stopped; logs in {logs}",
                  file=err)
        else:
            print(f"error: job {p.job_name} stopped by {name}; every process was stopped; logs in {logs}", file=err)
        return 128 + sup.stop_signal
    if outcome == "timeout":
        print(f"error: job {p.job_name} ran past limits.timeout ({p.timeout}s) and was stopped; logs in {logs}",
              file=err)
        return 1
    proc = p.processes[failed]
    code = sup.popens[failed].returncode
    culprit = _failing_rank(p, proc) if proc.label == "mpirun" else proc
    named = next((r for r in p.ranks if explained is not None and r.label == explained[0]), None)
    if named is not None:  # the rank the diagnosis names, which is not always the first process that exited
        culprit = named
        print(f"error: {named.label} of job {p.job_name}: {explained[1]}; the other processes were stopped; "
              f"logs in {logs}", file=err)
    else:
        print(f"error: {culprit.label} of job {p.job_name} exited with code {code}; the other processes were "
              f"stopped; logs in {logs}", file=err)
    for spec in [culprit] + ([proc] if proc is not culprit else []):
        tail = _tail(spec.log_path)
        if tail:
            print(f"--- last lines of {os.path.relpath(spec.log_path)} ---", file=err)
            print(tail, file=err)
    print("\n".join(end_lines(p.job_name, p.run_dir, None, failed_rank=culprit.rank)), file=err)
    return 1


def _failing_rank(p: LocalPlan, mpirun_spec):
    """The rank mpirun reports as failed (its message names it), else the mpirun log itself."""
    text = _tail(mpirun_spec.log_path, 200)
    # Open MPI 5: "Process name: [prterun-host-123@1,2]" (the rank after the comma); older: "rank 2".
    match = re.search(r"Process name:\s*\[[^\]]*,(\d+)\]", text) or re.search(r"rank\s+(\d+)", text, re.IGNORECASE)
    if match and int(match.group(1)) < len(p.ranks):
        return p.ranks[int(match.group(1))]
    return mpirun_spec


def _tail(path: str, lines: int = TAIL_LINES) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _hold_port(port: int | None):
    """Keep AZ_BATCH_MASTER_NODE's port bound during the run, as Azure Batch holds its own."""
    if not port:
        return None
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        return None  # someone else holds it: busy either way
    return s
