"""Rules for pipeline jobs: bindings, component references, and per-node checks.

- ``${{parent.inputs.x}}`` / ``${{parent.outputs.z}}`` must name the pipeline's
  own inputs/outputs (``undeclared-input`` / ``undeclared-output``);
  ``${{parent.jobs.<node>.outputs.y}}`` must name a node (``unknown-job``) and,
  when that node's outputs are known (inline, or from a component file), one of
  them (``undeclared-output``). Bindings are looked for in every string of a node.
- ``component: ./x.yml`` (a local file that exists) is loaded once per process
  (:func:`amldist.rules.pipeline_graph.load_component_file`, which ``submit`` and the backends
  read too) and validated once, like a file of its own: its errors are reported at its own file
  and line (a nested pipeline component's step names and bindings included; its warnings show
  when it is validated itself). A node input or output the component (command, legacy or
  pipeline) does not declare is an error (``unknown-input`` / ``unknown-output``); a missing file
  is an error (``missing-component``), one that cannot be read is an error (``invalid-component``).
- ``too-many-steps`` / ``nested-too-deep``: more than ``MAX_STEPS`` steps once nested pipeline
  components are expanded, or nesting deeper than ``MAX_DEPTH`` (one line, at ``jobs``).
- ``missing-environment`` (warning): an inline command step (``command:`` and
  no ``component:``) without an ``environment``. azure-ai-ml 1.35.2 loads the
  pipeline, but its ``_validate()`` (run by ``jobs.create_or_update``) refuses it
  ("jobs.<node>.component.environment: Missing data for required field"), also
  when ``settings.default_environment`` is set: the SDK does not apply that
  setting to steps (it has no such field; the key is only passed on).
- Size rules use the node's ``distribution``/``resources`` over the component's
  (a node's distribution of another ``type`` replaces the component's). A
  pipeline has no job-level instance type, so there is no pipeline default to add.
"""

from __future__ import annotations

import dataclasses
import os

from amldist.model.kinds import (COMMAND_COMPONENT, COMMAND_JOB, DISTRIBUTED_COMPONENT, PIPELINE_COMPONENT,
                                 recognise, type_word)
from amldist.diagnostics import ERROR, WARNING
from amldist.errors import UserError
from amldist.rules import pipeline_graph as graph
from amldist.rules.literal_inputs import literal_value
from amldist.validate import command_rules, rules, templates
from amldist.rules.suggestions import suggest

_CONTROL_FLOW = ("if_else", "do_while", "parallel_for")
_INTERFACE_KINDS = (COMMAND_COMPONENT, COMMAND_JOB, DISTRIBUTED_COMPONENT, PIPELINE_COMPONENT)


def load_component(found):
    """The mapping of a loaded component file (a step's, read once) or a str saying why it cannot be used."""
    problem = found.problem
    if problem is not None and hasattr(problem, "col"):  # SpecLoadError / FileProblem: say where, not the path
        prefix = f"{getattr(problem, 'file', '')}:{problem.line}:{problem.col}: "
        reason = getattr(problem, "reason", None) or problem.message.removeprefix(prefix)
        return f"line {problem.line}: {reason}" if problem.line else reason
    if problem is not None:
        return problem.message
    return found.data if found.data is not None else "it is not a mapping"


def component_errors(found, validate_text) -> list:
    """The errors of a loaded component file, validated once per process as a file of its own
    (``validate_text``: the entry point's, handed down so that this module does not import it)."""
    if "errors" not in found.derived:
        found.derived["errors"] = []  # a component that includes itself: the nesting bound reports it
        if found.doc is not None:
            diagnostics = validate_text(found.text, found.path, explicit=False, base_dir=os.path.dirname(found.path),
                                        _parsed=(found.doc, None))
            # azure-ai-ml registers a step's component anonymously: a name it would refuse on its own is no error
            found.derived["errors"] = [d for d in diagnostics if d.severity == ERROR and d.field != "name"]
    return found.derived["errors"]


def _check_tree(ctx, data: dict, validate_text) -> None:
    """The bounds on nesting and the errors of every local component the steps name, at their own files."""
    if ctx.base_dir is None:
        return
    try:
        steps = graph.pipeline_steps(data, ctx.base_dir, ctx.file)
    except graph.PipelineTooLarge as exc:
        code = "nested-too-deep" if "deep" in exc.message else "too-many-steps"
        ctx.emit(("jobs",) if "jobs" in data else ("component",), ERROR, code, exc.message.split(": ", 1)[-1],
                 exc.hint)
        return
    if validate_text is None:
        return
    top = graph.top_component(data, ctx.base_dir)
    files = [top] if top is not None else []
    files += [s.component for s in steps if s.component is not None]
    for found in dict.fromkeys(files):
        for diagnostic in component_errors(found, validate_text):  # named as the pipeline is: relative when it is
            shown = diagnostic.file if os.path.isabs(ctx.file) else os.path.relpath(diagnostic.file)
            ctx.out.append(dataclasses.replace(diagnostic, file=shown))


