"""``amldist job logs`` for local runs: one rank's log, every rank's, or a pipeline's steps', in constant memory.

With several logs each line starts with its source, as ``--stream`` prints them: ``[rank 1]`` for a
job, ``[STEP]`` (one process) or ``[STEP rank 1]`` for a pipeline's steps. ``--follow`` keeps printing
new complete lines until the run ends (a pipeline's steps are picked up as they start); each line
is printed once. Logs are read in chunks, never whole.
"""

from __future__ import annotations

import sys
import time

from amldist.backends.base import RUNNING, JobRecord
from amldist.backends.local.jobs import get_run, get_step
from amldist.engine.log_stream import LogFollower
from amldist.backends.local.records import read_record
from amldist.errors import UserError

FOLLOW_POLL_SECONDS = 0.2


def pick_logs(run: JobRecord, rank: int | None) -> list[tuple[str, str]]:
    """(label, path) of a job's logs to print: one rank's, or every rank's."""
    ranks = [r for r in run.ranks if r.log]
    if rank is None:
        return [(r.label, r.log) for r in ranks]
    for entry in ranks:
        if entry.rank == rank:
            return [(entry.label, entry.log)]
    if 0 <= rank < len(ranks):  # tensorflow's workers and parameter servers have no RANK: their order
        return [(ranks[rank].label, ranks[rank].log)]
    raise UserError(f"job {run.name} has no rank {rank}", hint=f"its ranks are 0 to {len(ranks) - 1}")


def step_logs(run: JobRecord, rank: int | None) -> list[tuple[str, str]]:
    """Every started step's logs, each labelled with the step's name."""
    chosen = []
    for step in run.steps:
        try:
            record = read_record(step.run_dir) if step.run_dir else None
        except UserError:
            record = None
        if record is None:
            continue
        logs = pick_logs(record, rank)
        chosen += [(step.name if len(logs) == 1 else f"{step.name} {label}", path) for label, path in logs]
    return chosen


def logs(run_root: str, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
         out=None) -> JobRecord:
    """Print the logs (see the module docstring); returns the run's record as it stood at the end."""
    out = out or sys.stdout
    run = get_run(run_root, name)
    read = _Reader(out)
    while True:
        if step is not None:
            record = get_step(run, step)
            chosen = pick_logs(record, rank)
        else:
            record = run
            chosen = step_logs(run, rank) if run.kind == "pipeline" else pick_logs(run, rank)
        ended = not follow or record.status != RUNNING
        for label, path in chosen:
            read.copy(path, label if len(chosen) > 1 or run.kind == "pipeline" and step is None else None,
                      whole=ended, within=run.details["run_dir"])
        if ended:
            return run
        time.sleep(FOLLOW_POLL_SECONDS)
        run = get_run(run_root, name)


class _Reader:
    """Where each log was read to, so that every line is printed once: :mod:`amldist.engine.log_stream`
    reads chunks, keeps an unfinished line in memory (never read again) and writes a single log as written."""

    def __init__(self, out):
        self.out = out
        self.follower = LogFollower(out.write, raw=True)

    def copy(self, path: str, label: str | None, *, whole: bool, within: str) -> None:
        """Write the lines of ``path`` added since the last call (complete lines only unless ``whole``), when
        it lies in the run folder ``within``."""
        self.follower.copy(path, f"[{label}] " if label else "", final=whole, within=within)
        self.out.flush()
