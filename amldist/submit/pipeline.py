"""A pipeline job resolved into an ordered graph of typed nodes (pure: reads files, runs nothing).

``amldist submit pipeline.yml`` loads the pipeline once, applies ``--set`` (any field, e.g.
``jobs.train.resources.instance_count=1``) and ``--input`` (the pipeline's inputs), validates it
once, and hands a backend a :class:`PreparedPipeline` whose :class:`PipelineGraph` holds:

- every step as a :class:`Node`, in an order where each node comes after the nodes it reads
  from (``graphlib.TopologicalSorter``, ties kept in the file's order);
- each node's inputs as typed values: a literal, a data path (``{"type": ..., "path": ...}``,
  local paths absolute), or an :class:`OutputRef` to another node's output; ``${{parent.inputs.x}}``
  is replaced by the pipeline input's value here, ``${{parent.jobs.<node>.outputs.y}}`` becomes
  an ``OutputRef`` (a backend decides where outputs live: a local run wires folders);
- a nested pipeline component (``type: pipeline``, ``component: ./sub.yml``) flattened into its
  steps, named ``outer/inner``; references to the outer step's outputs point at the inner step
  that binds them (``${{parent.outputs.z}}`` inside the sub-pipeline);
- the pipeline's outputs, each bound to the node output that writes it.

A node amldist cannot run on this machine (spark, parallel, sweep, data transfer, import, automl,
control flow, a registered ``azureml:`` component) is kept with ``local_problem`` saying why: the
local backend refuses the pipeline before anything starts, the Azure backend sends it as written.
:meth:`Node.to_job` builds the :class:`~amldist.model.CommandJob` a step runs once the places of
its upstream outputs are known, through the same conversion single components use
(:func:`amldist.authoring.component_job.component_to_job`).
"""

from __future__ import annotations

import copy
import graphlib
import os
import re
from dataclasses import dataclass, field
from typing import ClassVar

from amldist.errors import UserError
from amldist.rules import paths
from amldist.submit.overrides import PATH_INPUT_TYPES, is_path_input
from amldist.submit.prepared import PreparedWork

_BINDING = re.compile(r"^\s*\$\{\{\s*parent\.([A-Za-z0-9_.]+)\s*\}\}\s*$")
_ANY_BINDING = re.compile(r"\$\{\{\s*parent\.([A-Za-z0-9_.]+)\s*\}\}")
_NODE_OVERRIDES = ("distribution", "resources", "limits", "environment_variables", "compute", "environment")
MAX_DEPTH = 10  # nested pipeline components; a component that includes itself stops here


@dataclass(frozen=True)
class OutputRef:
    """``${{parent.jobs.<node>.outputs.<output>}}``, with ``node`` the qualified step name."""

    node: str
    output: str


@dataclass
class Node:
    """One step of the pipeline."""

    name: str  # qualified: "train", or "outer/inner" inside a nested pipeline component
    base_dir: str  # where the step's relative paths resolve (its component file's folder)
    component: str | dict | None = None  # a local component file (absolute) or an inline component mapping
    command_node: dict | None = None  # an inline command step, as written (minus inputs/outputs)
    inputs: dict = field(default_factory=dict)  # name -> literal | {"type", "path", ...} | OutputRef
    outputs: dict = field(default_factory=dict)  # name -> {"type": ...}
    overrides: dict = field(default_factory=dict)  # distribution/resources/... the step sets over its component
    local_problem: str | None = None  # why this step cannot run locally; None when it can

    @property
    def needs(self) -> tuple[str, ...]:
        """The steps this one reads from, in order of first use."""
        return tuple(dict.fromkeys(v.node for v in self.inputs.values() if isinstance(v, OutputRef)))

    def to_job(self, places: dict, *, name: str | None = None):
        """The command job this step runs; ``places[OutputRef]`` is ``(path, type)`` of each upstream
        output it reads (where the backend puts that output)."""
        from amldist.authoring.component_job import component_to_job
        from amldist.model import from_data

        if self.local_problem:
            raise UserError(f"step {self.name}: {self.local_problem}")
        values = {}
        for key, value in self.inputs.items():
            if isinstance(value, OutputRef):
                path, out_type = places[value]
                values[key] = {"type": out_type, "path": path}
            else:
                values[key] = value
        if self.command_node is not None:
            data = dict(self.command_node, type="command", inputs=values or None, outputs=self.outputs or None)
            if isinstance(data.get("code"), str) and paths.is_local(data["code"]):
                data["code"] = paths.local_path(data["code"], self.base_dir)
            job = from_data({k: v for k, v in data.items() if v is not None}, file=f"step {self.name}")
        else:
            component = self.component
            if isinstance(component, dict):
                component = from_data(component, file=f"step {self.name}")
            job = component_to_job(component, inputs=values, base_dir=self.base_dir)
            if self.overrides:
                job = from_data(_merge(job.to_dict(), self.overrides), file=f"step {self.name}")
        job.name = name
        return job


