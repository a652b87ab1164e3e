"""A pipeline job sent to Azure ML: azure-ai-ml's ``load_job`` + ``MLClient.jobs.create_or_update``.

Every step that runs a distributed command (its own ``distribution``, or its component's, or a
legacy component's ``launcher``) gets ``amldist/runtime/`` in its code snapshot, exactly as a
single job does (:func:`amldist.azure_sdk.code_snapshot.plan_snapshot`): the step's component
is written inline into the pipeline sent (a legacy spec converted to its v2 equivalent), with
``code:`` pointing at a temporary snapshot that holds the user's files plus the shim. The user's
folders and files are only read; steps without a distribution are sent as written.

- :func:`plan_pipeline` (pure): the workspace, each bundled step's snapshot, and the REST body
  azure-ai-ml builds for the pipeline (``--dry-run`` prints it; component code still names the
  local folders, the snapshots are made at submit time);
- :func:`submit_pipeline`: writes the snapshots, loads the rewritten pipeline with ``load_job``
  (relative paths against the pipeline's folder) and sends it with ``jobs.create_or_update``,
  which registers the steps' code and components before the PUT of the pipeline.

Steps inside a nested pipeline component are sent as written (their component file is not
rewritten): a known limit, said in a warning when one of them is distributed.
"""

from __future__ import annotations

import copy
import json
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field

from amldist.azure_sdk import component_paths
from amldist.azure_sdk.code_snapshot import SnapshotPlan, materialized, plan_snapshot
from amldist.backends.azureml.workspace import Workspace, require_workspace
from amldist.errors import UserError
from amldist.model.kinds import COMMAND_COMPONENT, DISTRIBUTED_COMPONENT, recognise
from amldist.rules import paths, pipeline_graph
from amldist.submit.pipeline import PreparedPipeline, component_spec
from amldist.submit.prepared import SubmitOptions
from amldist.rules.names import check_job_name


@dataclass
class BundledStep:
    name: str
    component: dict  # the inline component sent for this step (code: replaced by the snapshot's folder)
    snapshot: SnapshotPlan


@dataclass
class AzurePipelinePlan:
    data: dict  # the pipeline mapping sent, steps with the runtime inlined (code: still the user's folder)
    base_dir: str
    steps: list[BundledStep]
    workspace: Workspace | None
    workspace_problem: UserError | None
    body: dict
    name: str | None
    warnings: list[str] = field(default_factory=list)
    stream: bool = False


def _component_v2(step) -> dict | None:
    """The step's component as a v2 mapping (a legacy spec converted once per file), or None when amldist
    does not bundle its kind (registered, spark, parallel, flows, pipelines: sent as written)."""
    data = step.component_data
    if data is None or recognise(data) not in (COMMAND_COMPONENT, DISTRIBUTED_COMPONENT):
        return None
    spec = component_spec(step.component if step.component is not None else data, step.file)
    return copy.deepcopy(spec.to_dict())


def bundle_steps(data: dict, base_dir: str, file: str = "pipeline") -> tuple[dict, list[BundledStep], list[str]]:
    """The pipeline with each distributed step's component inline, and what each snapshot will hold."""
    data = copy.deepcopy(data)
    steps, warnings = [], []
    for step in pipeline_graph.pipeline_steps(data, base_dir, file) if "jobs" in data else []:
        node = data["jobs"][step.name]
        if step.children is not None:
            if any(_distributed(s.node, s.component_data) for s in pipeline_graph.walk(step.children)):
                warnings.append(f"step {step.name} is a nested pipeline: its steps are sent as written "
                                "(amldist/runtime/ is added only to the top-level steps)")
            continue
        component = _component_v2(step) if step.source in (pipeline_graph.LOCAL_FILE, pipeline_graph.INLINE) else None
        if step.source == pipeline_graph.COMMAND and step.type == "command" and node.get("distribution"):
            code, command, folder = node.get("code"), node.get("command"), base_dir
        elif component is not None and _distributed(node, component):
            code, command, folder = component.get("code"), component.get("command"), step.component_dir
        else:
            continue  # registered, other kinds, or not distributed: sent as written
        snapshot = plan_snapshot(code, folder, command)
        warnings += [f"step {step.name}: {w}" for w in snapshot.warnings]
        if not snapshot.shim_added:
            continue
        if component is not None:
            node["component"] = component_paths.absolute(component, folder)
        elif isinstance(code, str) and paths.is_local(code):
            node["code"] = paths.local_path(code, folder)
        steps.append(BundledStep(step.name, node, snapshot))
    return data, steps, warnings


