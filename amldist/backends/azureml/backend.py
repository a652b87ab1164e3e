"""The Azure ML backend of ``amldist submit``: azure-ai-ml's ``MLClient`` does the talking.

- ``plan``: pure (no credentials, no network, nothing written): the workspace (from the flags,
  ``AZUREML_ARM_*`` or ``config.json``; a plan without one is still printable), the code
  snapshot's files (:func:`amldist.azure_sdk.code_snapshot.plan_snapshot`: the user's files
  plus ``amldist/runtime/``), and the REST body azure-ai-ml will PUT
  (:func:`amldist.azure_sdk.entities.rest_body`). Its ``codeId`` names the snapshot that is
  uploaded, not the local folder: the real id exists only after the upload.
- ``AzurePlan.describe()``: that plan as one JSON object (``workspace``, ``code_snapshot``, ``warnings``,
  ``request``), secret-looking values masked; what ``--dry-run`` prints.
- ``run``: writes exactly the planned snapshot into a temporary folder, turns the planned job
  into its azure-ai-ml entity (:func:`amldist.azure_sdk.entities.to_azure`) and sends it with
  ``MLClient(DefaultAzureCredential(), ...).jobs.create_or_update(job)``. Prints
  ``job: NAME`` and ``studio: URL`` on stdout and returns the job's record; with ``--stream``,
  follows the logs with ``ml_client.jobs.stream(name)`` and exits 1 when the job fails.
- ``--retry N``: each attempt sent as above with a shared checkpoint output and properties linking it to the
  first, then watched until it ends (:meth:`AzureMLBackend.wait_for_end`); what is Azure ML's in the retries
  is :mod:`amldist.backends.azureml.retries`, the loop is every backend's (:mod:`amldist.diagnosis.retry`).
- the job verbs (``list/show/logs/cancel/download``): :mod:`amldist.backends.azureml.jobs`, through
  the one ``MLClient`` this backend builds (:meth:`AzureMLBackend.client`, built once per workspace).

Errors from Azure become one ``error:`` line: no workspace or no token (exit 2, with the ways
to set them), the service refusing a request (exit 1, with its status and message), Azure
unreachable (exit 1). azure-ai-ml and azure-identity are imported inside the methods only, so
``amldist --help`` never pays for them.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml
from amldist.backends.azureml.azure_calls import SIGN_IN_HINT, azure_call, require_azure
from amldist.backends.azureml.workspace import Workspace
from amldist.backends.base import RETRY_FLAGS, Backend, Flag, JobRecord, Options, Plan, RunLogs
from amldist.errors import UserError
from amldist.submit.prepared import PreparedWork

if TYPE_CHECKING:  # pragma: no cover  (the job verbs import this module: planning's imports wait for plan())
    from amldist.azure_sdk.code_snapshot import SnapshotPlan


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class AzureOptions(Options):
    workspace: str | None = None  # None: from AZUREML_ARM_* or config.json, as azure-ai-ml does
    resource_group: str | None = None
    subscription: str | None = None
    retry: int | None = None  # --retry N: read by the retry loop (amldist.diagnosis.retry), not by plan()
    retry_on: str | None = None  # --retry-on CAUSES: the same
    checkpoints: bool = False  # an attempt of a retried run: the shared checkpoint output (azureml/retries)
    checkpoint_dir: str | None = None  # that output's datastore path, the first attempt's (the loop passes it)
    attempt_of: str | None = None  # the first attempt's job name
    attempt: int = 1  # which attempt this job is
    inject: tuple = ()  # the fault drill is local and Slurm only: a non-empty one is refused in one line


@dataclass(frozen=True)
class AzurePlan(Plan):
    """Everything a job submission will do; ``run`` acts on this and nothing else."""

    backend = "azureml"
    kind = "job"

    job: object  # the amldist.model CommandJob to send (a copy, named by --name)
    base_dir: str  # where the job's relative paths resolve
    workspace: Workspace | None  # None: not configured; ``workspace_problem`` says why
    workspace_problem: UserError | None
    snapshot: SnapshotPlan
    body: dict  # the REST body azure-ai-ml will PUT (codeId: the snapshot to upload)
    stream: bool = False
    warnings: list[str] = field(default_factory=list)
    retrying: bool = False  # an attempt of a retried run: a failure is the loop's to weigh, not an error here

    @property
    def name(self) -> str | None:
        return self.job.name

    def describe(self) -> str:
        return json.dumps(self.to_json(), indent=2)

    def to_json(self) -> dict:
        from amldist.rules import snapshot_preview
        from amldist.rules.secrets import mask_tree

        snapshot = self.snapshot
        preview = snapshot_preview.of_mapping(snapshot.files)  # size, largest entries, what not to upload
        return {
            "workspace": None if self.workspace is None else {
                "subscription_id": self.workspace.subscription_id,
                "resource_group": self.workspace.resource_group,
                "workspace_name": self.workspace.workspace_name,
            },
            "code_snapshot": None if snapshot.name is None else {
                "name": snapshot.name, "files": sorted(snapshot.files), "runtime_added": snapshot.shim_added,
                **preview.as_dict(),
            },
            "warnings": self.warnings + preview.warnings
            + ([] if self.workspace else [f"no workspace yet: {self.workspace_problem}"]),
            "request": {"method": "PUT", "job": self.job.name, "body": mask_tree(self.body)},
        }


@dataclass(frozen=True)
class AzurePipelineJobPlan(Plan):
    """A pipeline's submission (:mod:`amldist.backends.azureml.pipeline` plans and sends it)."""

    backend = "azureml"
    kind = "pipeline"
    pipeline: object  # amldist.backends.azureml.pipeline.AzurePipelinePlan

    @property
    def name(self) -> str | None:
        return self.pipeline.name

    @property
    def workspace(self):
        return self.pipeline.workspace

    def describe(self) -> str:
        from amldist.backends.azureml.pipeline import describe_pipeline

        return describe_pipeline(self.pipeline)

    def to_json(self) -> dict:
        return json.loads(self.describe())


