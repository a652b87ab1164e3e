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
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field

from amldist.azure_sdk.code_snapshot import SnapshotPlan, materialized, plan_snapshot
from amldist.backends.azureml.workspace import Workspace, require_workspace
from amldist.errors import UserError
from amldist.rules import paths
from amldist.submit.pipeline import PreparedPipeline
from amldist.submit.prepared import SubmitOptions


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


def _component_of(node: dict, base_dir: str):
    """(component mapping, its folder) of a step, or (None, None) when it has no local one."""
    ref = node.get("component")
    if isinstance(ref, dict):
        return copy.deepcopy(ref), base_dir
    if not isinstance(ref, str) or not paths.is_local(ref):
        return None, None
    from amldist.model import load
    from amldist.model.specs import DistributedComponent

    path = paths.local_path(ref, base_dir)
    spec = load(path)
    if isinstance(spec, DistributedComponent):
        from amldist.authoring.convert import convert_legacy

        spec = convert_legacy(path)
    return spec.to_dict(), os.path.dirname(path)


def bundle_steps(data: dict, base_dir: str) -> tuple[dict, list[BundledStep], list[str]]:
    """The pipeline with each distributed step's component inline, and what each snapshot will hold."""
    data = copy.deepcopy(data)
    steps, warnings = [], []
    for name, node in (data.get("jobs") or {}).items():
        if not isinstance(node, dict):
            continue
        if str(node.get("type", "command")).lower() == "pipeline":
            warnings.append(f"step {name} is a nested pipeline: its steps are sent as written "
                            "(amldist/runtime/ is added only to the top-level steps)")
            continue
        if "component" not in node:  # an inline command step is its own component
            if not node.get("distribution"):
                continue
            code, command, folder = node.get("code"), node.get("command"), base_dir
        else:
            component, folder = _component_of(node, base_dir)
            if component is None or not (node.get("distribution") or component.get("distribution")):
                continue
            code, command = component.get("code"), component.get("command")
        snapshot = plan_snapshot(code, folder, command)
        warnings += [f"step {name}: {w}" for w in snapshot.warnings]
        if not snapshot.shim_added:
            continue
        if "component" in node:
            if isinstance(component.get("code"), str) and paths.is_local(component["code"]):
                component["code"] = paths.local_path(component["code"], folder)
            node["component"] = component
        elif isinstance(code, str) and paths.is_local(code):
            node["code"] = paths.local_path(code, folder)
        steps.append(BundledStep(str(name), node, snapshot))
    return data, steps, warnings


def plan_pipeline(prepared: PreparedPipeline, options: SubmitOptions, *, environ, cwd: str) -> AzurePipelinePlan:
    import logging

    from amldist.model import from_data
    from amldist.azure_sdk.entities import rest_body

    # azure-ai-ml logs "This is an experimental class" while loading any pipeline; nothing to act on
    logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
    data = prepared.job.to_dict()
    if options.name:
        data["name"] = options.name
    try:
        workspace, problem = require_workspace(environ, cwd, subscription=options.subscription,
                                               resource_group=options.resource_group,
                                               workspace=options.workspace), None
    except UserError as exc:
        workspace, problem = None, exc
    sent, steps, warnings = bundle_steps(data, prepared.base_dir)
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
        "request": {"method": "PUT", "job": plan.body.get("name", plan.name), "body": mask_tree(plan.body)},
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