@dataclass
class PipelineGraph:
    name: str | None  # the pipeline's ``name:`` (a run's default name), None when unset
    display_name: str | None
    nodes: list[Node]  # ordered: every node after the ones it reads from
    outputs: dict  # pipeline output name -> OutputRef
    inputs: dict  # pipeline input name -> its value as resolved

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    @property
    def order(self) -> list[str]:
        return [n.name for n in self.nodes]


@dataclass
class PreparedPipeline(PreparedWork):
    """What ``prepare`` returns for a pipeline job: the edited, validated spec and its graph."""

    kind: ClassVar[str] = "pipeline"

    job: object  # the amldist.model PipelineJob after --set/--input (sent to Azure as such)
    graph: PipelineGraph
    source: str
    base_dir: str
    warnings: list = field(default_factory=list)


def prepare_pipeline(file: str, doc, text: str, *, sets=(), inputs=(), cwd: str, check,
                     instance_count=None, process_count_per_instance=None) -> PreparedPipeline:
    """``prepare`` for a pipeline job: overrides, one validation, the graph (see the module docstring).
    ``check(file, diagnostics, kept)`` is prepare's own rule: raise on an error, keep the warnings."""
    from amldist.model import from_data
    from amldist.submit import overrides
    from amldist.model.kinds import PIPELINE_JOB
    from amldist.validate import validate_data

    if instance_count is not None or process_count_per_instance is not None:
        raise UserError(f"{file} is a pipeline: --instance-count / --process-count-per-instance set one job",
                        hint="set a step's counts with --set jobs.<step>.resources.instance_count=N")
    base_dir = os.path.dirname(os.path.abspath(file))
    data = overrides.apply_sets(doc.data, list(sets))
    data = overrides.apply_inputs(data, overrides.parse_inputs(list(inputs)), cwd=cwd, file=file)
    kept: list = []
    check(file, validate_data(data, file, kind=PIPELINE_JOB, base_dir=base_dir, doc=doc,
                              text=text if data == doc.data else None), kept)
    return PreparedPipeline(from_data(data, file=file), resolve(data, base_dir, file), file, base_dir, kept)


def resolve(data: dict, base_dir: str, file: str) -> PipelineGraph:
    """The graph of a (validated) pipeline mapping; relative paths resolve against ``base_dir``."""
    pipeline_inputs = {k: _input_value(v, base_dir) for k, v in (data.get("inputs") or {}).items()}
    nodes, outputs = _resolve_jobs(data.get("jobs") or {}, pipeline_inputs, base_dir, file, prefix="", depth=0)
    if not nodes:
        raise UserError(f"{file}: the pipeline has no steps (jobs:)")
    return PipelineGraph(data.get("name"), data.get("display_name"), _ordered(nodes, file), outputs,
                         pipeline_inputs)


@dataclass(frozen=True)
class _StepRef:
    """``${{parent.jobs.<step>.outputs.<output>}}`` read at one nesting level (``level``: its name
    prefix), until every step of that level is known."""

    level: str
    step: str
    output: str


