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

A distributed step inside a nested pipeline component gets the runtime too: the nested component is
rewritten with that step's component inline and every relative path absolute, and, since azure-ai-ml
takes a nested pipeline component only from a file, written at submit to a temporary file the step
then names (the dry run's body names the component as written: the body is the same).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field

from amldist.azure_sdk import component_paths
from amldist.azure_sdk.code_snapshot import SnapshotPlan, materialized, plan_snapshot
from amldist.backends.azureml.workspace import Workspace, workspace_or_problem
from amldist.errors import UserError
from amldist.model.kinds import COMMAND_COMPONENT, DISTRIBUTED_COMPONENT, recognise
from amldist.rules import paths, pipeline_graph
from amldist.submit.pipeline import PreparedPipeline, component_spec
from amldist.submit.prepared import SubmitOptions


@dataclass
class BundledStep:
    name: str  # qualified: "train", or "outer/inner" inside a nested pipeline component
    component: dict  # the step as planned (its inline component's code: replaced by the snapshot at submit)
    snapshot: SnapshotPlan
    path: tuple = ()  # the keys from the pipeline mapping down to the step's node


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


def bundle_steps(data: dict, base_dir: str, tree: list) -> tuple[dict, list[BundledStep], list[str]]:
    """The pipeline with each distributed step's component inline, and what each snapshot will hold.

    ``tree`` is the prepared graph's typed steps (:attr:`amldist.submit.pipeline.PipelineGraph.steps`), whose
    nodes are the very mappings of ``data``'s ``jobs:``: each is found in the copy sent by identity (the
    copy's memo), never by walking the YAML again. A nested pipeline component holding such a step is
    written inline too, its own relative paths made absolute from its file's folder
    (:func:`amldist.azure_sdk.component_paths.absolute_pipeline`)."""
    memo: dict = {}
    data = copy.deepcopy(data, memo)
    steps, warnings = [], []
    _bundle_level(memo, tree if "jobs" in data else [], base_dir, (), steps, warnings)
    return data, steps, warnings


def _bundle_level(memo: dict, tree: list, base_dir: str, path: tuple, steps: list, warnings: list) -> bool:
    """Bundle the distributed steps of one level (``memo``: the copy of that level, original id -> copy);
    True when one was."""
    changed = False
    for step in tree:
        node, where = memo[id(step.node)], path + ("jobs", step.name)
        if step.children is not None:
            inner: dict = {}
            sub = copy.deepcopy(step.component_data, inner)
            if _bundle_level(inner, step.children, step.component_dir, where + ("component",), steps, warnings):
                node["component"] = component_paths.absolute_pipeline(sub, step.component_dir)
                changed = True
            continue
        snapshot = _bundle_step(step, node, base_dir, warnings)
        if snapshot is not None:
            steps.append(BundledStep(step.qualified, node, snapshot, where))
            changed = True
    return changed


def _bundle_step(step, node: dict, base_dir: str, warnings: list) -> SnapshotPlan | None:
    """The snapshot of one distributed step, its component written inline into ``node``; None: as written."""
    component = _component_v2(step) if step.source in (pipeline_graph.LOCAL_FILE, pipeline_graph.INLINE) else None
    if step.source == pipeline_graph.COMMAND and step.type == "command" and node.get("distribution"):
        code, command, folder = node.get("code"), node.get("command"), base_dir
    elif component is not None and _distributed(node, component):
        code, command, folder = component.get("code"), component.get("command"), step.component_dir
    else:
        return None  # registered, other kinds, or not distributed: sent as written
    snapshot = plan_snapshot(code, folder, command)
    warnings += [f"step {step.qualified}: {w}" for w in snapshot.warnings]
    if not snapshot.shim_added:
        return None
    if component is not None:
        node["component"] = component_paths.absolute(component, folder)
    elif isinstance(code, str) and paths.is_local(code):
        node["code"] = paths.local_path(code, folder)
    return snapshot


def _nested_as_written(sent: dict, written: dict) -> dict:
    """``sent`` with each rewritten nested pipeline component named as written: the body is the same
    (its steps are registered with it), and azure-ai-ml takes a nested pipeline only from a file, which a
    pure plan does not write (:func:`_externalized` writes them at submit)."""
    out = copy.deepcopy(sent)
    for name, node in (out.get("jobs") or {}).items():
        if isinstance(node, dict) and isinstance(node.get("component"), dict) and "jobs" in node["component"]:
            node["component"] = written["jobs"][name]["component"]
    return out


def _externalized(node: dict, folder: str) -> None:
    """A step's rewritten nested pipeline component (and those inside it, innermost first) written to a
    file in ``folder`` and named by its path: azure-ai-ml loads a nested pipeline component only from a file."""
    from amldist.model.yamlio import dump_yaml

    component = node.get("component")
    if not (isinstance(component, dict) and "jobs" in component):
        return
    for inner in component["jobs"].values():
        if isinstance(inner, dict):
            _externalized(inner, folder)
    path = os.path.join(folder, f"pipeline_component_{len(os.listdir(folder))}.yml")
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(dump_yaml(component))
    node["component"] = path


def _node_at(data: dict, path: tuple) -> dict:
    for key in path:
        data = data[key]
    return data


def _distributed(node: dict, component) -> bool:
    return bool(node.get("distribution") or (isinstance(component, dict) and (
        component.get("distribution") or component.get("launcher"))))


def plan_pipeline(prepared: PreparedPipeline, options: SubmitOptions, *, environ, cwd: str) -> AzurePipelinePlan:
    from amldist.model import from_data
    from amldist.azure_sdk.entities import job_name, rest_body
    from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml

    quiet_azure_ai_ml()  # its "experimental class" notices while loading any pipeline: only with --debug
    data = prepared.job.to_dict()
    data["name"] = job_name(options.name, data.get("name"))
    workspace, problem = workspace_or_problem(environ, cwd, options)
    sent, steps, warnings = bundle_steps(data, prepared.base_dir, prepared.graph.steps)
    body = rest_body(from_data(_nested_as_written(sent, data), file=prepared.source), base_dir=prepared.base_dir)
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
    memo: dict = {}
    data = copy.deepcopy(plan.data, memo)
    with ExitStack() as stack:
        for step in plan.steps:
            written = stack.enter_context(materialized(step.snapshot))
            node = memo.get(id(step.component)) or _node_at(data, step.path)  # a nested step's: rewritten, by path
            target = node["component"] if isinstance(node.get("component"), dict) else node
            target["code"] = written.path
        nested = {step.path[1] for step in plan.steps if len(step.path) > 2}  # top-level steps rewritten inline
        if nested:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="amldist-pipeline-"))
            for name in nested:
                _externalized(data["jobs"][name], folder)
        entity = to_azure(from_data(data, file="pipeline"), base_dir=plan.base_dir)
        client = client_for(plan.workspace)
        return call(lambda: client.jobs.create_or_update(entity), plan.workspace)