def _strings(value, path):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, path + (index,))


def check_pipeline(ctx, data: dict, validate_text=None) -> None:
    inputs, outputs = rules.ports(data, "inputs"), rules.ports(data, "outputs")
    jobs = rules.declared(data.get("jobs"))
    steps = graph.steps_of(jobs, ctx.base_dir, ctx.file)  # the typed steps every layer reads
    node_outputs: dict = {}
    components = {step.name: _component_of(ctx, step) for step in steps}
    for step in steps:
        component = components[step.name]
        outs = [rules.ports(step.node, "outputs")]  # an inline node's own outputs are all there is
        if type_word(step.node.get("type")) == "import" and "output" in step.node:
            outs.append({"output": step.node["output"]})  # an import job's one output: azure-ai-ml names it output
        if reads_interface(component):
            outs.append(rules.ports(component, "outputs"))
        elif "component" in step.node:
            continue  # a remote, missing, unreadable or unmodelled component: its outputs are unknown
        if None not in outs:  # a malformed outputs section (the schema's error) leaves them unknown too
            node_outputs[step.name] = set().union(*outs)
    _check_tree(ctx, data, validate_text)
    settings = rules.declared(data.get("settings"))
    # azure-ai-ml does not check a pipeline component's bindings: what amldist finds there is a warning
    severity = WARNING if recognise(data) == PIPELINE_COMPONENT else ERROR
    for step in steps:
        check_node(ctx, step.name, step.node, components[step.name], inputs, outputs, jobs, node_outputs,
                   settings.get("default_environment"), severity)


def reads_interface(component) -> bool:
    """Whether amldist reads this component's inputs and outputs (a command or legacy component).

    A pipeline component, a promptflow ``flow.dag.yaml`` / ``run.yml``, a parallel or spark
    component, ...: their ports follow rules amldist does not model, and azure-ai-ml accepts a
    node's inputs for them without checking, so nothing is reported about those ports.
    """
    return isinstance(component, dict) and recognise(component) in _INTERFACE_KINDS


def _component_of(ctx, step):
    """The step's component mapping, None when unknown (remote or absent), after reporting trouble."""
    if step.source == graph.INLINE:
        return _of_step_type(ctx, step, step.node["component"])
    if step.component is None:  # registered, none, or no folder to read a local file from
        return None
    path, ref, local = ("jobs", step.name), step.node.get("component"), step.reference
    if not os.path.exists(local):  # azure-ai-ml refuses the pipeline at load time
        ctx.emit(path + ("component",), ERROR, "missing-component",
                 f"{rules.field_path(path)}.component: {ref!r} does not exist (relative to the pipeline's folder)",
                 "fix the path, or name a registered component (azureml:NAME:VERSION)")
        return None
    found = load_component(step.component)
    if isinstance(found, str):
        ctx.emit(path + ("component",), ERROR, "invalid-component",
                 f"{rules.field_path(path)}.component: {ref!r} cannot be used: {found}",
                 "run amldist validate on that file")
        return None
    return _of_step_type(ctx, step, found)


def _of_step_type(ctx, step, component):
    """``component``, or None after an error when it is not of the step's type (the graph's one rule)."""
    problem = graph.component_type_problem(step)
    if problem is None:
        return component
    ref = step.node.get("component")
    shown = repr(ref) if isinstance(ref, str) else "the inline component"
    ctx.emit(("jobs", step.name, "component"), ERROR, "invalid-component",
             f"{rules.field_path(('jobs', step.name))}.component: {shown} cannot be used: {problem}",
             f"write type: {step.type} in the component, or point the step at a {step.type} component")
    return None


