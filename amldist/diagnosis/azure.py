"""Diagnosing an Azure ML job from its logs, fetched with ``MLClient.jobs.download``.

``az ml job stream`` (and ``MLClient.jobs.stream``) show rank 0's log only; the logs of every rank
are in the job's artifacts: ``user_logs/std_log_process_NN.txt`` (NN = the global rank) and, for
``distribution: mpi``, the MPI launcher's log. They are downloaded into a temporary folder and
read like a local run's. A rank's node is its rank // ``process_count_per_instance``; its end time
is the last timestamp its log carries (Azure ML records none per rank), and its exit code comes
from the MPI log when that names it. For a pipeline job, its child jobs are listed, the failed
step that started first is picked and diagnosed the same way.
"""

from __future__ import annotations

import os
import tempfile

from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.folder import rank_files, rank_logs, walk
from amldist.diagnosis.logs import job_context, mpi_failure, read_tail
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


def job_dict(entity) -> dict:
    """The parts of an azure-ai-ml job entity that signatures weigh, as a spec's YAML has them."""
    distribution = getattr(entity, "distribution", None)
    resources = getattr(entity, "resources", None)
    return {
        "environment_variables": dict(getattr(entity, "environment_variables", None) or {}),
        "distribution": {"process_count_per_instance": getattr(distribution, "process_count_per_instance", None)},
        "resources": {"instance_type": getattr(resources, "instance_type", None),
                      "instance_count": getattr(resources, "instance_count", None)},
    }


def diagnose_entity(client, workspace, entity, *, vm_size: str | None = None) -> Diagnosis:
    """Download ``entity``'s logs and diagnose them."""
    from amldist.backends.azureml.jobs import download

    name = entity.name
    job = job_dict(entity)
    status = getattr(entity.status, "value", entity.status)
    with tempfile.TemporaryDirectory(prefix="amldist-diagnose-") as folder:
        download(client, workspace, name, folder)
        logs = collect(folder, job["distribution"]["process_count_per_instance"])
        for log in logs:
            log.log = os.path.relpath(log.log, folder)  # the path inside the job's artifacts
        ctx = job_context(job, len(logs), vm_size)
        return diagnose(logs, ctx, job=name, status=status, backend="azureml")


def diagnose_job(name: str, *, workspace=None, resource_group=None, subscription=None,
                 vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of Azure ML job ``name`` (a pipeline: its first failed step's)."""
    from amldist.backends import get_backend
    from amldist.backends.azureml.jobs import call
    from amldist.errors import UserError

    backend = get_backend("azureml", workspace=workspace, resource_group=resource_group, subscription=subscription)
    client, found = backend.client(), backend.workspace()
    entity = call(lambda: client.jobs.get(name), found, name=name)
    status = getattr(entity.status, "value", entity.status)
    if status not in ("Completed", "Failed", "Canceled", "NotResponding", "Paused"):
        raise UserError(f"job {name} is {status}; its logs can be diagnosed once it has ended", exit_code=1,
                        hint="'amldist job cancel NAME' ends a job that hangs; with AMLDIST_STALL_TIMEOUT set "
                        "it ends by itself, naming the stuck rank")
    if getattr(entity, "type", None) != "pipeline":
        return diagnose_entity(client, found, entity, vm_size=vm_size)
    children = call(lambda: list(client.jobs.list(parent_job_name=name)), found, name=name)
    failed = [c for c in children if getattr(c.status, "value", c.status) == "Failed"]
    if not failed:
        return Diagnosis(name, status, "azureml")
    started = lambda c: str((getattr(c, "properties", None) or {}).get("StartTimeUtc") or "")
    step = sorted(failed, key=started)[0]
    result = diagnose_entity(client, found, call(lambda: client.jobs.get(step.name), found, name=step.name),
                             vm_size=vm_size)
    result.job, result.status = name, status
    result.step = getattr(step, "display_name", None) or step.name
    return result