def _resolve_jobs(jobs: dict, parent_inputs: dict, base_dir: str, file: str, prefix: str, depth: int):
    """(nodes, this level's pipeline outputs -> OutputRef) for one level of ``jobs``."""
    nodes: list[Node] = []
    bound_outputs: dict = {}  # this level's ${{parent.outputs.z}} -> OutputRef
    aliases: dict = {}  # (step, output) of a nested pipeline step -> the inner OutputRef
    for step, node in jobs.items():
        where = f"{file}: jobs.{step}"
        if not isinstance(node, dict):
            raise UserError(f"{where} is not a mapping")
        qualified = prefix + str(step)
        node_type = str(node.get("type", "command")).lower()
        ref = node.get("component")
        values = {key: _bind_input(value, parent_inputs, base_dir, f"{where}.inputs.{key}", prefix)
                  for key, value in (node.get("inputs") or {}).items()}
        if node_type == "pipeline":
            sub_nodes, sub_outputs = _nested(qualified, ref, values, base_dir, where, depth)
            nodes += sub_nodes
            aliases.update({(str(step), k): v for k, v in sub_outputs.items()})
            _bind_outputs(node, str(step), bound_outputs, aliases)
            continue
        item = Node(qualified, base_dir, inputs=values)
        if node_type != "command":
            item.local_problem = f"a {node_type} step does not run on this machine"
        elif isinstance(ref, str) and not paths.is_local(ref):
            item.local_problem = f"component {ref!r} is registered in a workspace, not a local file"
        elif isinstance(ref, str):
            item.component = paths.local_path(ref, base_dir)
            item.base_dir = os.path.dirname(item.component)
        elif isinstance(ref, dict):
            item.component = copy.deepcopy(ref)
        elif "command" in node:
            item.command_node = {k: v for k, v in node.items() if k not in ("inputs", "outputs", "type")}
        else:
            item.local_problem = "it has neither a component nor a command"
        item.overrides = {k: node[k] for k in _NODE_OVERRIDES if k in node and item.command_node is None}
        for key, value in (node.get("outputs") or {}).items():
            out_type = value.get("type", "uri_folder") if isinstance(value, dict) else "uri_folder"
            item.outputs[key] = {"type": out_type}
            binding = _binding_of(value.get("path") if isinstance(value, dict) else value)
            if binding and binding[0] == "outputs" and len(binding) == 2:
                bound_outputs[binding[1]] = OutputRef(qualified, key)
        _declared_outputs(item)
        nodes.append(item)
    names = {str(s) for s in jobs}
    for item in nodes:  # this level's step references, in its own steps and in nested ones
        for key, value in item.inputs.items():
            if isinstance(value, _StepRef) and value.level == prefix:
                if value.step not in names:
                    raise UserError(f"{file}: step {item.name} reads from {value.step!r}, which is not a step")
                item.inputs[key] = aliases.get((value.step, value.output), OutputRef(prefix + value.step,
                                                                                     value.output))
    return nodes, bound_outputs


def _nested(qualified, ref, values, base_dir, where, depth):
    """The steps of a nested pipeline component, with the node's inputs as its parent inputs."""
    from amldist.model import read_document

    if depth >= MAX_DEPTH:
        raise UserError(f"{where}: pipeline components nested more than {MAX_DEPTH} deep")
    if not isinstance(ref, str) or not paths.is_local(ref):
        raise UserError(f"{where}: a nested pipeline must be a local component file (component: ./sub.yml)")
    path = paths.local_path(ref, base_dir)
    _, doc = read_document(path)
    sub = doc.data if isinstance(doc.data, dict) else {}
    sub_inputs = {}
    for key, port in (sub.get("inputs") or {}).items():
        given = values.get(key)
        sub_inputs[key] = given if given is not None else _input_value(port, os.path.dirname(path))
    # An input fed by an outer step reaches the inner steps as the outer level's _StepRef, which
    # the outer level replaces once all its steps are known.
    return _resolve_jobs(sub.get("jobs") or {}, sub_inputs, os.path.dirname(path), path,
                         prefix=qualified + "/", depth=depth + 1)


def _bind_outputs(node: dict, step: str, bound_outputs: dict, aliases: dict) -> None:
    for key, value in (node.get("outputs") or {}).items():
        binding = _binding_of(value.get("path") if isinstance(value, dict) else value)
        if binding and binding[:1] == ["outputs"] and len(binding) == 2 and (step, key) in aliases:
            bound_outputs[binding[1]] = aliases[(step, key)]


def _declared_outputs(item: Node) -> None:
    """A component step writes every output its component declares, bound or not."""
    spec = item.component
    if isinstance(spec, str):
        from amldist.model import read_document

        try:
            _, doc = read_document(spec)
        except UserError:
            return  # component_to_job reports it with its own words
        spec = doc.data
    if isinstance(spec, dict):
        for key, port in (spec.get("outputs") or {}).items():
            out_type = port.get("type", "uri_folder") if isinstance(port, dict) else "uri_folder"
            item.outputs.setdefault(key, {"type": out_type})