def _distributed(node: dict, component) -> bool:
    return bool(node.get("distribution") or (isinstance(component, dict) and (
        component.get("distribution") or component.get("launcher"))))


def plan_pipeline(prepared: PreparedPipeline, options: SubmitOptions, *, environ, cwd: str) -> AzurePipelinePlan:
    import logging

    from amldist.model import from_data
    from amldist.azure_sdk.entities import rest_body

    # azure-ai-ml logs "This is an experimental class" while loading any pipeline; nothing to act on
    logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
    data = prepared.job.to_dict()
    if options.name:
        data["name"] = check_job_name(options.name)  # one printable word (rules/names)
    if not data.get("name"):
        # azure-ai-ml would generate it while sending; generated here, the dry run shows the name used
        from azure.ai.ml.entities._job.job_name_generator import generate_job_name

        data["name"] = generate_job_name()
    try:
        workspace, problem = require_workspace(environ, cwd, subscription=options.subscription,
                                               resource_group=options.resource_group,
                                               workspace=options.workspace), None
    except UserError as exc:
        workspace, problem = None, exc
    sent, steps, warnings = bundle_steps(data, prepared.base_dir, prepared.source)
    body = rest_body(from_data(sent, file=prepared.source), base_dir=prepared.base_dir)
    return AzurePipelinePlan(sent, prepared.base_dir, steps, workspace, problem, body, data.get("name"), warnings,
                             options.stream)


def describe_pipeline(plan: AzurePipelinePlan) -> str:
    from amldist.rules.secrets import mask_tree

    shown = {
        "workspace": None if plan.workspace is None else {
            "subscription_id": plan.workspace.subscription_id, "resource_group": plan.workspace.resource_group,
            "workspace_name": plan.workspace.workspace_name},
        "steps_with_runtime": {s.name: {"code_snapshot": s.snapshot.name, "files": sorted(s.snapshot.files)}
                               for s in plan.steps},
        "warnings": plan.warnings + ([] if plan.workspace else [f"no workspace yet: {plan.workspace_problem}"]),
        "request": {"method": "PUT", "job": plan.name, "body": mask_tree(plan.body)},
    }
    return json.dumps(shown, indent=2)


def submit_pipeline(plan: AzurePipelinePlan, *, client_for, call) -> object:
    """Write the snapshots, load the pipeline with azure-ai-ml and send it; returns the created job.
    ``client_for(workspace)`` gives the MLClient and ``call(fn, workspace)`` turns Azure's errors into
    one line (the single-job backend's own)."""
    from amldist.model import from_data
    from amldist.azure_sdk.entities import to_azure

    if plan.workspace is None:
        raise plan.workspace_problem
    for message in plan.warnings:
        print(f"warning: {message}", file=sys.stderr)
    data = copy.deepcopy(plan.data)
    with ExitStack() as stack:
        for step in plan.steps:
            written = stack.enter_context(materialized(step.snapshot))
            node = data["jobs"][step.name]
            target = node["component"] if isinstance(node.get("component"), dict) else node
            target["code"] = written.path
        entity = to_azure(from_data(data, file="pipeline"), base_dir=plan.base_dir)
        client = client_for(plan.workspace)
        return call(lambda: client.jobs.create_or_update(entity), plan.workspace)
