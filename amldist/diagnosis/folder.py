"""``amldist job diagnose --logs DIR``: a folder of Azure ML logs as ``az ml job download`` (or
``MLClient.jobs.download``) leaves it, diagnosed with no workspace.

Only two kinds of file are read: the ranks' logs in the job's ``user_logs/`` folder (``std_log_process_NN.txt``,
NN the global rank; ``std_log_node_NN_worker.txt`` / ``_ps.txt`` for TensorFlow; ``std_log.txt`` for one
process) and the MPI launcher's log (``mpi_log.txt``, ``70_mpi_log.txt``). ``user_logs/`` may be at any depth
(``DIR/artifacts/user_logs/``, ``DIR/NAME/user_logs/``): the shallowest one is the job's, so files the job
itself wrote under ``./outputs`` (downloaded beside it, one level deeper) never invent ranks, and nothing under
an ``outputs`` or ``named-outputs`` folder is read at all.

The folder is the job's to fill, so it is walked as untrusted: links are never followed (a link to
``/dev/zero`` or out of the folder is skipped and said), only regular files are read (a FIFO or a device is
skipped), at most :data:`MAX_DEPTH` levels and :data:`MAX_ENTRIES` entries are looked at, and each log is read
as its last :data:`~amldist.diagnosis.logs.TAIL_BYTES` (:func:`~amldist.diagnosis.logs.read_tail`). A rank's
log is read again when the analysis needs it rather than kept (:class:`TailLog`), so 1,024 ranks take the memory
of one log, not of 1,024.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections import deque
from dataclasses import dataclass, field

from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.logs import PROCESS_LOG, job_context, last_timestamp, load_job_file, mpi_failure, read_tail
from amldist.diagnosis.signatures import Finding, RankLog
from amldist.errors import UserError

MAX_DEPTH = 12  # az ml job download: DIR/artifacts/user_logs; a folder holding several jobs' downloads: a few more
MAX_ENTRIES = 200_000  # entries looked at (1,024 ranks leave about 1,100 files)
MPI_LOG = re.compile(r"^(\d+_)?mpi_log\.txt$")
NODE_LOG = re.compile(r"^std_log_node_(\d+)_(worker|ps|chief|evaluator)\.txt$")
NOT_LOGS = {"outputs", "named-outputs"}  # what the job wrote: never read
PEEK = 64 * 1024  # the part of a log (its start, its end) the end time and host are read from


@dataclass
class Found:
    """What a walk of the folder found: the rank logs, the MPI log, and what it skipped and why."""

    user_logs: str | None = None
    mpi_log: str | None = None
    skipped: list = field(default_factory=list)  # (path, why)
    others: list = field(default_factory=list)  # other user_logs folders at the same depth


class TailLog(RankLog):
    """A RankLog whose text is read from its file when asked, the last one read kept: the signatures run on
    one rank at a time, and each finds the same text object (the scan of :mod:`~amldist.diagnosis.scan` is
    done once per log)."""

    _cache: tuple = ((), "")

    @property
    def text(self) -> str:
        try:
            info = os.stat(self.log, follow_symlinks=False)
            key = (self.log, info.st_mtime_ns, info.st_size)  # a file written again is read again
        except OSError:
            return ""
        if TailLog._cache[0] != key:
            TailLog._cache = (key, read_tail(self.log))
        return TailLog._cache[1]

    @text.setter
    def text(self, value) -> None:  # set by RankLog's __init__; the file is the text
        pass


def walk(folder: str) -> Found:
    """The job's ``user_logs/`` folder (the shallowest) and the MPI log, without following links."""
    found, queue, seen = Found(), deque([(folder, 0)]), 0
    given = os.path.basename(os.path.normpath(folder)) == "user_logs"  # DIR is the user_logs folder itself
    found.user_logs, best_depth = (folder, -1) if given else (None, None)
    while queue and seen < MAX_ENTRIES:
        path, depth = queue.popleft()
        try:
            with os.scandir(path) as listing:  # a folder of millions of entries is looked at only in part
                entries = sorted(itertools.islice(listing, MAX_ENTRIES - seen), key=lambda e: e.name)
        except OSError as exc:
            found.skipped.append((path, exc.strerror or "unreadable"))
            continue
        for entry in entries:
            seen += 1
            if entry.is_symlink():
                found.skipped.append((entry.path, "a link (links are not followed)"))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in NOT_LOGS or depth + 1 > MAX_DEPTH:
                    continue
                if entry.name == "user_logs" and not given:
                    if best_depth is None:
                        best_depth, found.user_logs = depth, entry.path
                    elif depth == best_depth:
                        found.others.append(entry.path)
                queue.append((entry.path, depth + 1))
            elif MPI_LOG.match(entry.name) and found.mpi_log is None:
                found.mpi_log = entry.path
    return found


