"""``amldist job list/show/logs/cancel/download`` for local runs (``.amldist/runs/<name>/``), jobs and pipelines.

What each verb reads is the run's ``status.json``, read back as a typed record
(:mod:`amldist.backends.local.records`), written by the run's supervisor (a job) or step runner (a
pipeline, its steps inside) as it goes, so every verb works while the run runs, from any terminal.
The verbs mirror ``az ml job``:

- ``list``: every run under the run root, newest first; a run whose status.json is unreadable is
  one ``warning:`` line and the others are still listed;
- ``show``: status, start, duration, per-node and per-rank exit codes (a pipeline: each step's
  status and exit code), outputs with their paths;
- ``logs``: one rank's log (``--rank``) or all of them, each line prefixed by its rank; of a pipeline,
  every step's, each line prefixed by the step (``--step NAME``: one step's, as a job's);
  ``--follow`` keeps reading until the run ends (:mod:`amldist.backends.local.log_files`);
- ``cancel``: SIGTERM to the run's supervisor (a pipeline's: its step runner, which passes it to every
  running step), only once that process proves to be the run's own
  (:func:`amldist.backends.local.proc.belongs_to_run`); it stops every process the way Ctrl-C does
  and records ``Canceled``;
- ``download``: as ``az ml job download``: the logs to ``DIR/artifacts/user_logs/`` (a pipeline's
  under one folder per step), with ``--all`` (or ``--output-name``) the outputs to
  ``DIR/named-outputs/<name>/``; links are copied as links; refused while the run runs, as Azure
  refuses it.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from amldist.backends.base import FAILED, PREPARING, RUNNING, TERMINAL, UNKNOWN, JobRecord
from amldist.backends.local import proc, run_state
from amldist.engine.download import check_destination, copy_as_data
from amldist.backends.local.records import StateError, read_record
from amldist.engine.run_folder import ABANDONED, BEING_MADE, abandoned_text, creation_state
from amldist.backends.local.run_state import exit_code_text
from amldist.errors import UserError


def run_names(run_root: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(run_root)
                      if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
    except OSError:
        return []


def list_runs(run_root: str, *, err=None) -> list[JobRecord]:
    """Every run's record, newest first; a folder without status.json is ``Preparing`` while amldist makes it,
    ``Failed`` when amldist was killed while making it, ``Unknown`` when an older amldist made it; an unreadable
    status.json is one warning line."""
    err = err or sys.stderr
    runs = []
    for name in run_names(run_root):
        run_dir = os.path.join(run_root, name)
        try:
            record = read_record(run_dir)
        except StateError as exc:
            print(f"warning: {exc.message}; not listed", file=err)
            continue
        runs.append(record or _unstarted(name, run_dir))
    return sorted(runs, key=lambda r: r.start_time or "", reverse=True)


def _unstarted(name: str, run_dir: str) -> JobRecord:
    """The record of a run folder without status.json (see list_runs)."""
    state = creation_state(run_dir)
    if state == ABANDONED:
        return JobRecord(name=name, backend="local", status=FAILED, error=abandoned_text(run_dir),
                         details={"run_dir": run_dir})
    return JobRecord(name=name, backend="local", status=PREPARING if state == BEING_MADE else UNKNOWN,
                     details={"run_dir": run_dir})


def is_name(name: str) -> bool:
    return os.path.basename(name) == name and name not in ("", ".", "..") and "\n" not in name


def get_run(run_root: str, name: str) -> JobRecord:
    """The run called ``name``; UserError (exit 2) when there is none, StateError (exit 1) when its
    status.json is not one amldist wrote."""
    run_dir = os.path.join(run_root, name)
    record = read_record(run_dir) if is_name(name) and os.path.isdir(run_dir) else None
    if record is None:
        where = os.path.relpath(run_root)
        if is_name(name) and os.path.isdir(run_dir):
            raise UserError(_unstarted_text(name, where, run_dir), hint=f"its files are in {os.path.relpath(run_dir)}"
                            + ("; remove that folder to submit a run of that name again"
                               if creation_state(run_dir) == ABANDONED else ""))
        raise UserError(f"no local run named {name!r} in {where}",
                        hint="'amldist job list --local' shows the runs; --run-root DIR looks elsewhere")
    return record


def _unstarted_text(name: str, where: str, run_dir: str) -> str:
    state = creation_state(run_dir)
    if state == ABANDONED:
        return f"local run {name!r} in {where} never started: {abandoned_text(run_dir)}"
    if state == BEING_MADE:
        return f"local run {name!r} in {where} has not started yet: amldist is making its folder (copying its code)"
    return f"local run {name!r} in {where} has no status.json (it was made by an older amldist)"


def get_step(record: JobRecord, step: str) -> JobRecord:
    """The job record of one step of the pipeline ``record`` (its own status.json)."""
    if record.kind != "pipeline":
        raise UserError(f"job {record.name} is a job, not a pipeline: it has no steps", hint="drop --step")
    found = record.step(step)
    if found is None:
        raise UserError(f"pipeline {record.name} has no step {step!r}",
                        hint=f"its steps: {', '.join(s.name for s in record.steps)}")
    step_record = read_record(found.run_dir) if found.run_dir else None
    if step_record is None:
        raise UserError(f"step {step} of pipeline {record.name} has not started ({found.status})", exit_code=1)
    return step_record


def has_run(run_root: str, name: str) -> bool:
    # lexists: a run whose status.json is broken (a FIFO, a link) is still that run, reported as such
    return is_name(name) and os.path.lexists(os.path.join(run_root, name, run_state.STATUS_FILE))


def show_text(run: JobRecord) -> str:
    rel = os.path.relpath
    duration = run.duration_seconds
    lines = [f"name: {run.name}", f"status: {run.status}" + (f" (stopped by {run.stopped_by})" if run.stopped_by else ""),
             f"start: {run.start_time or '-'}",
             f"duration: {duration:.1f}s" if isinstance(duration, (int, float)) else "duration: -"]
    if run.error:
        lines.append(f"error: {run.error}")
    for step in run.steps:
        lines.append(f"step {step.name}: {step.status}, exit {exit_code_text(step.exit_code)}"
                     + (f", folder {rel(step.run_dir)}" if step.run_dir else "") + (f" ({step.note})" if step.note else ""))
    for node in run.details.get("nodes", []):
        lines.append(f"node {node['node']}: exit {exit_code_text(node['exit_code'])}")
    launcher = run.details.get("launcher")
    for entry in run.ranks + ((launcher,) if launcher else ()):
        lines.append(f"  {entry.label}: exit {exit_code_text(entry.exit_code)}, log {rel(entry.log or '-')}")
    for output in run.outputs:
        lines.append(f"output {output.name}: {rel(output.path) if output.path else '-'}")
    if run.details.get("run_dir"):
        lines.append(f"run folder: {rel(run.details['run_dir'])}")
    if run.details.get("sweep"):  # a sweep's trials: parameters, metric, status, the best one marked
        from amldist.backends.local.sweep_run import table

        lines += ["trials:", table({"sweep": run.details["sweep"]})]
    return "\n".join(lines)


# --- cancel ----------------------------------------------------------------------------------
def cancel(run_root: str, name: str, *, wait: bool = True, timeout: float = 60.0, err=None) -> JobRecord:
    """Stop a running run from any terminal: mark the request, then SIGTERM the run's own process (see
    the module docstring). Returns the record afterwards (still ``Running`` with ``wait=False``)."""
    err = err or sys.stderr
    run = get_run(run_root, name)
    if run.status != RUNNING:  # a process that does not prove to be the run's makes it read Failed
        print(f"job {name} is already {run.status}; nothing to cancel", file=err)
        return run
    run_dir, pid = run.details["run_dir"], run.details["pid"]
    run_state.request_cancel(run_dir)
    handle = _pidfd(pid)
    try:
        if not _signal_own(handle, pid, run.details["pid_start_time"], run_dir, name):
            return get_run(run_root, name)
        if not wait:
            return run
        return _wait_for_end(run_root, name, handle, timeout)
    finally:
        if handle is not None:
            os.close(handle)


def _pidfd(pid) -> int | None:
    """A descriptor that holds ``pid`` (so a pid reused meanwhile is never reached), None without one."""
    try:
        return os.pidfd_open(pid) if hasattr(os, "pidfd_open") and proc.is_pid(pid) else None
    except OSError:  # gone already (the proof then fails), or a kernel without pidfd_open
        return None


def _signal_own(handle: int | None, pid: int, started: int, run_dir: str, name: str) -> bool:
    """SIGTERM ``pid`` if it proves to be the run's own; ``handle`` (its pidfd) holds it between the
    proof and the signal. False when it is gone or not the run's."""
    try:
        if not proc.belongs_to_run(pid, started, run_dir):
            return False
        if handle is not None:
            signal.pidfd_send_signal(handle, signal.SIGTERM)
        else:  # pragma: no cover - kernels before 5.3
            os.kill(pid, signal.SIGTERM)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        raise UserError(f"job {name} runs as another user (pid {pid}); amldist cannot stop it", exit_code=1) from None


