"""Diagnosing a local run (``.amldist/runs/<name>/``) or a local pipeline run (the failed step that
started first, then the same inside that step's run folder).

When a rank failed is the earlier of the ``exit_time`` the supervisor records in status.json when
it sees the process end (every 20 ms) and its log's last write: a rank that raised writes its
traceback, then may take a second to tear torch down, while the ranks it left behind fail at once. Under mpirun the failing rank and its exit code
come from mpirun's own report in ``user_logs/mpi_log.txt``.
"""

from __future__ import annotations

import json
import os

from amldist.backends.local import jobs, records
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.logs import job_context, load_job_file, mpi_failure, read_tail
from amldist.diagnosis.signatures import Finding, RankLog

INJECTED_HINTS = {  # what the drill rehearsed, and what a real run should do about it
    "preempt": "a drill: the node was preempted (SIGTERM, then SIGKILL after the grace period); save checkpoints "
               "(amldist.runtime.checkpoint) and resubmit with --retry N to resume",
    "kill": "a drill: a process was killed from outside (SIGKILL), as a failed node would; --retry N resubmits",
    "hang": "a drill: a rank was frozen (SIGSTOP); set limits.timeout so a hang ends, and --retry-on hang",
    "slow": "a drill: a rank was slowed; the others waited for it in every collective",
}


def mtime(path: str | None) -> float | None:
    try:
        return os.stat(path).st_mtime if path else None
    except OSError:
        return None


def exit_times(run_dir: str) -> dict:
    """{process label: exit_time} from status.json (read as records reads it: bounded, no links)."""
    try:
        state = json.loads((records.read_bytes(run_dir) or b"{}").decode("utf-8"))
    except (ValueError, UnicodeDecodeError, records.StateError):
        return {}
    entries = list(state.get("ranks") or []) + ([state["launcher"]] if state.get("launcher") else [])
    return {e.get("label"): e.get("exit_time") for e in entries if isinstance(e, dict)
            and isinstance(e.get("exit_time"), (int, float))}


def rank_logs(run) -> list[RankLog]:
    """Every rank of the run ``run`` (a JobRecord) with its log's tail, exit code and end time."""
    times = exit_times(run.details.get("run_dir") or "")
    logs = []
    for entry in run.ranks:
        ended = times.get(entry.label)
        if entry.exit_code is not None:
            # it failed (or left) when it wrote its last line, often well before the interpreter ended
            ended = min((t for t in (ended, mtime(entry.log)) if t is not None), default=None)
        logs.append(RankLog(entry.rank, entry.label, entry.node, entry.log or "", read_tail(entry.log or ""),
                            entry.exit_code, ended))
    launcher = run.details.get("launcher")
    if launcher is not None and launcher.exit_code not in (None, 0):
        reported = mpi_failure(read_tail(launcher.log or ""))
        for log in logs:
            if reported is not None and log.rank == reported[0]:
                log.exit_code, log.ended = reported[1], times.get(launcher.label) or mtime(launcher.log)
    return logs


def diagnose_run(run_root: str, name: str, *, vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of local run ``name`` (a single job, or a pipeline: its failed step)."""
    run = jobs.get_run(run_root, name)
    if run.kind == "pipeline":
        return diagnose_pipeline(run, vm_size=vm_size)
    return diagnose_record(run, vm_size=vm_size)


def diagnose_record(run, *, vm_size: str | None = None) -> Diagnosis:
    logs = rank_logs(run)
    job = load_job_file(os.path.join(run.details.get("run_dir") or "", "job.yml"))
    ctx = job_context(job, len(logs), vm_size)
    result = diagnose(logs, ctx, job=run.name, status=run.status, backend="local")
    return injected_cause(run, result)


def injected_cause(run, result: Diagnosis) -> Diagnosis:
    """A run the fault drill struck failed because of the fault (``--inject``), never because of the script:
    the first fault that fired is the cause, on the first process it struck."""
    fired = [f for f in run.details.get("faults") or () if f.get("fired_at") is not None and f.get("processes")]
    if not fired or run.status != "Failed":
        return result
    fault = min(fired, key=lambda f: f["fired_at"])
    struck = [log for log in result.ranks if log.label in fault["processes"]]
    result.rank = struck[0] if struck else result.rank
    result.finding = Finding(f"injected-{fault['kind']}", f"--inject {fault['text']} fired at "
                             f"{fault.get('seconds') or 0:.1f} s on {', '.join(fault['processes'])}",
                             INJECTED_HINTS.get(fault["kind"], "the fault drill ended the run"))
    return result


def diagnose_pipeline(run, *, vm_size: str | None = None) -> Diagnosis:
    """The failed step that started first, then that step's own diagnosis."""
    failed = [s for s in run.steps if s.status == "Failed"]
    if not failed:
        return Diagnosis(run.name, run.status, "local")
    step = sorted(failed, key=lambda s: s.start_time or "")[0]
    result = diagnose_record(jobs.get_step(run, step.name), vm_size=vm_size)
    result.job, result.step, result.status = run.name, step.name, run.status
    return result
