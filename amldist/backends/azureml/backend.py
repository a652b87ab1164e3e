"""The Azure ML backend of ``amldist submit``: azure-ai-ml's ``MLClient`` does the talking.

- ``dry_run``: the JSON body azure-ai-ml would PUT for the job
  (:func:`amldist.spec.azure_sdk.rest_body`), secret-looking values masked; needs no
  workspace, no credentials and no network. ``codeId`` still names the local code
  folder: a real submission uploads a snapshot of it with the runtime shim added.
- ``submit``: resolve the workspace (:mod:`amldist.backends.azureml.workspace`),
  build the code snapshot (:mod:`amldist.backends.azureml.snapshot`), turn the job
  into its azure-ai-ml entity (:func:`amldist.spec.azure_sdk.to_azure`), then
  ``MLClient(DefaultAzureCredential(), ...).jobs.create_or_update(job)``. Prints
  ``job: NAME`` and ``studio: URL`` on stdout; with ``--stream``, follows the logs
  with ``ml_client.jobs.stream(name)`` and exits 1 when the job fails.

Errors from Azure become one ``error:`` line: no token (exit 2, with the ways to
sign in), the service refusing a request (exit 1, with its status and message),
Azure unreachable (exit 1). azure-ai-ml and azure-identity are imported inside the
methods only, so ``amldist --help`` never pays for them.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys

from amldist.backends import Prepared, SubmitOptions
from amldist.errors import UserError

SIGN_IN_HINT = (
    "sign in with `az login` (or `az login --use-device-code`), or set AZURE_CLIENT_ID, AZURE_TENANT_ID "
    "and AZURE_CLIENT_SECRET for a service principal; DefaultAzureCredential tries these in turn"
)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


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

    # --- what would be sent -----------------------------------------------------------------
    def dry_run(self, prepared: Prepared, options: SubmitOptions) -> str:
        from amldist.spec.azure_sdk import rest_body
        from amldist.spec.secrets import mask_tree

        body = rest_body(self._job(prepared, options), base_dir=prepared.base_dir)
        return json.dumps(mask_tree(body), indent=2)

    # --- sending it --------------------------------------------------------------------------
    def submit(self, prepared: Prepared, options: SubmitOptions) -> int:
        from amldist.backends.azureml.snapshot import code_snapshot
        from amldist.backends.azureml.workspace import require_workspace
        from amldist.spec.azure_sdk import to_azure

        workspace = require_workspace(
            os.environ if self.environ is None else self.environ,
            self.cwd or os.getcwd(),
            subscription=options.subscription, resource_group=options.resource_group,
            workspace=options.workspace,
        )
        _require_azure(need_identity=self.credential is None)
        job = self._job(prepared, options)
        print(f"workspace: {workspace.describe()}", file=sys.stderr)
        # azure-ai-ml logs "This is an experimental class" for schemas every job uses;
        # nothing a user can act on.
        logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
        with code_snapshot(job.code, prepared.base_dir, job.command) as snapshot:
            for message in snapshot.warnings:
                _warn(message)
            if snapshot.path is not None:
                job.code = snapshot.path
            entity = to_azure(job, base_dir=prepared.base_dir)
            client = self._client(workspace)
            created = _azure_call(lambda: client.jobs.create_or_update(entity), workspace)
        print(f"job: {created.name}")
        print(f"studio: {created.studio_url}")
        sys.stdout.flush()
        if options.stream:
            return self._stream(client, created, workspace)
        return 0

    def _job(self, prepared: Prepared, options: SubmitOptions):
        """A copy of the prepared job (never changed in place), named by ``--name`` if given."""
        job = copy.deepcopy(prepared.job)
        if options.name:
            job.name = options.name
        return job

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
            raise UserError(f"submitting to Azure ML needs {package}, which is not installed",
                            hint="pip install 'amldist[azure]'; or run the job on this machine with --local"
                            ) from None


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
