"""``amldist job list/show/logs/cancel/download`` for Azure ML jobs, through azure-ai-ml.

Each verb is one ``MLClient.jobs`` call, as ``az ml job`` makes it: ``list``, ``get``,
``stream``, ``begin_cancel``, ``download``, on the one ``MLClient`` that
:class:`amldist.backends.azureml.backend.AzureMLBackend` builds (the workspace from the same flags,
``AZUREML_ARM_*`` variables and ``config.json`` as ``amldist submit``), and Azure's failures become
the same one-line errors (:func:`amldist.backends.azureml.backend.azure_call`). Each verb returns a
:class:`~amldist.backends.base.JobRecord` (:func:`record_of`), pipelines (``type: pipeline``) included.

``show`` gives what the service knows: status, start, duration, outputs with their URIs and
the studio URL. Per-rank exit codes are not part of a job's record on Azure ML (they are in
the logs), so they are left out rather than guessed.
"""

from __future__ import annotations

import dataclasses
import sys

from amldist.backends.azureml.azure_calls import azure_call
from amldist.backends.azureml.records import record_of, show_text
from amldist.backends.base import JobRecord, StepRecord
from amldist.errors import UserError


def call(action, workspace, *, name: str | None = None):
    """One azure-ai-ml call; a job that does not exist is exit 2 (like a missing file), naming it."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        return azure_call(action, workspace)
    except UserError as exc:
        if name is not None and "(404" in exc.message:
            raise UserError(f"no job named {name!r} in workspace {workspace.workspace_name}",
                            hint="'amldist job list' shows the workspace's jobs") from None
        raise
    except ResourceNotFoundError:  # pragma: no cover - azure_call maps HttpResponseError first
        raise UserError(f"no job named {name!r} in workspace {workspace.workspace_name}") from None


def list_jobs(client, workspace, *, max_results: int | None = None, properties: str | None = None) -> list[JobRecord]:
    """The workspace's jobs; ``properties`` (``name=value,...``) asks the service for those that have them."""
    filters = {**({"max_results": max_results} if max_results else {}), **({"properties": properties}
                                                                          if properties else {})}
    jobs = call(lambda: list(client.jobs.list(**filters)), workspace)
    return [record_of(job) for job in (jobs[:max_results] if max_results else jobs)]


def show(client, workspace, name: str) -> JobRecord:
    """The job; a pipeline with its steps (its child jobs)."""
    record = record_of(call(lambda: client.jobs.get(name), workspace, name=name))
    if record.kind != "pipeline":
        return record
    return dataclasses.replace(record, steps=steps_of(client, workspace, name))


def steps_of(client, workspace, name: str) -> tuple[StepRecord, ...]:
    """A pipeline's steps: its child jobs, named by their display name (the step's name in the YAML)."""
    children = call(lambda: list(client.jobs.list(parent_job_name=name)), workspace, name=name)
    steps = []
    for child in children:
        record = record_of(child)
        steps.append(StepRecord(name=record.details.get("display_name") or child.name, status=record.status,
                                start_time=record.start_time, end_time=record.end_time,
                                duration_seconds=record.duration_seconds, job=child.name))
    return tuple(steps)


def step_job(client, workspace, name: str, step: str) -> str:
    """The job name of pipeline ``name``'s step ``step`` (its name in the YAML, or the child job's own)."""
    steps = steps_of(client, workspace, name)
    for found in steps:
        if step in (found.name, found.job):
            return found.job
    raise UserError(f"job {name} has no step {step!r}",
                    hint=f"its steps: {', '.join(s.name for s in steps) or 'none (not a pipeline)'}")


def logs(client, workspace, name: str) -> JobRecord:
    """Follow the job's logs to its end (``jobs.stream``); exit 1 when it fails."""
    from azure.ai.ml.exceptions import JobException

    call(lambda: client.jobs.get(name), workspace, name=name)  # a wrong name: one line, exit 2
    try:
        call(lambda: client.jobs.stream(name), workspace, name=name)
    except JobException as exc:
        text = " ".join(str(getattr(exc, "message", exc)).split())
        raise UserError(f"job {name} failed: {text[:2000]}", exit_code=1) from None
    return record_of(call(lambda: client.jobs.get(name), workspace, name=name))


def cancel(client, workspace, name: str, *, wait: bool = True) -> JobRecord:
    """``jobs.begin_cancel``; waits for the service to accept it unless ``wait`` is False."""
    job = record_of(call(lambda: client.jobs.get(name), workspace, name=name))
    if job.ended:
        print(f"job {name} is already {job.status}; nothing to cancel", file=sys.stderr)
        return job
    poller = call(lambda: client.jobs.begin_cancel(name), workspace, name=name)
    if wait:
        call(poller.result, workspace, name=name)
    return record_of(call(lambda: client.jobs.get(name), workspace, name=name))


def download(client, workspace, name: str, destination: str, *, output_name: str | None = None,
             all_outputs: bool = False) -> None:
    """``jobs.download``: the logs to ``DIR/artifacts/``, outputs to ``DIR/named-outputs/<name>/``."""
    from azure.ai.ml.exceptions import JobException

    try:
        call(lambda: client.jobs.download(name, download_path=destination, output_name=output_name,
                                          all=all_outputs), workspace, name=name)
    except JobException as exc:  # not ended yet
        raise UserError(" ".join(str(exc.message).split()), exit_code=1) from None
