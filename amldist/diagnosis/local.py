"""Logs read where the run wrote them (a local or a Slurm run): each process's log, exit code and end time
as its backend hands them over (:class:`amldist.backends.base.RunLogs` with ``ranks``).

When a rank failed is the earlier of the exit time its backend recorded (locally the supervisor's
``exit_time`` in status.json, seen every 20 ms) and its log's last write: a rank that raised writes its
traceback, then may take a second to tear torch down, while the ranks it left behind fail at once. Under
mpirun the failing rank and its exit code come from mpirun's own report (``user_logs/mpi_log.txt``).
"""

from __future__ import annotations

import os
import re

from amldist.diagnosis.logs import mpi_failure, read_tail
from amldist.diagnosis.signatures import RankLog
from amldist.runtime.evidence import EVIDENCE_FOLDER


def mtime(path: str | None) -> float | None:
    try:
        return os.stat(path).st_mtime if path else None
    except OSError:
        return None


def rank_logs(found) -> list[RankLog]:
    """Every process of ``found`` (a RunLogs) with its log's tail, exit code and end time."""
    logs = []
    for entry in found.ranks:
        ended = entry.exit_time
        if entry.exit_code is not None and found.log_times:
            # it failed (or left) when it wrote its last line, often well before the interpreter ended
            ended = min((t for t in (ended, mtime(entry.log)) if t is not None), default=None)
        logs.append(RankLog(entry.rank, entry.label, entry.node, entry.log or "", read_tail(entry.log or ""),
                            entry.exit_code, ended))
    launcher = found.launcher
    if launcher is not None and launcher.exit_code not in (None, 0):
        reported = mpi_failure(read_tail(launcher.log or ""))
        for log in logs:
            if reported is not None and log.rank == reported[0]:
                log.exit_code, log.ended = reported[1], launcher.exit_time or mtime(launcher.log)
    return logs


def users_path(text: str | None, copy: str, source: str | None) -> str | None:
    """Paths into the run folder's copy of the code (``.../runs/NAME/code/train.py``) in ``text`` (a frame, a
    stall line) as the user's own file (``SOURCE/train.py``), the one to edit; unchanged when the source is
    unknown (a run from before status.json recorded it)."""
    if not text or not source:
        return text
    return text.replace(os.path.join(copy, ""), os.path.join(source, ""))


def frame_place(frame: str | None) -> str | None:
    """``File "/src/train.py", line 20, in step`` as ``/src/train.py:20``."""
    match = re.match(r'File "([^"]+)", line (\d+)', frame or "")
    return f"{match.group(1)}:{match.group(2)}" if match else None