def check_node(ctx, name, node, component, inputs, outputs, jobs, node_outputs, default_environment=None,
               severity=ERROR) -> None:
    path = ("jobs", name)
    _control_flow(ctx, name, node)
    _inline_step_names(ctx, path, node.get("component"))
    for value_path, text in _strings(node, path):
        for binding in graph.bindings(text):
            check_binding(ctx, value_path, binding.text, binding.parts, inputs, outputs, jobs, node_outputs, severity)
    node_inputs, node_outs = rules.ports(node, "inputs"), rules.ports(node, "outputs")
    if reads_interface(component):
        comp_inputs, comp_outputs = rules.ports(component, "inputs"), rules.ports(component, "outputs")
        for kind, given, declared in (("input", node_inputs, comp_inputs), ("output", node_outs, comp_outputs)):
            if given is None or declared is None:
                continue  # a malformed section: the schema reports it
            for key in given:
                if key not in declared:
                    guess = suggest(str(key), list(declared))
                    ctx.emit(path + (kind + "s", key), _port_severity(component), f"unknown-{kind}",
                             f"jobs.{name}.{kind}s.{key}: the component declares no {kind} {key!r}",
                             f"did you mean {guess!r}?" if guess else
                             (f"its {kind}s: {', '.join(map(str, declared))}" if declared else f"it has no {kind}s"))
        _literal_types(ctx, name, node_inputs, comp_inputs)
        if isinstance(node.get("component"), dict):
            command_rules.check_command(ctx, path + ("component", "command"), component.get("command"), comp_inputs,
                                comp_outputs)
    if "condition" in node and "component" not in node and type_word(node.get("type")) in (None, "command"):
        # azure-ai-ml reads an inline command step without condition: (an if_else step's is its own)
        ctx.emit(path + ("condition",), ERROR, "inline-condition", f"jobs.{name}.condition: azure-ai-ml refuses a "
                 "condition on an inline command step", "move the command into a component (component: ./x.yml)")
    if "command" in node:
        command_rules.check_command(ctx, path + ("command",), node.get("command"), node_inputs, node_outs)
        if "component" not in node:
            _inline_environment(ctx, name, node, default_environment)
    rules.check_code(ctx, node, path)
    if not templates.check_environment_reference(ctx, node.get("environment"), path + ("environment",)):
        rules.check_environment(ctx, node, path)
    _node_sizes(ctx, node, component, path)


_LITERAL_TYPES = ("integer", "number", "boolean")


def _literal_types(ctx, name, given, declared) -> None:
    """``input-type``: a literal a step passes to an integer, number or boolean input of its component that the
    run would refuse (``10.01`` to an integer), by the rule the run applies (:mod:`amldist.rules.literal_inputs`):
    an error at its line rather than after ``submit``. Only the type: ``enum``/``min``/``max`` stay the run's."""
    for key, value in (given or {}).items():
        port = (declared or {}).get(key)
        if not isinstance(port, dict) or type_word(port.get("type")) not in _LITERAL_TYPES \
                or isinstance(value, (dict, list)) or value is None or "${{" in str(value):
            continue
        try:
            literal_value(str(key), {"type": type_word(port.get("type"))}, value)
        except UserError as exc:
            ctx.emit(("jobs", name, "inputs", key), ERROR, "input-type", f"jobs.{name}.inputs.{key}: {exc.message}",
                     "pass a value of the input's type, or change the component's input type")


def _inline_step_names(ctx, path, component) -> None:
    """The step names of an inline pipeline component (a file's are its schema's): a name such as
    ``../../x`` would become a folder outside the run's (issue 17), and azure-ai-ml refuses it."""
    for where, name in graph.inline_steps(component, path + ("component",)):
        if not (isinstance(name, str) and graph.STEP_NAME.fullmatch(name)):
            ctx.emit(where, ERROR, "invalid-step-name",
                     f"{rules.field_path(where[:-1])}: {name!r} is not a step name",
                     "step names use lower-case letters, digits and _, and do not start with a digit")


def _port_severity(component: dict) -> str:
    """A port a pipeline component does not declare is a warning: azure-ai-ml 1.35.2 accepts the
    pipeline without a word (the value then reaches no step); a command component's is an error."""
    return WARNING if recognise(component) == PIPELINE_COMPONENT else ERROR


def _control_flow(ctx, name, node) -> None:
    """``if_else`` / ``do_while`` / ``parallel_for`` steps: azure-ai-ml 1.35.2 refuses them in a YAML file.

    Its ``load_job`` / ``load_component`` (and so ``az ml``) accept only command, import, sweep,
    parallel, pipeline, automl, spark and data_transfer steps there; control flow is built with
    the Python SDK (``azure.ai.ml.dsl.condition`` / ``do_while`` / ``parallel_for``).
    """
    node_type = node.get("type")
    if type_word(node_type) in _CONTROL_FLOW:
        ctx.emit(("jobs", name, "type"), ERROR, "control-flow-step",
                 f"jobs.{name}: a {node_type.strip()} step cannot be written in YAML; azure-ai-ml refuses it at load",
                 "build the condition or loop with the Python SDK (azure.ai.ml.dsl), or split the pipeline")


