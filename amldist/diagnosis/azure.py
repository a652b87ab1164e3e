"""Logs downloaded in Azure ML's layout (an Azure ML job's, fetched with ``MLClient.jobs.download``, or
any backend's own ``download``): ``user_logs/std_log_process_NN.txt`` (NN = the global rank) and, for
``distribution: mpi``, the MPI launcher's log, found by name under the download folder.

A rank's node is its rank // ``process_count_per_instance``; its end time is the last timestamp its log
carries (Azure ML records none per rank: a downloaded file's time says nothing), and its exit code comes
from the MPI log when that names it, else from the backend's record.
"""

from __future__ import annotations

from amldist.diagnosis.folder import rank_files, rank_logs, walk
from amldist.diagnosis.logs import mpi_failure, read_tail
from amldist.diagnosis.signatures import RankLog


def collect(folder: str, per_node: int | None) -> list[RankLog]:
    """Every rank's log in the downloaded folder's ``user_logs/`` as a RankLog (exit codes from the MPI log);
    read as ``--logs DIR`` reads a folder (:mod:`amldist.diagnosis.folder`: files under ./outputs never count)."""
    found = walk(folder)
    if found.user_logs is None:
        return []
    logs = rank_logs(rank_files(found.user_logs, found.skipped), per_node, lazy=False)  # the folder goes away
    reported = mpi_failure(read_tail(found.mpi_log)) if found.mpi_log else None
    for log in logs:
        if reported is not None and log.rank == reported[0]:
            log.exit_code = reported[1]
    return logs