def _wait_for_end(run_root: str, name: str, handle: int | None, timeout: float) -> JobRecord:
    """The record once the run has ended. A ``Failed`` read while the pidfd says the process still
    runs is not the end: the reader's proof of life can miss for a moment while the run records
    its end, so the end is what the run wrote, read once its process has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exited = _exited(handle, 0.05)
        run = get_run(run_root, name)
        if run.status in TERMINAL and (run.status != FAILED or exited is not False):
            return run
    raise UserError(f"job {name} was sent SIGTERM but has not ended after {timeout:.0f}s",
                    hint=f"'amldist job show {name}' tells when it has", exit_code=1)


def _exited(handle: int | None, seconds: float) -> bool | None:
    """Whether the process behind ``handle`` has exited, waiting up to ``seconds``; None without a handle."""
    if handle is None:
        time.sleep(seconds)
        return None
    poller = select.poll()
    poller.register(handle, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


# --- download --------------------------------------------------------------------------------
def download(run_root: str, name: str, destination: str, *, output_name: str | None = None,
             all_outputs: bool = False, step: str | None = None) -> list[str]:
    """Copy what ``az ml job download`` would: the logs to ``artifacts/user_logs/`` (a pipeline's, one
    folder per step), and the named outputs (``all_outputs``, or the one ``output_name``) to
    ``named-outputs/<name>/``; ``step``: that step of a pipeline, as a job. Returns the paths written."""
    run = get_run(run_root, name)
    if step is not None:
        run = get_step(run, step)
    if run.status not in TERMINAL:
        raise UserError(f"job {run.name} is {run.status}; download is allowed once it has ended "
                        f"({', '.join(TERMINAL)})", hint=f"'amldist job logs {name} --follow' waits for the end",
                        exit_code=1)
    if output_name is not None and run.output(output_name) is None:
        raise UserError(f"job {run.name} has no output {output_name!r}",
                        hint=f"its outputs: {', '.join(o.name for o in run.outputs) or 'none'}")
    check_destination(destination)
    run_dir = run.details["run_dir"]
    written = []
    if output_name is None:
        written += _copy_logs(run, os.path.join(destination, "artifacts", "user_logs"))
    for output in run.outputs:
        target = os.path.join(destination, "named-outputs", output.name)
        if (all_outputs or output.name == output_name) and output.path and _copy(output.path, target, run_dir):
            written.append(target)
    return written


def _copy_logs(run: JobRecord, target: str) -> list[str]:
    if run.kind == "job":
        logs = run.details.get("logs")
        return [target] if logs and _copy(logs, target, run.details["run_dir"]) else []
    written = []
    for step in run.steps:
        logs = os.path.join(step.run_dir or "", "user_logs")
        if step.run_dir and os.path.isdir(logs):
            inside = os.path.normpath(os.path.join(target, step.name))
            if os.path.commonpath([inside, target]) == target and _copy(logs, inside, step.run_dir):
                written.append(inside)
    return written


def _copy(source: str, target: str, run_dir: str) -> bool:
    """A folder's tree (links copied as links, never followed), or a file into ``target``; only from inside
    the run folder (:func:`amldist.engine.download.copy_as_data`)."""
    return copy_as_data(source, target, within=run_dir)
