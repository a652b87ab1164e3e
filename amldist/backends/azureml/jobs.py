"""``amldist job list/show/logs/cancel/download`` for Azure ML jobs, through azure-ai-ml.

Each verb is one ``MLClient.jobs`` call, as ``az ml job`` makes it: ``list``, ``get``,
``stream``, ``begin_cancel``, ``download``. The workspace comes from the same flags,
``AZUREML_ARM_*`` variables and ``config.json`` as ``amldist submit``
(:mod:`amldist.backends.azureml.workspace`); the credential and client options from
:class:`amldist.backends.azureml.backend.AzureMLBackend` (so tests give both in one place), and
Azure's failures become the same one-line errors (:func:`amldist.backends.azureml.backend.azure_call`).

``show`` gives what the service knows: status, start, duration, outputs with their URIs and
the studio URL. Per-rank exit codes are not part of a job's record on Azure ML (they are in
the logs), so they are left out rather than guessed.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import datetime, timezone

from amldist.errors import UserError


def connect(*, workspace=None, resource_group=None, subscription=None, environ=None, cwd=None):
    """(MLClient, Workspace) for the workspace the flags, the environment or config.json name."""
    from amldist.backends.azureml import backend as azure_backend
    from amldist.backends.azureml.workspace import require_workspace

    found = require_workspace(os.environ if environ is None else environ, cwd or os.getcwd(),
                              subscription=subscription, resource_group=resource_group, workspace=workspace)
    settings = azure_backend.AzureMLBackend()  # looked up now: tests replace it with a fake-wired one
    azure_backend.require_azure(need_identity=settings.credential is None)
    logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
    from azure.ai.ml import MLClient

    import amldist

    credential = settings.credential
    if credential is None:
        from azure.identity import DefaultAzureCredential

        credential = DefaultAzureCredential()
    kwargs = {"user_agent": f"amldist/{amldist.__version__}", **settings.client_kwargs}
    client = MLClient(credential, found.subscription_id, found.resource_group, found.workspace_name, **kwargs)
    return client, found


def call(action, workspace, *, name: str | None = None):
    """One azure-ai-ml call; a job that does not exist is exit 2 (like a missing file), naming it."""
    from azure.core.exceptions import ResourceNotFoundError

    from amldist.backends.azureml.backend import azure_call

    try:
        return azure_call(action, workspace)
    except UserError as exc:
        if name is not None and "(404" in exc.message:
            raise UserError(f"no job named {name!r} in workspace {workspace.workspace_name}",
                            hint="'amldist job list' shows the workspace's jobs") from None
        raise
    except ResourceNotFoundError:  # pragma: no cover - azure_call maps HttpResponseError first
        raise UserError(f"no job named {name!r} in workspace {workspace.workspace_name}") from None


def _time(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def _parse_time(text) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def describe(job) -> dict:
    """A job as ``show --format json`` prints it (the same keys as a local run where they apply)."""
    properties = dict(getattr(job, "properties", None) or {})
    started = _parse_time(properties.get("StartTimeUtc"))
    ended = _parse_time(properties.get("EndTimeUtc"))
    created = getattr(getattr(job, "creation_context", None), "created_at", None)
    duration = None
    if started is not None:
        duration = round(((ended or datetime.now(timezone.utc)) - started).total_seconds(), 3)
    outputs = {}
    for name, output in (getattr(job, "outputs", None) or {}).items():
        path = getattr(output, "path", None)
        outputs[name] = {"uri": path, "type": getattr(output, "type", None)}
    return {
        "name": job.name, "backend": "azureml", "status": getattr(job.status, "value", job.status),
        "display_name": getattr(job, "display_name", None),
        "experiment": getattr(job, "experiment_name", None), "compute": getattr(job, "compute", None),
        "created": _time(created), "start_time": _time(started), "end_time": _time(ended),
        "duration_seconds": duration, "outputs": outputs, "studio_url": getattr(job, "studio_url", None),
    }


def show_text(job: dict) -> str:
    duration = job.get("duration_seconds")
    lines = [f"name: {job['name']}", f"status: {job['status']}",
             f"start: {job.get('start_time') or job.get('created') or '-'}",
             f"duration: {duration:.1f}s" if isinstance(duration, (int, float)) else "duration: -"]
    if job.get("compute"):
        lines.append(f"compute: {job['compute']}")
    for name, output in job.get("outputs", {}).items():
        lines.append(f"output {name}: {output['uri'] or '(set when the job writes it)'}")
    lines.append(f"studio: {job.get('studio_url') or '-'}")
    lines.append("per-rank exit codes: in the logs ('amldist job logs NAME' or the studio's Outputs + logs)")
    return "\n".join(lines)


def list_jobs(client, workspace, *, max_results: int | None = None) -> list[dict]:
    jobs = call(lambda: list(client.jobs.list(**({"max_results": max_results} if max_results else {}))),
                workspace)
    return [describe(job) for job in (jobs[:max_results] if max_results else jobs)]


def show(client, workspace, name: str) -> dict:
    return describe(call(lambda: client.jobs.get(name), workspace, name=name))


def logs(client, workspace, name: str) -> int:
    """Follow the job's logs to its end (``jobs.stream``); exit 1 when it fails."""
    from azure.ai.ml.exceptions import JobException

    call(lambda: client.jobs.get(name), workspace, name=name)  # a wrong name: one line, exit 2
    try:
        call(lambda: client.jobs.stream(name), workspace, name=name)
    except JobException as exc:
        text = " ".join(str(getattr(exc, "message", exc)).split())
        raise UserError(f"job {name} failed: {text[:2000]}", exit_code=1) from None
    return 0


def cancel(client, workspace, name: str, *, wait: bool = True) -> dict:
    """``jobs.begin_cancel``; waits for the service to accept it unless ``wait`` is False."""
    job = describe(call(lambda: client.jobs.get(name), workspace, name=name))
    if job["status"] in ("Completed", "Failed", "Canceled"):
        print(f"job {name} is already {job['status']}; nothing to cancel", file=sys.stderr)
        return job
    poller = call(lambda: client.jobs.begin_cancel(name), workspace, name=name)
    if wait:
        call(poller.result, workspace, name=name)
    return describe(call(lambda: client.jobs.get(name), workspace, name=name))


def download(client, workspace, name: str, destination: str, *, output_name: str | None = None,
             all_outputs: bool = False) -> None:
    """``jobs.download``: the logs to ``DIR/artifacts/``, outputs to ``DIR/named-outputs/<name>/``."""
    from azure.ai.ml.exceptions import JobException

    try:
        call(lambda: client.jobs.download(name, download_path=destination, output_name=output_name,
                                          all=all_outputs), workspace, name=name)
    except JobException as exc:  # not ended yet
        raise UserError(" ".join(str(exc.message).split()), exit_code=1) from None
