"""Logs downloaded in Azure ML's layout (an Azure ML job's, fetched with ``MLClient.jobs.download``, or
any backend's own ``download``): ``user_logs/std_log_process_NN.txt`` (NN = the global rank) and, for
``distribution: mpi``, the MPI launcher's log, found by name under the download folder.

A rank's node is its rank // ``process_count_per_instance``; its end time is the last timestamp its log
carries (Azure ML records none per rank: a downloaded file's time says nothing), and its exit code comes
from the MPI log when that names it, else from the backend's record.
"""

from __future__ import annotations

import os
import re

from amldist.diagnosis.logs import PROCESS_LOG, last_timestamp, mpi_failure, read_tail
from amldist.diagnosis.signatures import RankLog

MPI_LOG = re.compile(r"(^|/)\d*_?mpi_log\.txt$")


def collect(folder: str, per_node: int | None) -> list[RankLog]:
    """Every ``std_log_process_NN.txt`` under ``folder`` as a RankLog (exit codes from the MPI log)."""
    ranks: dict[int, str] = {}
    mpi_text = None
    for root, _dirs, files in os.walk(folder):
        for file in sorted(files):
            path = os.path.join(root, file)
            match = PROCESS_LOG.search(file)
            if match:
                ranks.setdefault(int(match.group(1)), path)
            elif MPI_LOG.search(file):
                mpi_text = read_tail(path)
    logs = []
    for rank, path in sorted(ranks.items()):
        text = read_tail(path)
        node = rank // per_node if per_node else None
        logs.append(RankLog(rank, f"rank {rank}", node, path, text, None, last_timestamp(text)))
    reported = mpi_failure(mpi_text or "")
    for log in logs:
        if reported is not None and log.rank == reported[0]:
            log.exit_code = reported[1]
    return logs
