"""Diagnosing a local run (``.amldist/runs/<name>/``) or a local pipeline run (its ``summary.json``:
the failed step first, then the same inside the step's run folder).

Each rank's end time is the ``exit_time`` the supervisor records in status.json when it sees the
process end (every 20 ms); where it has none (a run from an older amldist, a rank started by
mpirun), the log's modification time stands in. Under mpirun the failing rank and its exit code
come from mpirun's own report in ``user_logs/mpi_log.txt``.
"""

from __future__ import annotations

import json
import os

from amldist.backends.local import jobs
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.logs import job_context, load_job_file, mpi_failure, read_tail
from amldist.diagnosis.signatures import RankLog
from amldist.errors import UserError

SUMMARY = "summary.json"


def mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def rank_logs(run: dict) -> list[RankLog]:
    logs = []
    for entry in run.get("ranks", []):
        code = entry.get("exit_code")
        ended = entry.get("exit_time")
        if ended is None and code not in (None, 0):
            ended = mtime(entry["log"])
        logs.append(RankLog(entry.get("rank"), entry.get("label") or f"rank {entry.get('rank')}", entry.get("node"),
                            entry["log"], read_tail(entry["log"]), code, ended))
    launcher = run.get("launcher")
    if launcher and launcher.get("exit_code") not in (None, 0):
        reported = mpi_failure(read_tail(launcher["log"]))
        for log in logs:
            if reported is not None and log.rank == reported[0]:
                log.exit_code, log.ended = reported[1], launcher.get("exit_time") or mtime(launcher["log"])
    return logs


def diagnose_run(run_root: str, name: str, *, vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of local run ``name`` (a single job, or a pipeline: its failed step)."""
    summary = os.path.join(run_root, name, SUMMARY)
    if os.path.basename(name) == name and os.path.isfile(summary):
        return diagnose_pipeline(os.path.join(run_root, name), name, vm_size=vm_size)
    run = jobs.get_run(run_root, name).to_json()
    return diagnose_folder(run, vm_size=vm_size)


def diagnose_folder(run: dict, *, vm_size: str | None = None) -> Diagnosis:
    logs = rank_logs(run)
    job = load_job_file(os.path.join(run["run_dir"], "job.yml"))
    ctx = job_context(job, len(logs), vm_size)
    return diagnose(logs, ctx, job=run["name"], status=run.get("status"), backend="local")


def diagnose_pipeline(pipeline_dir: str, name: str, *, vm_size: str | None = None) -> Diagnosis:
    """The first step that failed (by its start, as recorded), then that step's own diagnosis."""
    try:
        with open(os.path.join(pipeline_dir, SUMMARY), encoding="utf-8") as fh:
            summary = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UserError(f"local pipeline run {name!r} has an unreadable {SUMMARY}: {exc}", exit_code=1) from None
    steps = [s for s in summary.get("steps", []) if s.get("status") == "failed"]
    if not steps:
        return Diagnosis(name, summary.get("status"), "local")
    step = sorted(steps, key=lambda s: s.get("started") or "")[0]
    folder = os.path.join(pipeline_dir, step["run_folder"])
    run = jobs.get_run(os.path.dirname(folder), os.path.basename(folder)).to_json()
    result = diagnose_folder(run, vm_size=vm_size)
    result.job, result.step, result.status = name, step["name"], summary.get("status")
    return result