def _inline_environment(ctx, name, node, default_environment) -> None:
    """An inline command step needs its own ``environment`` (see the module docstring)."""
    node_type = node.get("type")
    if node_type is not None and type_word(node_type) != "command":
        return
    environment = node.get("environment")
    if environment is not None and environment != "" and environment != {}:
        return
    path = ("jobs", name)
    hint = "set environment: (azureml:NAME:VERSION, azureml:NAME@latest or an inline image)"
    if default_environment is not None:
        hint += "; azure-ai-ml does not apply settings.default_environment to a step"
    ctx.emit(path + ("environment",), WARNING, "missing-environment",
             f"jobs.{name}: an inline command step has no environment; azure-ai-ml refuses the pipeline at "
             "submission", hint, position=ctx.where(path))


def check_binding(ctx, value_path, text, parts, inputs, outputs, jobs, node_outputs, severity=ERROR) -> None:
    """One ``${{parent.<parts>}}`` binding (``text`` as written) found at ``value_path``.

    A step output that the step's component does not declare is a warning: azure-ai-ml
    1.35.2 loads and ``_validate()``s such a pipeline without a word.
    """
    position = ctx.locate(value_path, text)
    if len(parts) >= 2 and parts[0] in ("inputs", "outputs"):
        names = inputs if parts[0] == "inputs" else outputs
        if names is not None and not _declares(names, parts[1:]):
            wanted = ".".join(parts[1:])
            guess = suggest(wanted, list(names))
            ctx.emit(value_path, severity, f"undeclared-{parts[0][:-1]}",
                     f"{rules.field_path(value_path)} binds {text!r} but the pipeline declares no "
                     f"{parts[0][:-1]} {wanted!r}",
                     f"did you mean {guess!r}?" if guess else f"declare {wanted!r} under the pipeline's {parts[0]}:",
                     position=position)
    elif len(parts) >= 2 and parts[0] == "jobs":
        node = parts[1]
        if node not in jobs:
            guess = suggest(node, list(jobs))
            ctx.emit(value_path, severity, "unknown-job",
                     f"{rules.field_path(value_path)} binds {text!r} but the pipeline has no job {node!r}",
                     f"did you mean {guess!r}?" if guess else None, position=position)
        elif len(parts) >= 4 and parts[2] == "outputs" and node in node_outputs and not _declares(
                node_outputs[node], parts[3:]):
            known = node_outputs[node]
            wanted = ".".join(parts[3:])
            guess = suggest(wanted, list(known))
            ctx.emit(value_path, WARNING, "undeclared-output",
                     f"{rules.field_path(value_path)} binds {text!r} but job {node!r} has no output {wanted!r}",
                     f"did you mean {guess!r}?" if guess else None, position=position)


def _declares(names, parts) -> bool:
    """Whether ``names`` holds ``parts[0]`` or a dotted name ``parts[0].parts[1]...``.

    Pipeline input keys may be dotted (a flattened parameter group, as azure-ai-ml's
    ``validate_pipeline_input_key_characters`` allows), so ``${{parent.inputs.g.lr}}`` binds
    the input ``g.lr``, or the group ``g``'s member when ``g`` itself is declared.
    """
    return any(".".join(parts[:k]) in names for k in range(1, len(parts) + 1))


def _node_sizes(ctx, node, component, path) -> None:
    comp = component if isinstance(component, dict) else {}
    sections = ("distribution", "resources")
    node_dist, node_res = rules.declared(node.get("distribution")), rules.declared(node.get("resources"))
    # the step's effective settings: the one rule submit and the backends apply too
    merged = graph.effective_job({key: rules.declared(comp.get(key)) for key in sections},
                                 {"distribution": node_dist, "resources": node_res})
    distribution, resources = merged["distribution"], merged["resources"]
    origin = {}  # a value the step takes from its component is reported at the step's component:
    for key in ("process_count_per_instance",):
        if key not in node_dist and key in distribution:
            origin[key] = path + ("component",)
    for key in ("instance_count", "instance_type"):
        if key not in node_res and key in resources:
            origin[key] = path + ("component",)
    rules.check_sizes(ctx, distribution, resources, dist_path=path + ("distribution",),
                      res_path=path + ("resources",), origin=origin)
