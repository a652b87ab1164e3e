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
import re
import tempfile

from amldist.diagnosis import collectives
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.logs import PROCESS_LOG, job_context, last_timestamp, mpi_failure, read_tail
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
        found = collectives.find_folder(folder)  # the ranks' Flight Recorder dumps, when the job used the shim
        evidence = collectives.read_folder(found) if found else None
        return diagnose(logs, ctx, job=name, status=status, backend="azureml", evidence=evidence)


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