def rank_files(user_logs: str, skipped: list) -> list[tuple[int, str, str]]:
    """(rank, label, path) of every rank's log in ``user_logs``; anything but a regular file is skipped."""
    process, nodes, single = [], [], []
    try:
        with os.scandir(user_logs) as listing:
            entries = sorted(itertools.islice(listing, MAX_ENTRIES), key=lambda e: e.name)
    except OSError as exc:
        skipped.append((user_logs, exc.strerror or "unreadable"))
        return []
    for entry in entries:
        match, node = PROCESS_LOG.search(entry.name), NODE_LOG.match(entry.name)
        if not (match or node or entry.name == "std_log.txt"):
            continue
        mode = entry.stat(follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            why = "a link (links are not followed)" if stat.S_ISLNK(mode) else "not a regular file (a FIFO, a device)"
            if all(path != entry.path for path, _why in skipped):  # the walk saw the links already
                skipped.append((entry.path, why))
        elif match:
            process.append((int(match.group(1)), f"rank {int(match.group(1))}", entry.path))
        elif node:
            nodes.append((int(node.group(1)), node.group(2), entry.path))
        else:
            single.append((0, "rank 0", entry.path))
    if process:
        return sorted(process)
    if nodes:  # TensorFlow: workers first, then parameter servers, as TF_CONFIG numbers them
        ordered = sorted(nodes, key=lambda n: (n[1] != "worker", n[1], n[0]))
        return [(i, f"{kind} {index}", path) for i, (index, kind, path) in enumerate(ordered)]
    return single


def rank_logs(files: list[tuple[int, str, str]], per_node: int | None, *, lazy: bool = True) -> list[RankLog]:
    """One RankLog per rank: its node (rank // per node when known, else by host), host and end time; a
    :class:`TailLog` when ``lazy`` (the files stay), else with its text kept (a folder about to be removed)."""
    logs = []
    for rank, label, path in files:
        node = rank // per_node if per_node else None
        log = TailLog(rank, label, node, path, "") if lazy else RankLog(rank, label, node, path, read_tail(path))
        end = log.text[-PEEK:] if not lazy else read_tail(path, PEEK)  # what the end time and host need
        log.ended = last_timestamp(end)
        log.host = host_of(read_tail(path, PEEK, head=True)) or host_of(end)  # NCCL's start-up lines, else its last
        logs.append(log)
    if not per_node:
        number_nodes_by_host(logs)
    return logs


NCCL_PREFIX = re.compile(r"^(?:\[[^\]]*\] )?([A-Za-z0-9][A-Za-z0-9._-]{0,252}):\d+:\d+ \[\d+\] ", re.M)


def host_of(text: str) -> str | None:
    """The host a rank ran on, from NCCL's line prefix ``host:pid:tid [device]`` (NCCL_DEBUG=INFO or WARN)."""
    match = NCCL_PREFIX.search(text)
    return match.group(1) if match else None


def number_nodes_by_host(logs: list[RankLog]) -> None:
    """Without processes per node, a rank's node is its host's place among the hosts, by their lowest rank."""
    order: dict[str, int] = {}
    for log in sorted(logs, key=lambda l: l.rank):
        if log.host is not None:
            log.node = order.setdefault(log.host, len(order))


def diagnose_folder(folder: str, *, vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of the job whose logs are in ``folder`` (a job.yml beside them, e.g. ``az ml job show -n NAME
    -o yaml > DIR/job.yml``, adds its size and processes per node; without one the job is taken as failed)."""
    if not os.path.isdir(folder):
        raise UserError(f"--logs {folder}: no such folder", exit_code=2,
                        hint="az ml job download --name NAME --download-path DIR fetches a job's logs into DIR")
    found = walk(folder)
    if found.user_logs is None:
        raise UserError(f"--logs {folder}: no user_logs/ folder in it (where Azure ML writes each rank's log)",
                        exit_code=2, hint="az ml job download --name NAME --download-path DIR fetches a job's logs")
    if found.others:
        raise UserError(f"--logs {folder} holds the logs of more than one job: {found.user_logs} and "
                        f"{found.others[0]}", exit_code=2, hint="name the folder of one job with --logs")
    job = next((load_job_file(p) for p in (os.path.join(folder, n) for n in ("job.yml", "job.yaml"))
                if os.path.lexists(p)), {})
    per_node = (job.get("distribution") or {}).get("process_count_per_instance") if isinstance(
        job.get("distribution"), dict) else None
    logs = rank_logs(rank_files(found.user_logs, found.skipped), per_node if isinstance(per_node, int) else None)
    reported = mpi_failure(read_tail(found.mpi_log)) if found.mpi_log else None
    for log in logs:
        if reported is not None and log.rank == reported[0]:
            log.exit_code = reported[1]
    name = str(job.get("name") or os.path.basename(os.path.abspath(folder)))
    status = str(job.get("status") or "Failed")
    result = diagnose(logs, job_context(job, len(logs), vm_size), job=name, status=status, backend="azureml")
    if found.skipped:
        shown = ", ".join(os.path.relpath(path, folder) for path, _why in found.skipped[:5])
        result.notes.append(Finding("skipped", f"{len(found.skipped)} entries not read: {shown}"
                                    + (", ..." if len(found.skipped) > 5 else ""),
                                    "only regular files are read; links, FIFOs and devices are skipped"))
    return result
