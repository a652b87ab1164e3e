"""Diagnosing a local run (``.amldist/runs/<name>/``) or a local pipeline run (the failed step that
started first, then the same inside that step's run folder).

When a rank failed is the earlier of the ``exit_time`` the supervisor records in status.json when
it sees the process end (every 20 ms) and its log's last write: a rank that raised writes its
traceback, then may take a second to tear torch down, while the ranks it left behind fail at once. Under mpirun the failing rank and its exit code
come from mpirun's own report in ``user_logs/mpi_log.txt``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

from amldist.backends.local import jobs, records
from amldist.diagnosis import collectives
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.logs import job_context, load_job_file, mpi_failure, read_tail
from amldist.diagnosis.signatures import RankLog
from amldist.runtime.evidence import EVIDENCE_FOLDER


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
    run_dir = run.details.get("run_dir") or ""
    logs = rank_logs(run)
    job = load_job_file(os.path.join(run_dir, "job.yml"))
    ctx = job_context(job, len(logs), vm_size)
    evidence = collectives.read_folder(os.path.join(run_dir, "user_logs", EVIDENCE_FOLDER))
    result = diagnose(logs, ctx, job=run.name, status=run.status, backend="local", evidence=evidence)
    if result.finding is not None:
        copy, source = os.path.join(run_dir, "code"), code_source(run_dir)
        result.finding = dataclasses.replace(result.finding, line=users_path(result.finding.line, copy, source),
                                             frame=users_path(result.finding.frame, copy, source))
    return result


def code_source(run_dir: str) -> str | None:
    """The folder the run's code was copied from (status.json's ``code_source``), None when unknown."""
    try:
        state = json.loads((records.read_bytes(run_dir) or b"{}").decode("utf-8"))
    except (ValueError, UnicodeDecodeError, records.StateError):
        return None
    source = state.get("code_source") if isinstance(state, dict) else None
    return source if isinstance(source, str) and os.path.isabs(source) else None


def users_path(text: str | None, copy: str, source: str | None) -> str | None:
    """Paths into the run folder's copy of the code (``.../runs/NAME/code/train.py``) in ``text`` (a frame, a
    stall line) as the user's own file (``SOURCE/train.py``), the one to edit; unchanged when the source is
    unknown (a run from before status.json recorded it)."""
    if not text or not source:
        return text
    return text.replace(os.path.join(copy, ""), os.path.join(source, ""))


def diagnose_pipeline(run, *, vm_size: str | None = None) -> Diagnosis:
    """The failed step that started first, then that step's own diagnosis."""
    failed = [s for s in run.steps if s.status == "Failed"]
    if not failed:
        return Diagnosis(run.name, run.status, "local")
    step = sorted(failed, key=lambda s: s.start_time or "")[0]
    result = diagnose_record(jobs.get_step(run, step.name), vm_size=vm_size)
    result.job, result.step, result.status = run.name, step.name, run.status
    return result


def explain_failure(run_dir: str) -> tuple[str, str] | None:
    """(rank label, "signature: line") for a failed local job's culprit, as its `error:` line and status.json
    say it; None when the diagnosis names no cause."""
    result = diagnose_run(os.path.dirname(run_dir), os.path.basename(run_dir))
    if result.rank is None or result.finding is None:
        return None
    where = frame_place(result.finding.frame)
    line = re.sub(r"^amldist\.runtime: stall: |; every rank writes its Python stack.*$", "", result.finding.line)
    return result.rank.label, f"{result.finding.signature}: {line[:300]}" + (
        f" (at {where})" if where and where not in line else "")


def frame_place(frame: str | None) -> str | None:
    """``File "/src/train.py", line 20, in step`` as ``/src/train.py:20``."""
    match = re.match(r'File "([^"]+)", line (\d+)', frame or "")
    return f"{match.group(1)}:{match.group(2)}" if match else None
