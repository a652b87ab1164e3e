"""Reading what a job left: log tails, Azure ML's per-process log names, Open MPI's report of the
rank that failed, and the timestamps inside log lines (Azure ML records no per-rank end time)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone

import yaml

from amldist.diagnosis.signatures import Context
from amldist.rules import vm_sizes

TAIL_BYTES = 256 * 1024
PROCESS_LOG = re.compile(r"std_log_process_(\d+)\.txt$")
# Open MPI 4/5: "process rank 1 with PID 0 on node n exited on signal 9 (Killed)", and for an exit code
# "The first process to do so was: Process name: [[43155,1],2] Exit code: 3".
MPI_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on\s+signal (\d+)", re.S)
MPI_EXIT = re.compile(r"Process name:\s*\[(?:\[[^\]]*\]|[^\],]*),\s*(\d+)\]\s*Exit code:\s*(-?\d+)", re.S)
# 2024-01-01 12:00:00,123 (logging) / 2024-01-01T12:00:00.123Z / glog's [W1126 11:31:16.123456 ...]
ISO_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?")
GLOG_TIME = re.compile(r"^\[?[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?")


def read_tail(path: str, size: int = TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def mpi_failure(text: str) -> tuple[int, int] | None:
    """(rank, exit code) that mpirun reports as the first to fail; a signal N is -N."""
    match = MPI_SIGNAL.search(text)
    if match:
        return int(match.group(1)), -int(match.group(3))
    match = MPI_EXIT.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def last_timestamp(text: str, year: int | None = None) -> float | None:
    """The latest time written in the log's lines (UTC assumed), or None when they carry none."""
    latest = None
    for line in text.splitlines()[-400:]:
        stamp = line_time(line, year)
        if stamp is not None and (latest is None or stamp > latest):
            latest = stamp
    return latest


def line_time(line: str, year: int | None) -> float | None:
    line = re.sub(r"^\[(?:default)?rank\d+\]:", "", line)
    match = ISO_TIME.search(line[:64])
    try:
        if match:
            fraction = (match.group(3) or "0")[:6].ljust(6, "0")
            stamp = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}.{fraction}")
        else:
            match = GLOG_TIME.match(line)
            if not match:
                return None
            fraction = (match.group(4) or "0")[:6].ljust(6, "0")
            stamp = datetime.fromisoformat(f"{year or datetime.now(timezone.utc).year}-{match.group(1)}-"
                                           f"{match.group(2)}T{match.group(3)}.{fraction}")
    except ValueError:
        return None
    return stamp.replace(tzinfo=timezone.utc).timestamp()


def job_context(job: dict, world: int, vm_size: str | None = None) -> Context:
    """What the job's spec says that signatures weigh: its size, processes per node, variables."""
    job = job if isinstance(job, dict) else {}
    env = {str(k): "" if v is None else str(v) for k, v in (job.get("environment_variables") or {}).items()}
    resources = job.get("resources") if isinstance(job.get("resources"), dict) else {}
    named = vm_size or env.get("AMLDIST_VM_SIZE") or resources.get("instance_type")
    size = vm_sizes.lookup(str(named)) if named else None
    dist = job.get("distribution") if isinstance(job.get("distribution"), dict) else {}
    per_node = dist.get("process_count_per_instance")
    return Context(size, per_node if isinstance(per_node, int) else None, env, world)


def load_job_file(path: str) -> dict:
    """A run folder's job.yml as data ({} when it is missing or unreadable)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}
