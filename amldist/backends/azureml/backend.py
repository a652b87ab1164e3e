"""The Azure ML backend of ``amldist submit``: azure-ai-ml's ``MLClient`` does the talking.

- ``plan``: pure (no credentials, no network, nothing written): the workspace (from the flags,
  ``AZUREML_ARM_*`` or ``config.json``; a plan without one is still printable), the code
  snapshot's files (:func:`amldist.azure_sdk.code_snapshot.plan_snapshot`: the user's files
  plus ``amldist/runtime/``), and the REST body azure-ai-ml will PUT
  (:func:`amldist.azure_sdk.entities.rest_body`). Its ``codeId`` names the snapshot that is
  uploaded, not the local folder: the real id exists only after the upload.
- ``describe``: that plan as one JSON object (``workspace``, ``code_snapshot``, ``warnings``,
  ``request``), secret-looking values masked; what ``--dry-run`` prints.
- ``run``: writes exactly the planned snapshot into a temporary folder, turns the planned job
  into its azure-ai-ml entity (:func:`amldist.azure_sdk.entities.to_azure`) and sends it with
  ``MLClient(DefaultAzureCredential(), ...).jobs.create_or_update(job)``. Prints
  ``job: NAME`` and ``studio: URL`` on stdout; with ``--stream``, follows the logs
  with ``ml_client.jobs.stream(name)`` and exits 1 when the job fails.

Errors from Azure become one ``error:`` line: no workspace or no token (exit 2, with the ways
to set them), the service refusing a request (exit 1, with its status and message), Azure
unreachable (exit 1). azure-ai-ml and azure-identity are imported inside the methods only, so
``amldist --help`` never pays for them.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
from dataclasses import dataclass, field

from amldist.azure_sdk.code_snapshot import SnapshotPlan
from amldist.backends.azureml.workspace import Workspace
from amldist.errors import INSTALL_AZURE, UserError
from amldist.submit.prepared import Prepared, SubmitOptions

SIGN_IN_HINT = (
    "sign in with `az login` (or `az login --use-device-code`), or set AZURE_CLIENT_ID, AZURE_TENANT_ID "
    "and AZURE_CLIENT_SECRET for a service principal; DefaultAzureCredential tries these in turn"
)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


@dataclass
class AzurePlan:
    """Everything a submission will do; ``run`` acts on this and nothing else."""

    job: object  # the amldist.model CommandJob to send (a copy, named by --name)
    base_dir: str  # where the job's relative paths resolve
    workspace: Workspace | None  # None: not configured; ``workspace_problem`` says why
    workspace_problem: UserError | None
    snapshot: SnapshotPlan
    body: dict  # the REST body azure-ai-ml will PUT (codeId: the snapshot to upload)
    stream: bool = False
    warnings: list[str] = field(default_factory=list)


class AzureMLBackend:
    """Submit to an Azure ML workspace.

    ``credential``, ``client_kwargs`` (passed to ``MLClient``, e.g. ``transport=``),
    ``environ`` and ``cwd`` exist for tests and embedding; by default they are
    ``DefaultAzureCredential()``, nothing, ``os.environ`` and the current directory.
    """

    def __init__(self, *, credential=None, client_kwargs: dict | None = None, environ=None, cwd: str | None = None):
        self.credential = credential
        self.client_kwargs = dict(client_kwargs or {})
        self.environ = environ
        self.cwd = cwd

    # --- what will be sent (pure) -------------------------------------------------------------
    def plan(self, prepared: Prepared, options: SubmitOptions) -> AzurePlan:
        from amldist.azure_sdk.code_snapshot import plan_snapshot
        from amldist.backends.azureml.workspace import require_workspace
        from amldist.azure_sdk.entities import rest_body

        _require_azure(need_identity=False)  # the snapshot and the body are azure-ai-ml's: one line, not a crash
        if hasattr(prepared, "graph"):  # a pipeline: amldist.backends.azureml.pipeline
            from amldist.backends.azureml import pipeline

            return pipeline.plan_pipeline(prepared, options, environ=os.environ if self.environ is None else
                                          self.environ, cwd=self.cwd or os.getcwd())
        job = copy.deepcopy(prepared.job)  # the prepared job is never changed in place
        if options.name:
            job.name = options.name
        try:
            workspace, problem = require_workspace(
                os.environ if self.environ is None else self.environ, self.cwd or os.getcwd(),
                subscription=options.subscription, resource_group=options.resource_group,
                workspace=options.workspace), None
        except UserError as exc:
            workspace, problem = None, exc
        snapshot = plan_snapshot(job.code, prepared.base_dir, job.command)
        body = rest_body(job, base_dir=prepared.base_dir)
        if snapshot.name is not None:
            body.setdefault("properties", {})["codeId"] = (
                f"<uploaded at submit: {snapshot.name}/, {len(snapshot.files)} files"
                + (", amldist/runtime/ included>" if snapshot.shim_added else ">"))
        return AzurePlan(job, prepared.base_dir, workspace, problem, snapshot, body, options.stream,
                         list(snapshot.warnings))

    def describe(self, plan: AzurePlan) -> str:
        from amldist.rules.secrets import mask_tree

        if not isinstance(plan, AzurePlan):
            from amldist.backends.azureml.pipeline import describe_pipeline

            return describe_pipeline(plan)

        snapshot = plan.snapshot
        shown = {
            "workspace": None if plan.workspace is None else {
                "subscription_id": plan.workspace.subscription_id,
                "resource_group": plan.workspace.resource_group,
                "workspace_name": plan.workspace.workspace_name,
            },
            "code_snapshot": None if snapshot.name is None else {
                "name": snapshot.name, "files": sorted(snapshot.files), "runtime_added": snapshot.shim_added,
            },
            "warnings": plan.warnings + ([] if plan.workspace else [f"no workspace yet: {plan.workspace_problem}"]),
            "request": {"method": "PUT", "job": plan.job.name, "body": mask_tree(plan.body)},
        }
        return json.dumps(shown, indent=2)

    # --- sending it (the only step that acts) -------------------------------------------------
    def run(self, plan: AzurePlan) -> int:
        from amldist.azure_sdk.code_snapshot import materialized
        from amldist.azure_sdk.entities import to_azure

        if plan.workspace is None:
            raise plan.workspace_problem
        workspace = plan.workspace
        _require_azure(need_identity=self.credential is None)
        print(f"workspace: {workspace.describe()}", file=sys.stderr)
        # azure-ai-ml logs "This is an experimental class" for schemas every job uses;
        # nothing a user can act on.
        logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
        if not isinstance(plan, AzurePlan):  # a pipeline
            from amldist.backends.azureml.pipeline import submit_pipeline

            created = submit_pipeline(plan, client_for=self._client, call=_azure_call)
            print(f"job: {created.name}")
            print(f"studio: {created.studio_url}")
            self.created = created  # for submit --format json / --web
            return self._stream(self._client(workspace), created, workspace) if plan.stream else 0
        for message in plan.warnings:
            _warn(message)
        job = copy.deepcopy(plan.job)
        with materialized(plan.snapshot) as written:
            if written.path is not None:
                job.code = written.path
            entity = to_azure(job, base_dir=plan.base_dir, add_runtime=False)  # the snapshot above holds it
            client = self._client(workspace)
            created = _azure_call(lambda: client.jobs.create_or_update(entity), workspace)
        print(f"job: {created.name}")
        print(f"studio: {created.studio_url}")
        self.created = created  # for submit --format json / --web
        sys.stdout.flush()
        if plan.stream:
            return self._stream(client, created, workspace)
        return 0

    def _client(self, workspace):
        from azure.ai.ml import MLClient

        import amldist

        credential = self.credential
        if credential is None:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        kwargs = {"user_agent": f"amldist/{amldist.__version__}", **self.client_kwargs}
        return MLClient(credential, workspace.subscription_id, workspace.resource_group,
                        workspace.workspace_name, **kwargs)

    def _stream(self, client, created, workspace) -> int:
        from azure.ai.ml.exceptions import JobException

        try:
            _azure_call(lambda: client.jobs.stream(created.name), workspace)
        except JobException as exc:
            text = " ".join(str(getattr(exc, "message", exc)).split())
            if "interrupted" in text:
                print(f"stopped following the logs; job {created.name} keeps running: {created.studio_url}",
                      file=sys.stderr)
                return 130
            raise UserError(f"job {created.name} failed: {text[:2000]}",
                            hint=f"see the logs in the studio: {created.studio_url}", exit_code=1) from None
        return 0


def _require_azure(*, need_identity: bool) -> None:
    """azure-ai-ml (and azure-identity) are an extra: say how to get them, not a traceback."""
    import importlib

    for module, package in (("azure.ai.ml", "azure-ai-ml"), ("azure.identity", "azure-identity")):
        if module == "azure.identity" and not need_identity:
            continue
        try:
            importlib.import_module(module)
        except ImportError:
            raise UserError(f"submitting to Azure ML (and its --dry-run) needs {package}, which is not installed",
                            hint=f"{INSTALL_AZURE}; or run the job on this machine with --local") from None


def _first_line(text) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else str(text)


def _azure_call(call, workspace):
    """Run one azure-ai-ml call; Azure's failures become one-line UserErrors."""
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ServiceRequestError

    try:
        return call()
    except Exception as exc:  # unwrap azure-ai-ml's wrappers (AssetException "Error with code: ...")
        cause = exc
        while cause is not None and not isinstance(
            cause, (ClientAuthenticationError, HttpResponseError, ServiceRequestError)
        ):
            cause = cause.__cause__
        if isinstance(cause, ClientAuthenticationError):
            raise UserError(f"cannot get an Azure access token: {_first_line(cause.message)}",
                            hint=SIGN_IN_HINT, exit_code=2) from None
        if isinstance(cause, HttpResponseError):
            status = cause.status_code
            code = getattr(cause.error, "code", None) if getattr(cause, "error", None) else None
            detail = getattr(cause.error, "message", None) if getattr(cause, "error", None) else None
            hint = f"check the workspace: {workspace.describe()}" if status in (401, 403, 404) else None
            raise UserError(
                f"Azure ML refused the request ({status}{' ' + code if code else ''}): "
                f"{_first_line(detail or cause.message or cause.reason)}",
                hint=hint, exit_code=1) from None
        if isinstance(cause, ServiceRequestError):
            raise UserError(f"cannot reach Azure: {_first_line(cause.message)}",
                            hint="check the network connection and proxy settings", exit_code=1) from None
        from azure.ai.ml.exceptions import JobException, MlException

        if isinstance(exc, MlException) and not isinstance(exc, JobException):
            raise UserError(f"azure-ai-ml: {' '.join(str(exc.message).split())}", exit_code=1) from None
        raise


# Public names for the other Azure verbs (amldist.backends.azureml.jobs): one error mapping for all.
azure_call = _azure_call
require_azure = _require_azure
