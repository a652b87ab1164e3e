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

The steps come typed from :mod:`amldist.rules.pipeline_graph` (components loaded once, one binding
grammar, the bounds on nesting); a pipeline job written as ``component: ./pipeline_component.yml``
runs that component's steps. A node amldist cannot run on this machine (spark, parallel, sweep, data
transfer, import, automl steps, a promptflow flow, a registered component, an ``azureml:`` data asset
input) is kept with ``local_problem`` saying why and what to pass instead: the local backend refuses
the pipeline before anything starts, one line per step; the Azure backend sends it as written.
:meth:`Node.to_job` builds the :class:`~amldist.model.CommandJob` a step runs once the places of
its upstream outputs are known, through the same conversion single components use
(:func:`amldist.authoring.component_job.component_to_job`).
"""

from __future__ import annotations

import copy
import graphlib
import os
from dataclasses import dataclass, field
from typing import ClassVar

from amldist.errors import UserError
from amldist.model.kinds import COMMAND_COMPONENT, DISTRIBUTED_COMPONENT, is_data_type, recognise
from amldist.rules import paths
from amldist.rules import pipeline_graph as graph
from amldist.rules.pipeline_graph import pipeline_steps
from amldist.submit.overrides import is_path_input
from amldist.submit.prepared import PreparedWork

_RUNNABLE = (COMMAND_COMPONENT, DISTRIBUTED_COMPONENT)


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
    component: object = None  # a local component (a loaded ComponentFile) or an inline component mapping
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
            try:
                job = component_to_job(self._spec(), inputs=values, base_dir=self.base_dir, checked=True,
                                       keep_includes=True)  # the backend adds them: code_includes()
            except UserError as exc:  # "input 'x' is required": say which step
                raise UserError(f"step {self.name}: {exc.message}", hint=exc.hint, exit_code=exc.exit_code) from None
            if self.overrides:
                job = from_data(graph.effective_job(job.to_dict(), self.overrides), file=f"step {self.name}")
        job.name = name
        return job

    def _spec(self):
        return component_spec(self.component, f"step {self.name}")

    def code_includes(self) -> tuple:
        """The step component's ``additional_includes``, resolved from its own folder, for a local run's
        snapshot (:mod:`amldist.rules.additional_includes`)."""
        from amldist.rules import additional_includes

        if self.command_node is not None or self.component is None or self.local_problem:
            return ()
        spec = self._spec()
        code = spec.code
        code_dir = paths.local_path(code, self.base_dir) if isinstance(code, str) and paths.is_local(code) else None
        return additional_includes.resolve(spec.extra.get("additional_includes"), self.base_dir, code_dir,
                                           f"step {self.name}")


def component_spec(component, file: str):
    """A step's component (a loaded ComponentFile, or an inline mapping) as a typed v2 CommandComponent,
    built once per file: a legacy spec is converted once, for the local run and the Azure body alike
    (the pipeline's validation checked it already)."""
    from amldist.model import from_data
    from amldist.model.specs import DistributedComponent

    holder = component.derived if isinstance(component, graph.ComponentFile) else {}
    if "spec" not in holder:
        data = component.data if isinstance(component, graph.ComponentFile) else component
        if graph.step_component_kind(data) == COMMAND_COMPONENT:  # hello-batch's inline command, too
            from amldist.model.specs import SPEC_CLASSES

            spec = SPEC_CLASSES[COMMAND_COMPONENT].from_dict(data)
        else:
            spec = from_data(data, file=component.path if isinstance(component, graph.ComponentFile) else file)
        if isinstance(spec, DistributedComponent):
            from amldist.authoring.convert import convert_legacy

            where = component.path if isinstance(component, graph.ComponentFile) else file
            spec = convert_legacy(spec, checked=True, base_dir=os.path.dirname(os.path.abspath(where)))
        holder["spec"] = spec
    return holder["spec"]


@dataclass
class PipelineGraph:
    name: str | None  # the pipeline's ``name:`` (a run's default name), None when unset
    display_name: str | None
    nodes: list[Node]  # ordered: every node after the ones it reads from
    outputs: dict  # pipeline output name -> OutputRef
    inputs: dict  # pipeline input name -> its value as resolved
    local_problem: str | None = None  # why the whole pipeline cannot run here (a registered top component)
    # the typed step tree as written (amldist.rules.pipeline_graph.Step: components loaded once), read
    # once here for every backend: the Azure backend builds its request from it, never walking the YAML again
    steps: list = field(default_factory=list)

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
    given = overrides.parse_inputs(list(inputs))
    data = overrides.apply_inputs(_component_ports(data, given, base_dir), given, cwd=cwd, file=file)
    kept: list = []
    check(file, validate_data(data, file, kind=PIPELINE_JOB, base_dir=base_dir, doc=doc,
                              text=text if data == doc.data else None), kept)
    return PreparedPipeline(from_data(data, file=file), resolve(data, base_dir, file), file, base_dir, kept)


def _component_ports(data: dict, given: dict, base_dir: str) -> dict:
    """A pipeline job written as ``component: ./x.yml`` takes ``--input`` for its component's inputs too:
    each one named becomes a job input of the component's type (what ``az ml job create --set
    inputs.NAME=...`` writes), so the value reaches the component as the job's."""
    top = graph.top_component(data, base_dir) if given else None
    ports = (top.data.get("inputs") if top is not None and top.data is not None else None) or {}
    missing = [name for name in given if name in ports and name not in (data.get("inputs") or {})]
    if not missing or not isinstance(data.get("inputs", {}), dict):
        return data
    declared = {name: {"type": ports[name].get("type")} if isinstance(ports[name], dict) else None
                for name in missing}
    return {**data, "inputs": {**(data.get("inputs") or {}), **declared}}


def resolve(data: dict, base_dir: str, file: str) -> PipelineGraph:
    """The graph of a (validated) pipeline mapping; relative paths resolve against ``base_dir``.

    The steps come from :func:`amldist.rules.pipeline_graph.pipeline_steps` (the typed tree, with the
    bound on nesting and on the number of steps); a pipeline job written as ``component: ./x.yml``
    runs that component's steps with the job's inputs over the component's defaults."""
    steps = pipeline_steps(data, base_dir, file)
    pipeline_inputs = {k: _input_value(v, base_dir) for k, v in (data.get("inputs") or {}).items()}
    top, problem = graph.top_component(data, base_dir), None
    if top is not None:
        if top.data is None:
            raise UserError(f"{file}: component {data.get('component')!r}: {top.problem}")
        pipeline_inputs = _component_inputs(top.data, pipeline_inputs, os.path.dirname(top.path))
    elif isinstance(data.get("component"), str) and "jobs" not in data:
        problem = (f"its component {data['component'].strip()!r} is registered in a workspace; "
                   "point component: at a local copy of the pipeline component's YAML")
    nodes, outputs = _resolve_jobs(steps, pipeline_inputs, file, prefix="")
    if not nodes and problem is None:
        raise UserError(f"{file}: the pipeline has no steps (jobs:)")
    return PipelineGraph(data.get("name"), data.get("display_name"), _ordered(nodes, file), outputs,
                         pipeline_inputs, problem, steps)


def _component_inputs(component: dict, given: dict, folder: str) -> dict:
    """A pipeline component's inputs: the values given (a job's, or a step's), else the defaults."""
    out = {}
    for key, port in (component.get("inputs") or {}).items():
        value = given.get(key)
        out[key] = value if value is not None else _input_value(port, folder)
    return out


@dataclass(frozen=True)
class _StepRef:
    """``${{parent.jobs.<step>.outputs.<output>}}`` read at one nesting level (``level``: its name
    prefix), until every step of that level is known."""

    level: str
    step: str
    output: str


def _resolve_jobs(steps: list, parent_inputs: dict, file: str, prefix: str):
    """(nodes, this level's pipeline outputs -> OutputRef) for one level of steps."""
    nodes: list[Node] = []
    bound_outputs: dict = {}  # this level's ${{parent.outputs.z}} -> OutputRef
    aliases: dict = {}  # (step, output) of a nested pipeline step -> the inner OutputRef
    for step in steps:
        where = f"{step.file}: jobs.{step.name}"
        for field in ("inputs", "outputs"):  # a step kind the schema leaves open (spark, a flow, ...)
            if not isinstance(step.node.get(field) or {}, dict):
                raise UserError(f"{where}.{field} must be a mapping of names to values",
                                hint=f"e.g. {field}: {{data: ${{{{parent.{field}.data}}}}}}")
        values = {key: _bind_input(value, parent_inputs, step.base_dir, f"{where}.inputs.{key}", prefix)
                  for key, value in (step.node.get("inputs") or {}).items()}
        if step.type == "pipeline" and step.children is not None:
            sub_inputs = _component_inputs(step.component_data, values, step.component_dir)
            sub_nodes, sub_outputs = _resolve_jobs(step.children, sub_inputs, step.component.path
                                                   if step.component else file, step.qualified + "/")
            nodes += sub_nodes
            aliases.update({(step.name, k): v for k, v in sub_outputs.items()})
            _bind_outputs(step.node, step.name, bound_outputs, aliases)
            continue
        item = _node(step, values)
        for key, value in (step.node.get("outputs") or {}).items():
            out_type = value.get("type", "uri_folder") if isinstance(value, dict) else "uri_folder"
            item.outputs[key] = {"type": out_type}
            binding = graph.whole_binding(value.get("path") if isinstance(value, dict) else value)
            if binding is not None and binding.output:
                bound_outputs[binding.output] = OutputRef(step.qualified, key)
        _declared_outputs(item, step)
        nodes.append(item)
    _link_level(nodes, {s.name for s in steps}, aliases, prefix, file)
    return nodes, bound_outputs


def _link_level(nodes: list, names: set, aliases: dict, prefix: str, file: str) -> None:
    """This level's step references, in its own steps and in nested ones, made OutputRefs."""
    for item in nodes:
        for key, value in item.inputs.items():
            if isinstance(value, _StepRef) and value.level == prefix:
                if value.step not in names:
                    raise UserError(f"{file}: step {item.name} reads from {value.step!r}, which is not a step")
                item.inputs[key] = aliases.get((value.step, value.output), OutputRef(prefix + value.step,
                                                                                     value.output))


_AZURE_ONLY = "runs only on Azure ML"


def _node(step, values: dict) -> Node:
    """The node of a step that is not a (local) nested pipeline, with why it cannot run here, if so."""
    item = Node(step.qualified, step.component_dir, inputs=values)
    data = step.component_data
    if step.source == graph.REGISTERED:
        item.local_problem = (f"component {step.reference!r} is registered in a workspace; point component: "
                              "at a local copy of its YAML")
    elif step.type != "command":
        item.local_problem = (f"{_article(step.type)} {step.type} step {_AZURE_ONLY}; submit without --local, "
                              "or make it a command step")
    elif "condition" in step.node:  # Azure ML evaluates it when the step is due; the local runner does not
        item.local_problem = (f"a step with condition: {_AZURE_ONLY}; submit without --local, or run it "
                              f"unconditionally here: --set jobs.{step.name}.condition=null")
    elif step.source == graph.LOCAL_FILE and data is None:
        raise UserError(f"{step.file}: jobs.{step.name}.component: {step.component.problem}")
    elif data is not None and graph.step_component_kind(data) not in _RUNNABLE:
        item.local_problem = (f"its component is a {recognise(data) or 'kind amldist does not know'}, which "
                              f"{_AZURE_ONLY}; submit without --local")
    elif step.source == graph.COMMAND:
        item.command_node = {k: v for k, v in step.node.items() if k not in ("inputs", "outputs", "type")}
    elif data is None:
        item.local_problem = "it has neither a component nor a command"
    else:
        item.component = step.component if step.source == graph.LOCAL_FILE else copy.deepcopy(data)
        item.overrides = {k: step.node[k] for k in graph.NODE_OVERRIDES if k in step.node}
    item.local_problem = item.local_problem or _asset_inputs(step, values)
    return item


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _asset_inputs(step, values: dict) -> str | None:
    """Why a step cannot run here because an input is an Azure ML data asset with no local copy."""
    for key, value in values.items():
        path = value.get("path") if isinstance(value, dict) else None
        if isinstance(path, str) and paths.kind_of(path) == paths.ASSET:
            written = step.node["inputs"][key]
            binding = graph.whole_binding(written.get("path") if isinstance(written, dict) else written)
            instead = (f"--input {binding.input}=./local/copy" if binding is not None and binding.input
                       and "/" not in step.qualified else f"--set jobs.{step.name}.inputs.{key}.path=./local/copy")
            return f"input {key!r} is the Azure ML data asset {path!r}, not on this machine; pass {instead}"
    return None


def _bind_outputs(node: dict, step: str, bound_outputs: dict, aliases: dict) -> None:
    for key, value in (node.get("outputs") or {}).items():
        binding = graph.whole_binding(value.get("path") if isinstance(value, dict) else value)
        if binding is not None and binding.output and (step, key) in aliases:
            bound_outputs[binding.output] = aliases[(step, key)]


def _declared_outputs(item: Node, step) -> None:
    """A component step writes every output its component declares, bound or not."""
    spec = step.component_data if item.local_problem is None and item.command_node is None else None
    for key, port in ((spec or {}).get("outputs") or {}).items():
        out_type = port.get("type", "uri_folder") if isinstance(port, dict) else "uri_folder"
        item.outputs.setdefault(key, {"type": out_type})


def _bind_input(value, parent_inputs: dict, base_dir: str, where: str, level: str):
    """A step input's value: a literal, a data path, a parent input's value, or a step reference
    (a :class:`_StepRef` until every step of this level is known)."""
    target = value.get("path", value.get("value")) if isinstance(value, dict) else value
    binding = graph.whole_binding(target)
    if binding is None:
        if graph.bindings(target):
            # "--lr=${{parent.inputs.lr}}": literal text around parent inputs
            return graph.PARENT.sub(lambda m: _literal_text(graph.binding_of(m), parent_inputs, where), target)
        return _input_value(value, base_dir)
    if binding.input is not None:
        if binding.input not in parent_inputs:
            raise UserError(f"{where}: the pipeline has no input {binding.input!r}")
        bound = parent_inputs[binding.input]
        if isinstance(value, dict) and isinstance(bound, dict):
            return {**value, **bound, "type": value.get("type", bound.get("type"))}
        return bound
    if binding.step_output is not None:
        return _StepRef(level, *binding.step_output)
    raise UserError(f"{where}: amldist cannot resolve {binding.text}",
                    hint="bind to ${{parent.inputs.NAME}} or ${{parent.jobs.STEP.outputs.NAME}}")


def _literal_text(binding, parent_inputs: dict, where: str) -> str:
    if binding.input is not None and binding.input in parent_inputs:
        value = parent_inputs[binding.input]
        if not isinstance(value, (dict, _StepRef, OutputRef)):
            return str(value)
    raise UserError(f"{where}: {binding.text} inside other text must name a literal pipeline input")


def _input_value(value, base_dir: str):
    """A pipeline (or step) input as written -> its value: literals as they are, ``{value:}`` /
    ``{default:}`` unwrapped, data inputs with local paths made absolute."""
    if isinstance(value, (OutputRef, _StepRef)):
        return value
    if isinstance(value, dict):
        if is_path_input(value) or is_data_type(value.get("type")):
            out = dict(value)
            if isinstance(out.get("path"), str) and paths.is_local(out["path"]):
                out["path"] = paths.local_path(out["path"], base_dir)
            return out
        return value.get("value", value.get("default"))
    return value


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