def _binding_of(value) -> list[str] | None:
    """``${{parent.a.b}}`` (the whole string) -> ["a", "b"]; None for anything else."""
    match = _BINDING.match(value) if isinstance(value, str) else None
    return match.group(1).split(".") if match else None


def _bind_input(value, parent_inputs: dict, base_dir: str, where: str, level: str):
    """A step input's value: a literal, a data path, a parent input's value, or a step reference
    (a :class:`_StepRef` until every step of this level is known)."""
    target = value.get("path", value.get("value")) if isinstance(value, dict) else value
    binding = _binding_of(target)
    if binding is None:
        if isinstance(target, str) and _ANY_BINDING.search(target):
            # "--lr=${{parent.inputs.lr}}": literal text around parent inputs
            return _ANY_BINDING.sub(lambda m: _literal_text(m.group(1), parent_inputs, where), target)
        return _input_value(value, base_dir)
    if binding[0] == "inputs" and len(binding) == 2:
        if binding[1] not in parent_inputs:
            raise UserError(f"{where}: the pipeline has no input {binding[1]!r}")
        bound = parent_inputs[binding[1]]
        if isinstance(value, dict) and isinstance(bound, dict):
            return {**value, **bound, "type": value.get("type", bound.get("type"))}
        return bound
    if binding[0] == "jobs" and len(binding) == 4 and binding[2] == "outputs":
        return _StepRef(level, binding[1], binding[3])
    raise UserError(f"{where}: amldist cannot resolve ${{{{parent.{'.'.join(binding)}}}}}",
                    hint="bind to ${{parent.inputs.NAME}} or ${{parent.jobs.STEP.outputs.NAME}}")


def _literal_text(path: str, parent_inputs: dict, where: str) -> str:
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "inputs" and parts[1] in parent_inputs:
        value = parent_inputs[parts[1]]
        if not isinstance(value, (dict, _StepRef, OutputRef)):
            return str(value)
    raise UserError(f"{where}: ${{{{parent.{path}}}}} inside other text must name a literal pipeline input")


def _input_value(value, base_dir: str):
    """A pipeline (or step) input as written -> its value: literals as they are, ``{value:}`` /
    ``{default:}`` unwrapped, data inputs with local paths made absolute."""
    if isinstance(value, (OutputRef, _StepRef)):
        return value
    if isinstance(value, dict):
        if is_path_input(value) or str(value.get("type", "")).lower() in PATH_INPUT_TYPES:
            out = dict(value)
            if isinstance(out.get("path"), str) and paths.is_local(out["path"]):
                out["path"] = paths.local_path(out["path"], base_dir)
            return out
        return value.get("value", value.get("default"))
    return value


def _merge(base: dict, over: dict) -> dict:
    """``over`` laid on ``base``, mappings merged key by key (a step's resources over its component's)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "distribution":
            out[key] = _merge(out[key], value)
        elif key == "distribution" and isinstance(value, dict) and isinstance(out.get(key), dict) \
                and str(value.get("type", out[key].get("type"))).lower() == str(out[key].get("type")).lower():
            out[key] = {**out[key], **value}  # same launcher: the step adjusts the counts
        else:
            out[key] = value
    return out


def _ordered(nodes: list[Node], file: str) -> list[Node]:
    """Nodes ordered after the ones they read from (graphlib: the standard library's topological
    sort); among nodes that are ready together the file's order is kept. A cycle is one error."""
    by_name = {n.name: n for n in nodes}
    for node in nodes:
        for need in node.needs:
            if need not in by_name:
                raise UserError(f"{file}: step {node.name} reads from {need!r}, which is not a step")
    sorter = graphlib.TopologicalSorter({n.name: n.needs for n in nodes})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        raise UserError(f"{file}: the steps read from each other in a cycle: {' -> '.join(exc.args[1])}",
                        hint="a step can only read outputs of steps that do not read from it") from None
    position = {n.name: i for i, n in enumerate(nodes)}
    ordered: list[Node] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        ordered += [by_name[name] for name in ready]
        sorter.done(*ready)
    return ordered
