"""Reading what a job left: log tails, Azure ML's per-process log names, Open MPI's report of the
rank that failed, and the timestamps inside log lines (Azure ML records no per-rank end time)."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime, timezone

from amldist.diagnosis.signatures import Context
from amldist.rules import vm_sizes

TAIL_BYTES = 256 * 1024
STAMPED = 20  # a rank's end time: the latest of its last 20 dated lines (lines can come out of order)
PROCESS_LOG = re.compile(r"std_log_process_(\d+)\.txt$")
# Open MPI 4/5: "process rank 1 with PID 0 on node n exited on signal 9 (Killed)", and for an exit code
# "The first process to do so was: Process name: [[43155,1],2] Exit code: 3".
MPI_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on\s+signal (\d+)", re.S)
MPI_EXIT = re.compile(r"Process name:\s*\[(?:\[[^\]]*\]|[^\],]*),\s*(\d+)\]\s*Exit code:\s*(-?\d+)", re.S)
# Open MPI: "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1."; Intel MPI (Hydra):
# "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 3 PID 5490 RUNNING AT node-1\n=   KILLED BY
# SIGNAL: 9 (Killed)" (or "EXIT CODE: 9")
MPI_ABORT = re.compile(r"MPI_ABORT was invoked on rank (\d+) in communicator \S+\s+with errorcode (-?\d+)")
HYDRA = re.compile(r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\s+=\s+RANK (\d+) PID \d+ RUNNING AT \S+"
                   r"\s+=\s+(KILLED BY SIGNAL|EXIT CODE): (\d+)")
# 2024-01-01 12:00:00,123 (logging) / 2024-01-01T12:00:00.123Z / glog's [W1126 11:31:16.123456 ...] (torch's c10
# logging writes the month unpadded: [E502 10:22:41.160918398 ...])
ISO_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?")
GLOG_TIME = re.compile(r"^\[?[IWEF](\d{1,2})(\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?")  # torch: [E502 ...] for May 2


def read_tail(path: str, size: int = TAIL_BYTES, *, head: bool = False) -> str:
    """The last ``size`` bytes of the regular file ``path`` as text; '' for anything else.

    A log folder is the job's to fill: a FIFO would block the read forever, ``/dev/zero`` (or a link to it)
    never ends, a link may point anywhere on this machine. So the path itself must be a regular file (a link
    is not followed, ``O_NOFOLLOW``), it is opened without blocking, and checked again once open (``fstat``),
    so a file swapped for a FIFO in between is refused too; at most ``size`` bytes are read, whatever the
    size says. ``head``: the first ``size`` bytes instead (where NCCL's start-up lines are)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        if not head:
            os.lseek(fd, max(0, info.st_size - size), os.SEEK_SET)
        chunks, left = [], size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        try:
            return data.decode("utf-8")  # the fast path (ASCII logs); 'replace' below is several times slower
        except UnicodeDecodeError:
            return data.decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def mpi_failure(text: str) -> tuple[int, int] | None:
    """(rank, exit code) that mpirun reports as the first to fail; a signal N is -N."""
    match = MPI_SIGNAL.search(text)
    if match:
        return int(match.group(1)), -int(match.group(3))
    match = MPI_EXIT.search(text) or MPI_ABORT.search(text)
    if match:
        return int(match.group(1)), int(match.group(2))
    match = HYDRA.search(text)
    if match:
        code = int(match.group(3))
        return int(match.group(1)), -code if match.group(2) == "KILLED BY SIGNAL" else code
    return None


def last_timestamp(text: str, year: int | None = None) -> float | None:
    """The latest time written in the log's last lines (UTC assumed), or None when they carry none: the latest
    of the last :data:`STAMPED` lines that carry a time, among the last 400 lines."""
    lines = text[-65536:].splitlines()[-400:]
    if year is None:  # glog's lines carry no year: the log's own dated lines give it (else this year)
        dated = next((m for m in map(ISO_TIME.search, reversed(lines)) if m), None)
        year = int(dated.group(1)[:4]) if dated else None
    stamps = []
    for line in reversed(lines):
        stamp = line_time(line, year)
        if stamp is not None:
            stamps.append(stamp)
            if len(stamps) >= STAMPED:
                break
    return max(stamps, default=None)


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
            stamp = datetime.fromisoformat(f"{year or datetime.now(timezone.utc).year}-{int(match.group(1)):02d}-"
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
    """A run folder's job.yml as data ({} when it is missing, unreadable or no spec): read as every spec is
    read (a regular file of at most 2 MB, aliases expanded within a bound: a "billion laughs" stops early)."""
    from amldist.model.files import FileProblem, read_text
    from amldist.model.yamlio import YamlError, load_yaml

    try:
        data = load_yaml(read_text(path)).data
    except (FileProblem, YamlError, OSError):
        return {}
    return data if isinstance(data, dict) else {}