class AzureMLBackend(Backend):
    """Submit to an Azure ML workspace, and the job verbs on its jobs.

    ``workspace``, ``resource_group`` and ``subscription`` say where the job verbs look (None: from
    ``AZUREML_ARM_*`` or ``config.json``); ``credential``, ``client_kwargs`` (passed to ``MLClient``,
    e.g. ``transport=``), ``environ`` and ``cwd`` exist for tests and embedding; by default they are
    ``DefaultAzureCredential()``, nothing, ``os.environ`` and the current directory.
    """

    name = "azureml"
    options_type = AzureOptions
    submit_flags = (
        Flag(("-w", "--workspace-name", "--workspace"), "workspace", "Azure ML workspace name", {"metavar": "W"}),
        Flag(("-g", "--resource-group"), "resource_group", "resource group of the workspace", {"metavar": "G"}),
        Flag(("--subscription",), "subscription", "subscription id of the workspace", {"metavar": "S"}),
        *RETRY_FLAGS,
    )
    job_flags = submit_flags[:2] + (Flag(("--subscription", "-s"), "subscription", "subscription id",
                                         {"metavar": "S"}),)

    def __init__(self, *, credential=None, client_kwargs: dict | None = None, environ=None, cwd: str | None = None,
                 workspace: str | None = None, resource_group: str | None = None, subscription: str | None = None,
                 poll_seconds: float | None = None):
        self.poll_seconds = poll_seconds  # wait_for_end's interval between two jobs.get (None: retries.POLL_SECONDS)
        self._sent_to = None  # the workspace run() sent a job to: where its retries and diagnosis look
        self.credential = credential
        self.client_kwargs = dict(client_kwargs or {})
        self.environ = environ
        self.cwd = cwd
        self.where = {"workspace": workspace, "resource_group": resource_group, "subscription": subscription}
        self._clients: dict = {}

    # --- what will be sent (pure) -------------------------------------------------------------
    def plan(self, prepared: PreparedWork, options) -> AzurePlan | AzurePipelineJobPlan:
        """As every backend plans (the contract's dispatch), after one conversion: a job with a value output
        is sent as the one step of a pipeline, since only a pipeline step takes one."""
        from amldist.backends.azureml import component_pipeline, retries

        require_azure(need_identity=False)  # the snapshot and the body are azure-ai-ml's: one line, not a crash
        if not component_pipeline.needs_pipeline(prepared):
            return super().plan(prepared, options)
        retries.refuse(options, prepared.source, "a job with a value output, which is sent as a one-step pipeline")
        sent_as = component_pipeline.note(prepared)
        planned = super().plan(component_pipeline.as_one_step_pipeline(prepared, self.cwd or os.getcwd()), options)
        planned.pipeline.warnings.insert(0, sent_as)
        return planned

    def plan_pipeline(self, prepared, options) -> AzurePipelineJobPlan:
        from amldist.backends.azureml import pipeline, retries

        retries.refuse(options, prepared.source, "a pipeline")
        environ = os.environ if self.environ is None else self.environ
        return AzurePipelineJobPlan(pipeline.plan_pipeline(prepared, options, environ=environ,
                                                           cwd=self.cwd or os.getcwd()))

    def plan_sweep(self, prepared, options) -> AzurePlan:
        """A sweep job: its trial's code (with the runtime) and size facts (backends/azureml/sweep)."""
        from amldist.backends.azureml import retries
        from amldist.backends.azureml.sweep import plan_sweep

        retries.refuse(options, prepared.source, "a sweep")
        job, workspace, problem, snapshot, body = plan_sweep(
            prepared, options, environ=os.environ if self.environ is None else self.environ,
            cwd=self.cwd or os.getcwd())
        return AzurePlan(job, prepared.base_dir, workspace, problem, snapshot, body, options.stream,
                         list(snapshot.warnings))

    def plan_job(self, prepared: PreparedWork, options) -> AzurePlan:
        from amldist.azure_sdk.code_snapshot import plan_snapshot
        from amldist.azure_sdk.entities import job_name, rest_body
        from amldist.backends.azureml import retries
        from amldist.backends.azureml.workspace import workspace_or_problem
        from amldist.rules.fabric import size_variables

        retries.refuse(options, prepared.source)
        job = copy.deepcopy(prepared.job)  # the prepared job is never changed in place
        sized = size_variables(getattr(job.resources, "instance_type", None)) if job.distribution else {}
        if sized:  # the size's facts for the runtime's fabric check; the job's own values win
            job.environment_variables = {**sized, **(job.environment_variables or {})}
        job.name = job_name(options.name, job.name)
        if retries.retrying(options):  # --retry: the shared checkpoint output, the link to the other attempts
            job = retries.as_attempt(job, options, prepared.source)
        workspace, problem = workspace_or_problem(os.environ if self.environ is None else self.environ,
                                                  self.cwd or os.getcwd(), options)
        snapshot = plan_snapshot(job.code, prepared.base_dir, job.command,
                                 includes=getattr(prepared, "code_includes", ()))
        body = rest_body(job, base_dir=prepared.base_dir)
        if snapshot.name is not None:
            body.setdefault("properties", {})["codeId"] = (
                f"<uploaded at submit: {snapshot.name}/, {len(snapshot.files)} files"
                + (", amldist/runtime/ included>" if snapshot.shim_added else ">"))
        return AzurePlan(job, prepared.base_dir, workspace, problem, snapshot, body, options.stream,
                         list(snapshot.warnings), retrying=retries.retrying(options))

    # --- sending it (the only step that acts) -------------------------------------------------
    def run_job(self, plan: AzurePlan) -> JobRecord:
        if plan.workspace is None:
            raise plan.workspace_problem
        self._before_sending(plan.workspace)
        return self._sent(self._send_job(plan, plan.workspace), plan.workspace, plan.stream,
                          failure_raises=not plan.retrying)

    def run_pipeline(self, plan: AzurePipelineJobPlan) -> JobRecord:
        from amldist.backends.azureml.pipeline import submit_pipeline

        if plan.workspace is None:
            raise plan.pipeline.workspace_problem
        self._before_sending(plan.workspace)
        created = submit_pipeline(plan.pipeline, client_for=self.client, call=azure_call)
        return self._sent(created, plan.workspace, plan.pipeline.stream)

    def _before_sending(self, workspace) -> None:
        require_azure(need_identity=self.credential is None)
        self._sent_to = workspace
        print(f"workspace: {workspace.describe()}", file=sys.stderr)
        quiet_azure_ai_ml()  # its "experimental class" notices for schemas every job uses: only with --debug

    def _sent(self, created, workspace, stream: bool, *, failure_raises: bool = True) -> JobRecord:
        from amldist.backends.azureml.records import record_of

        print(f"job: {created.name}")
        print(f"studio: {created.studio_url}")
        sys.stdout.flush()
        if stream:
            return self._stream(created, workspace, failure_raises=failure_raises)
        return record_of(created)

    def _send_job(self, plan: AzurePlan, workspace):
        from amldist.azure_sdk.code_snapshot import materialized
        from amldist.azure_sdk.entities import to_azure

        from amldist.rules import snapshot_preview

        preview = snapshot_preview.of_mapping(plan.snapshot.files)
        for message in plan.warnings + preview.warnings:
            _warn(message)
        if plan.snapshot.name is not None:  # azure-ai-ml then draws the upload's progress bar
            print(preview.upload_line(plan.snapshot.name), file=sys.stderr)
        from amldist.backends.azureml.sweep import with_code

        job = copy.deepcopy(plan.job)
        with materialized(plan.snapshot) as written:
            if written.path is not None:
                job = with_code(job, written.path)
            entity = to_azure(job, base_dir=plan.base_dir, add_runtime=False)  # the snapshot above holds it
            client = self.client(workspace)
            return azure_call(lambda: client.jobs.create_or_update(entity), workspace)

    def client(self, workspace=None):
        """The one ``MLClient`` of ``workspace`` (default: the one this backend's settings name), built on
        first use and kept."""
        if workspace is None:
            workspace = self.workspace()
        key = (workspace.subscription_id, workspace.resource_group, workspace.workspace_name)
        if key not in self._clients:
            self._clients[key] = self._new_client(workspace)
        return self._clients[key]

    def workspace(self) -> Workspace:
        """The workspace the job verbs use: the settings, ``AZUREML_ARM_*`` or ``config.json``."""
        from amldist.backends.azureml.workspace import require_workspace

        if self._sent_to is not None and not any(self.where.values()):
            return self._sent_to  # after a submit: the workspace it went to (--retry watches and diagnoses there)
        return require_workspace(os.environ if self.environ is None else self.environ, self.cwd or os.getcwd(),
                                 **self.where)

    def _new_client(self, workspace):
        require_azure(need_identity=self.credential is None)
        from azure.ai.ml import MLClient

        import amldist

        quiet_azure_ai_ml()  # azure-ai-ml's warnings and notices: only with --debug

        credential = self.credential
        if credential is None:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        kwargs = {"user_agent": f"amldist/{amldist.__version__}", **self.client_kwargs}
        return MLClient(credential, workspace.subscription_id, workspace.resource_group,
                        workspace.workspace_name, **kwargs)

    def _stream(self, created, workspace, *, failure_raises: bool = True) -> JobRecord:
        from azure.ai.ml.exceptions import JobException

        from amldist.backends.azureml.records import record_of

        client = self.client(workspace)
        try:
            azure_call(lambda: client.jobs.stream(created.name), workspace)
        except JobException as exc:
            text = " ".join(str(getattr(exc, "message", exc)).split())
            if "interrupted" in text:
                print(f"stopped following the logs; job {created.name} keeps running: {created.studio_url}",
                      file=sys.stderr)
                return record_of(created, stream_interrupted=True)
            if not failure_raises:  # an attempt of a retried run: the loop diagnoses it and decides
                return record_of(azure_call(lambda: client.jobs.get(created.name), workspace))
            raise UserError(f"job {created.name} failed: {text[:2000]}",
                            hint=f"see the logs in the studio: {created.studio_url}", exit_code=1) from None
        return record_of(created)

    # --- the job verbs (amldist.backends.azureml.jobs) --------------------------------------------
    def list(self, *, max_results: int | None = None) -> list[JobRecord]:
        from amldist.backends.azureml import jobs

        return jobs.list_jobs(self.client(), self.workspace(), max_results=max_results)

    def show(self, name: str) -> JobRecord:
        from amldist.backends.azureml import jobs

        return jobs.show(self.client(), self.workspace(), name)

    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        from amldist.backends.azureml import jobs

        if rank is not None:
            raise UserError("--rank reads one rank's log of a local run; Azure ML streams the job's logs as a whole",
                            hint=f"'amldist job download {name}' fetches every rank's log (artifacts/user_logs/)")
        client, workspace = self.client(), self.workspace()
        return jobs.logs(client, workspace, jobs.step_job(client, workspace, name, step) if step else name)

    def cancel(self, name: str, *, wait: bool = True) -> JobRecord:
        from amldist.backends.azureml import jobs

        return jobs.cancel(self.client(), self.workspace(), name, wait=wait)

    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        from amldist.backends.azureml import jobs

        client, workspace = self.client(), self.workspace()
        job = jobs.step_job(client, workspace, name, step) if step else name
        jobs.download(client, workspace, job, destination, output_name=output_name, all_outputs=all_outputs)
        return [destination]

    # --- retries (amldist.diagnosis.retry; Azure ML's part: amldist.backends.azureml.retries) -------------
    def wait_for_end(self, record: JobRecord) -> JobRecord:
        """The attempt once it has ended, watched through ``jobs.get``; Ctrl-C cancels it. An attempt whose logs
        ``--stream`` stopped following (Ctrl-C there: the job runs on, as that line said) is not watched: the
        retries end with it."""
        from amldist.backends.azureml import retries

        if record.ended or record.details.get("stream_interrupted"):
            return record
        interval = retries.POLL_SECONDS if self.poll_seconds is None else self.poll_seconds
        return retries.watch(self.client(), self.workspace(), record.name, interval=interval)

    def checkpoint_dir_of(self, record: JobRecord) -> str | None:
        """The datastore path of the first attempt's ``amldist_checkpoints`` output (None: not a retried job)."""
        from amldist.backends.azureml import retries

        return retries.checkpoint_dir(record)

    def list_attempts(self, first: str) -> list[JobRecord]:
        """The jobs whose property ``amldist.attempt_of`` is ``first``: one filtered request to the service."""
        from amldist.backends.azureml import jobs
        from amldist.backends.azureml.records import ATTEMPT_OF

        return jobs.list_jobs(self.client(), self.workspace(), properties=f"{ATTEMPT_OF}={first}")

    def show_text(self, record: JobRecord) -> str:
        from amldist.backends.azureml.records import show_text

        return show_text(record)

    def can_look_up(self) -> bool:
        """A workspace is configured (flags, ``AZUREML_ARM_*`` or ``config.json``): any name may be one of its jobs."""
        from amldist.backends.azureml.workspace import resolve_workspace

        return any(self.where.values()) or resolve_workspace(os.environ if self.environ is None else self.environ,
                                                             self.cwd or os.getcwd()) is not None

    def run_logs(self, name: str, folder: str) -> RunLogs:
        from amldist.backends.azureml.run_logs import run_logs

        return run_logs(self.client(), self.workspace(), name, folder)


__all__ = ["SIGN_IN_HINT", "AzureMLBackend", "AzureOptions", "AzurePlan", "AzurePipelineJobPlan", "azure_call",
           "require_azure"]
