"""A Slurm job's record, in Azure ML's words, from Slurm and from its run folder.

The run folder (``<run root>/<name>/``) holds ``slurm.json`` (the job id and the plan's shape, written
by ``run()``), ``state/`` (written inside the allocation: ``started``, ``ended``, ``exit_code`` of the
step, ``rank_N.exit`` of each task; ``cancel_requested`` by ``amldist job cancel``) and ``user_logs/``.

The status is Slurm's while the job is queued or running (``squeue``). Once it has left the queue:
the step's exit code when the batch script wrote it (0: Completed, else Failed, naming the first rank
that exited non-zero); otherwise the end state ``scontrol``/``sacct`` still know (a cancel from outside,
a node failure, the time limit), and when neither knows, Canceled if amldist asked for it, else Failed
"ended without a result". Accounting (``sacct``) is used when configured, never required.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from amldist.backends.base import (CANCELED, COMPLETED, FAILED, TERMINAL, JobRecord, OutputRecord,
                                   RankRecord)
from amldist.backends.slurm import commands
from amldist.errors import UserError

META = "slurm.json"
STOPPED = (128 + 15, 128 + 9)  # how a task stopped by srun after another one failed exits


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def read_meta(run_dir: str) -> dict | None:
    text = read_text(os.path.join(run_dir, META))
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def write_meta(run_dir: str, meta: dict) -> None:
    """``slurm.json``, replaced whole (a reader never sees half of it)."""
    path = os.path.join(run_dir, META)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2)
    os.replace(path + ".tmp", path)


def rank_exits(run_dir: str) -> dict[int, int]:
    """rank -> exit code, for the tasks that wrote one."""
    found = {}
    folder = os.path.join(run_dir, "state")
    for entry in os.listdir(folder) if os.path.isdir(folder) else ():
        if entry.startswith("rank_") and entry.endswith(".exit"):
            code = read_text(os.path.join(folder, entry))
            try:
                found[int(entry[5:-5])] = int(code or "")
            except ValueError:
                continue
    return found


def status_of(meta: dict, run_dir: str) -> tuple[str, str | None, str | None]:
    """(status, error, stopped_by) as the module docstring says."""
    state = os.path.join(run_dir, "state")
    queued = commands.queue_state(meta["job_id"])
    if queued is not None and queued != "CG":
        return commands.QUEUE_STATES.get(queued, "Running"), None, None
    code = read_text(os.path.join(state, "exit_code"))
    canceled = os.path.exists(os.path.join(state, "cancel_requested"))
    if code is not None and not canceled:
        return (COMPLETED, None, None) if code == "0" else (FAILED, failure(meta, run_dir, code), None)
    if queued == "CG":
        return "Finalizing", None, None
    final = commands.final_state(meta["job_id"])
    if canceled:
        return CANCELED, None, "amldist job cancel"
    if final in commands.FINAL_STATES:
        status, why = commands.FINAL_STATES[final]
        if status == CANCELED:
            return CANCELED, "the Slurm job was canceled (scancel)", "scancel"
        return status, why or failure(meta, run_dir, None), None
    return FAILED, f"Slurm job {meta['job_id']} ended without a result (canceled or its node failed)", None


def failure(meta: dict, run_dir: str, step_code: str | None) -> str:
    """Which rank failed, with its exit code and log: the first by rank that exited non-zero on its own,
    before those that the step's end stopped (SIGTERM, SIGKILL: 143, 137)."""
    bad = sorted(((c in STOPPED, r), c) for r, c in rank_exits(run_dir).items() if c != 0)
    if bad:
        (_, rank), code = bad[0]
        tasks = meta.get("tasks", ())
        label = tasks[rank][0] if rank < len(tasks) else f"rank {rank}"
        return f"{label} of job {meta['name']} exited with code {code}; see its log in {run_dir}/user_logs"
    return f"the job step exited with code {step_code}" if step_code else "the job failed"


def seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end.replace("Z", "+00:00"))
                - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return None


def record(run_dir: str, *, meta: dict | None = None) -> JobRecord:
    """The record of the Slurm run in ``run_dir``; UserError when it is not one."""
    meta = meta or read_meta(run_dir)
    if meta is None:
        raise UserError(f"{run_dir} is not a Slurm run of amldist (no {META})")
    status, error, stopped_by = status_of(meta, run_dir)
    exits = rank_exits(run_dir)
    logs = os.path.join(run_dir, "user_logs")
    ranks = tuple(RankRecord(label=label, rank=i if label.startswith("rank") else None, node=node,
                             exit_code=exits.get(i), log=os.path.join(logs, log))
                  for i, (label, log, node) in enumerate(meta.get("tasks", ())))
    outputs = tuple(OutputRecord(name, path, kind) for name, (path, kind) in meta.get("outputs", {}).items())
    state = os.path.join(run_dir, "state")
    start = read_text(os.path.join(state, "started"))
    end = read_text(os.path.join(state, "ended")) if status in TERMINAL else None
    return JobRecord(name=meta["name"], backend="slurm", status=status, start_time=start, end_time=end,
                     duration_seconds=seconds_between(start, end),
                     ranks=ranks, outputs=outputs, error=error, stopped_by=stopped_by,
                     details={"run_dir": run_dir, "slurm_job_id": meta["job_id"], "logs": logs})
