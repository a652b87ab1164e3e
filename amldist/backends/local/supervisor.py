"""Running a local plan: the run folder, the processes, and how a run ends.

How a run ends, and the exit code of ``amldist submit --local``:

- every process exits 0: exit 0;
- a process exits non-zero: the others get ``grace_seconds`` to finish on their own, then
  SIGTERM, then (``grace_seconds`` later) SIGKILL; the failing rank and the tail of its log
  are printed; exit 1;
- the job runs past ``limits.timeout``: everything is stopped the same way at once; exit 1;
- Ctrl-C or SIGTERM to amldist: everything is stopped at once; exit 130 (143 for SIGTERM).

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

from amldist.backends.local.plan import LocalPlan
from amldist.backends.local.process_groups import stop_sessions
from amldist.backends.local.code_copy import copy_code
from amldist.backends.runtime_bundle import add_runtime
from amldist.errors import UserError

TAIL_LINES = 20
POLL_SECONDS = 0.02


def prepare_folder(p: LocalPlan) -> None:
    """Create the run folder: job.yml, the code snapshot, outputs/ and user_logs/."""
    try:
        os.makedirs(os.path.dirname(p.run_dir), exist_ok=True)
        os.mkdir(p.run_dir)  # fails if another run took the name meanwhile: never reuse a folder
    except FileExistsError:
        raise UserError(f"a local run named {p.job_name!r} already exists",
                        hint="pass --name NEW, or leave the name out") from None
    with open(os.path.join(p.run_dir, "job.yml"), "w", encoding="utf-8") as fh:
        fh.write(p.job_yaml)
    if p.code_source:
        copy_code(p.code_source, p.code_dir, skip=(os.path.dirname(p.run_dir),))
    else:
        os.makedirs(p.code_dir)
    if p.add_runtime:
        add_runtime(p.code_dir)
    for path, out_type in p.outputs.values():
        os.makedirs(os.path.dirname(path) if out_type == "uri_file" else path, exist_ok=True)
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
        self.offsets: dict[str, int] = {}
        self.started = time.monotonic()
        self._status_shown = False

    # -- starting -------------------------------------------------------------------------
    def start(self) -> None:
        for spec in self.plan.processes:
            with open(spec.log_path, "wb") as log:
                popen = subprocess.Popen(
                    spec.argv, env=spec.env, cwd=spec.cwd, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                )
            self.popens.append(popen)
            self.sessions.add(popen.pid)

    # -- watching -------------------------------------------------------------------------
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
            failed = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
            if failed is not None:
                return "failed", failed
            if all(c == 0 for c in codes):
                return "ok", None
            if timeout and time.monotonic() - self.started > timeout:
                return "timeout", None
            now = time.monotonic()
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
            if self.stream:
                self.pump()
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        stop_sessions(self.sessions, self.popens, self.grace)

    # -- output ---------------------------------------------------------------------------
    def show_status(self, codes) -> None:
        running = sum(c is None for c in codes)
        done = sum(c == 0 for c in codes)
        elapsed = time.monotonic() - self.started
        self.out.write(f"\r\x1b[K[amldist] {self.plan.job_name}: {running} running, {done} done, "
                       f"{elapsed:.0f}s")
        self.out.flush()
        self._status_shown = True

    def clear_status(self) -> None:
        if self._status_shown:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self._status_shown = False

    def pump(self, final: bool = False) -> None:
        """Copy new complete lines of every rank's log to the terminal (``--stream``)."""
        for spec in self.plan.ranks:
            offset = self.offsets.get(spec.log_path, 0)
            try:
                with open(spec.log_path, "rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except OSError:
                continue
            if not final:
                data = data[: data.rfind(b"\n") + 1]
            if not data:
                continue
            self.offsets[spec.log_path] = offset + len(data)
            self.clear_status()
            for line in data.decode("utf-8", "replace").splitlines():
                self.out.write(f"[{spec.label}] {line}\n")
            self.out.flush()

    def install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return {}

        def handler(signum, frame):
            if self.stop_signal is not None:  # a second Ctrl-C: no more patience
                self.grace = 0
            self.stop_signal = signum

        return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def launch(p: LocalPlan, *, out=None, err=None) -> int:
    """Create the run folder, run the plan, report; returns the exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    prepare_folder(p)
    for note in p.notes:
        print(f"note: {note}", file=err)
    rel_run = os.path.relpath(p.run_dir)
    print(f"job {p.job_name}: {len(p.ranks)} process(es), run folder {rel_run}", file=out, flush=True)
    status = out.isatty() if p.status_line is None else p.status_line
    sup = Supervisor(p, grace=p.grace_seconds, status=status, stream=p.stream, out=out)
    busy = _hold_port(p.busy_port)
    previous = sup.install_signals()
    try:
        sup.start()
        outcome, failed = sup.watch()
        if outcome == "failed":
            sup.wait_others(p.grace_seconds)
    finally:
        sup.stop()  # every process of the run, also after an exception in the loop
        for sig, old in previous.items():
            signal.signal(sig, old)
        if busy is not None:
            busy.close()
        if p.stream:
            sup.pump(final=True)
        sup.clear_status()
    return _report(sup, outcome, failed, out, err)


def _report(sup: Supervisor, outcome: str, failed: int | None, out, err) -> int:
    p = sup.plan
    elapsed = time.monotonic() - sup.started
    logs = os.path.relpath(p.log_dir)
    if outcome == "ok":
        print(f"job {p.job_name} completed in {elapsed:.1f}s; logs in {logs}", file=out)
        return 0
    if outcome == "signal":
        name = signal.Signals(sup.stop_signal).name
        print(f"error: job {p.job_name} stopped by {name}; every process was stopped; logs in {logs}", file=err)
        return 128 + sup.stop_signal
    if outcome == "timeout":
        print(f"error: job {p.job_name} ran past limits.timeout ({p.timeout}s) and was stopped; logs in {logs}",
              file=err)
        return 1
    proc = p.processes[failed]
    code = sup.popens[failed].returncode
    culprit = _failing_rank(p, proc) if proc.label == "mpirun" else proc
    print(f"error: {culprit.label} of job {p.job_name} exited with code {code}; the other processes were "
          f"stopped; logs in {logs}", file=err)
    for spec in [culprit] + ([proc] if proc is not culprit else []):
        tail = _tail(spec.log_path)
        if tail:
            print(f"--- last lines of {os.path.relpath(spec.log_path)} ---", file=err)
            print(tail, file=err)
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
