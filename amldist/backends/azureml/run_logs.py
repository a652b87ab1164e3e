"""What ``amldist job diagnose`` reads of an Azure ML job: every rank's log, fetched with ``MLClient.jobs.download``.

``az ml job stream`` (and ``MLClient.jobs.stream``) show rank 0's log only; the logs of every rank are in the
job's artifacts: ``user_logs/std_log_process_NN.txt`` (NN = the global rank) and, for ``distribution: mpi``,
the MPI launcher's log. They are downloaded into the folder the diagnosis gives, where it finds them by
name. For a pipeline job its child jobs are listed and the failed one that started first is fetched.
"""

from __future__ import annotations

from amldist.backends.azureml.jobs import call, download
from amldist.backends.base import RunLogs
from amldist.errors import UserError

ENDED = ("Completed", "Failed", "Canceled", "NotResponding", "Paused")


def job_dict(entity) -> dict:
    """The parts of an azure-ai-ml job entity that the diagnosis weighs, as a spec's YAML has them."""
    distribution = getattr(entity, "distribution", None)
    resources = getattr(entity, "resources", None)
    return {
        "environment_variables": dict(getattr(entity, "environment_variables", None) or {}),
        "distribution": {"process_count_per_instance": getattr(distribution, "process_count_per_instance", None)},
        "resources": {"instance_type": getattr(resources, "instance_type", None),
                      "instance_count": getattr(resources, "instance_count", None)},
    }


def status_of(entity) -> str:
    return getattr(entity.status, "value", entity.status)


def run_logs(client, workspace, name: str, folder: str) -> RunLogs:
    """Job ``name``'s logs (a pipeline: its first failed step's) downloaded into ``folder``."""
    entity = call(lambda: client.jobs.get(name), workspace, name=name)
    status = status_of(entity)
    if status not in ENDED:
        raise UserError(f"job {name} is {status}; its logs can be diagnosed once it has ended", exit_code=1,
                        hint="'amldist job cancel NAME' ends a job that hangs; with AMLDIST_STALL_TIMEOUT set "
                        "it ends by itself, naming the stuck rank")
    step = None
    if getattr(entity, "type", None) == "pipeline":
        children = call(lambda: list(client.jobs.list(parent_job_name=name)), workspace, name=name)
        failed = [c for c in children if status_of(c) == "Failed"]
        if not failed:
            return RunLogs(name, status, "azureml")
        started = lambda c: str((getattr(c, "properties", None) or {}).get("StartTimeUtc") or "")
        child = sorted(failed, key=started)[0]
        step = getattr(child, "display_name", None) or child.name
        entity = call(lambda: client.jobs.get(child.name), workspace, name=child.name)
    download(client, workspace, entity.name, folder)
    said = service_error(client, workspace, entity.name) if status_of(entity) == "Failed" else None
    return RunLogs(name, status, "azureml", folder=folder, spec=job_dict(entity), log_times=False, step=step,
                   service_error=said)


def service_error(client, workspace, name: str) -> str | None:
    """The run's error as Azure ML states it (``code: message``; a preemption is said only there), from the run
    history's details, where ``MLClient.jobs.stream`` reads it too: azure-ai-ml has no public call for it, so
    this uses the run operations its ``jobs`` holds. None when it cannot be read: the logs still speak."""
    runs = getattr(client.jobs, "_runs_operations", None)
    try:
        details = call(lambda: runs.get_run_details(name), workspace, name=name)
    except (UserError, AttributeError):
        return None
    error = getattr(getattr(details, "error", None), "error", None)
    if error is None or not (error.message or error.code):
        return None
    return f"{error.code}: {error.message}" if error.code else str(error.message)
