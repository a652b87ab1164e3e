"""The pipeline as written, typed once: its steps, their components, and the ``${{parent...}}`` grammar.

The one place that walks a pipeline's ``jobs:``, loads the components its steps name and parses
bindings; ``amldist validate`` (:mod:`amldist.validate.pipeline`), ``amldist submit``
(:mod:`amldist.submit.pipeline`, which resolves the values) and both backends read what it builds.

- :func:`bindings` / :func:`whole_binding`: ``${{parent.inputs.x}}``, ``${{parent.outputs.z}}``,
  ``${{parent.jobs.<step>.outputs.y}}`` as a :class:`Binding` (the text as written and its parts).
- :func:`load_component_file`: a component file read and parsed once per process (keyed by path,
  modification time and size), never raising: a :class:`ComponentFile` holds the document or the
  problem. Layers above keep what they derive from it once (a legacy spec's v2 conversion, its
  diagnostics) in ``derived``.
- :func:`pipeline_steps`: the typed :class:`Step` tree of a pipeline mapping. A step knows its kind
  (``command``, ``pipeline``, ``spark``, ...), how its component is given (a local file, a registered
  ``azureml:`` component, an inline mapping, an inline command step), the loaded component, and, for
  a ``type: pipeline`` step with a local component, the steps of that component (``children``).
  A pipeline job written as ``component: ./pipeline_component.yml`` (no ``jobs:``) has that
  component's steps (:func:`top_component`).
- Bounds: nesting deeper than :data:`MAX_DEPTH` (a component that includes itself) and more than
  :data:`MAX_STEPS` steps counted while expanding (each use of a nested component counts its steps
  again: 1.6 KB of YAML can name 16,384 steps) are one :class:`PipelineTooLarge` error line.
- :func:`component_type_problem`: a ``type: command`` or ``type: pipeline`` step whose component
  writes another ``type:`` (``flibber``, ``pipeline`` under a command step, ...) is refused, as
  azure-ai-ml refuses it (``Value 'flibber' passed is not in set ['pipeline']``); such a nested
  component's steps are not expanded. ``validate`` and ``submit`` (whose validation is validate's)
  give its one line.
- :func:`effective_job`: the one rule for what a step runs: its own ``distribution``, ``resources``,
  ``limits``, ... laid over its component's (mappings merged key by key; a distribution of another
  ``type`` replaces the component's, one of the same type adjusts it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from amldist.errors import UserError
from amldist.model.kinds import COMMAND_COMPONENT, COMMAND_JOB, is_legacy_type, recognise, type_word
from amldist.rules import paths

MAX_DEPTH = 10
MAX_STEPS = 1000
NODE_OVERRIDES = ("distribution", "resources", "limits", "environment_variables", "compute", "environment")
PARENT = re.compile(r"\$\{\{\s*parent\.([^{}]*?)\s*\}\}")
# azure-ai-ml's is_valid_node_name (the JSON Schemas say the same for the steps of a file)
STEP_NAME = re.compile(r"[a-z_][a-z0-9_]*")

LOCAL_FILE, REGISTERED, INLINE, COMMAND, NONE = "local", "registered", "inline", "command", "none"


@dataclass(frozen=True)
class Binding:
    """One ``${{parent.<parts>}}``: ``text`` as written, ``parts`` split at dots."""

    text: str
    parts: tuple[str, ...]

    @property
    def input(self) -> str | None:
        """``x`` for ``${{parent.inputs.x}}``."""
        return self.parts[1] if len(self.parts) == 2 and self.parts[0] == "inputs" else None

    @property
    def output(self) -> str | None:
        """``z`` for ``${{parent.outputs.z}}``."""
        return self.parts[1] if len(self.parts) == 2 and self.parts[0] == "outputs" else None

    @property
    def step_output(self) -> tuple[str, str] | None:
        """``(step, y)`` for ``${{parent.jobs.<step>.outputs.y}}``."""
        if len(self.parts) == 4 and self.parts[0] == "jobs" and self.parts[2] == "outputs":
            return self.parts[1], self.parts[3]
        return None


def bindings(text) -> list[Binding]:
    """Every ``${{parent...}}`` in ``text`` (none for a value that is not a string)."""
    if not isinstance(text, str) or "${{" not in text:
        return []
    return [binding_of(match) for match in PARENT.finditer(text)]


def binding_of(match: re.Match) -> Binding:
    """The :class:`Binding` of one :data:`PARENT` match (for ``PARENT.sub``, which hands matches)."""
    return Binding(match.group(0), tuple(p.strip() for p in match.group(1).split(".")))


def whole_binding(value) -> Binding | None:
    """The binding when ``value`` is exactly one ``${{parent...}}`` (spaces around allowed)."""
    found = bindings(value)
    if len(found) == 1 and value.strip() == found[0].text:
        return found[0]
    return None


class PipelineTooLarge(UserError):
    """Too deep or too many steps once nested pipeline components are expanded."""


@dataclass(eq=False)  # one object per file read: compared and hashed by identity
class ComponentFile:
    """A component file as read once: ``doc`` (a YamlDocument) or ``problem`` (a UserError)."""

    path: str
    text: str | None = None
    doc: object = None
    problem: UserError | None = None
    derived: dict = field(default_factory=dict)  # what a layer above derived from it once

    @property
    def data(self) -> dict | None:
        data = getattr(self.doc, "data", None)
        return data if isinstance(data, dict) else None

    @property
    def kind(self) -> str | None:
        return recognise(self.data)


def step_component_kind(data) -> str | None:
    """The kind of a command step's component: azure-ai-ml loads a step's ``component:`` (inline or a file) as a
    component, so one that alone would read as a command job (an inline ``command:`` with no ``name`` or
    ``$schema``, azureml-examples' hello-batch; a file written as a command job) is a command component there."""
    kind = recognise(data)
    return COMMAND_COMPONENT if kind == COMMAND_JOB else kind


_components: dict = {}  # (absolute path, mtime, size) -> ComponentFile


def load_component_file(path: str) -> ComponentFile:
    """The component at ``path``, read and parsed once per process (see the module docstring)."""
    from amldist.model import read_document

    path = os.path.abspath(path)
    try:
        status = os.stat(path)
        key = (path, status.st_mtime_ns, status.st_size)
    except OSError:
        key = None
    if key in _components:
        return _components[key]
    found = ComponentFile(path)
    try:
        found.text, found.doc = read_document(path)
    except UserError as exc:
        found.problem = exc
    except RecursionError:
        found.problem = UserError(f"{path}: the document is nested too deeply to read")
    if key is not None:
        _components[key] = found
    return found


@dataclass
class Step:
    """One step of a pipeline, as written (values are resolved later, by amldist.submit.pipeline)."""

    name: str  # as written under jobs:
    qualified: str  # "train", or "outer/inner" inside a nested pipeline component
    node: dict  # the step's mapping as written
    type: str  # command, pipeline, spark, parallel, sweep, automl, ... (lower case)
    file: str  # the file that holds the step
    base_dir: str  # the folder its relative paths resolve against (that file's folder)
    source: str = NONE  # how its component is given: LOCAL_FILE, REGISTERED, INLINE, COMMAND, NONE
    reference: str | None = None  # the component's text (a local path made absolute, or azureml:...)
    component: ComponentFile | None = None  # a local component file, loaded
    children: list["Step"] | None = None  # a type: pipeline step's steps (local component only)

    @property
    def component_data(self) -> dict | None:
        """The component mapping: inline, or the local file's (None when registered, missing or broken)."""
        if self.source == INLINE:
            return self.node["component"]
        return self.component.data if self.component is not None else None

    @property
    def component_dir(self) -> str:
        """Where the component's own relative paths resolve: its file's folder, else the step's."""
        return os.path.dirname(self.component.path) if self.component is not None else self.base_dir


def top_component(data: dict, base_dir: str) -> ComponentFile | None:
    """The local pipeline component of a pipeline job written as ``component: ./x.yml`` (no ``jobs:``)."""
    ref = data.get("component")
    if "jobs" in data or not paths.is_local(ref):
        return None
    return load_component_file(paths.local_path(ref, base_dir))


def pipeline_steps(data: dict, base_dir: str, file: str) -> list[Step]:
    """The typed step tree of a pipeline (job or component) mapping; :class:`PipelineTooLarge` past the bounds."""
    counter = [0]
    top = top_component(data, base_dir)
    if top is not None and top.data is not None:
        return _steps(top.data.get("jobs"), os.path.dirname(top.path), top.path, "", 0, counter)
    return _steps(data.get("jobs"), base_dir, file, "", 0, counter)


def steps_of(jobs, base_dir: str | None, file: str) -> list[Step]:
    """One level of steps, not expanded (what a pipeline's own rules check); with no ``base_dir``
    (a spec read from standard input) local component files are not read."""
    return [_step(str(name), node, base_dir, file, "") for name, node in
            (jobs.items() if isinstance(jobs, dict) else ()) if isinstance(node, dict)]


def _steps(jobs, base_dir: str, file: str, prefix: str, depth: int, counter: list) -> list[Step]:
    if depth > MAX_DEPTH:
        raise PipelineTooLarge(f"{file}: pipeline components nested more than {MAX_DEPTH} deep",
                               hint="a pipeline component must not include itself")
    out = []
    for name, node in (jobs.items() if isinstance(jobs, dict) else ()):
        if not isinstance(node, dict):
            continue
        counter[0] += 1
        if counter[0] > MAX_STEPS:
            raise PipelineTooLarge(
                f"{file}: more than {MAX_STEPS} steps once nested pipeline components are expanded",
                hint="use fewer nested pipeline components, or register them (azureml:NAME:VERSION)")
        step = _step(str(name), node, base_dir, file, prefix)
        data = step.component_data if step.type == "pipeline" and component_type_problem(step) is None else None
        if data is not None:
            step.children = _steps(data.get("jobs"), step.component_dir, step.component.path if step.component
                                   else file, step.qualified + "/", depth + 1, counter)
        out.append(step)
    return out


def _step(name: str, node: dict, base_dir: str | None, file: str, prefix: str) -> Step:
    kind = node.get("type", "command")
    step = Step(name, prefix + name, node, type_word(kind) or "command", file, base_dir or "")
    ref = node.get("component")
    if isinstance(ref, dict):
        step.source = INLINE
    elif isinstance(ref, str) and paths.is_local(ref):
        step.source = LOCAL_FILE
        if base_dir is not None:
            step.reference = paths.local_path(ref, base_dir)
            step.component = load_component_file(step.reference)
    elif isinstance(ref, str) and ref.strip():
        step.source, step.reference = REGISTERED, ref.strip()
    elif "command" in node:
        step.source = COMMAND
    return step


def component_type_problem(step: Step) -> str | None:
    """Why the step's component (local file or inline) is not of the step's ``type`` (see the module docstring).

    Only a ``type`` written on both sides is compared: azure-ai-ml loads a component without one as the
    step's kind, and a step without one takes its component's. A legacy ``DistributedComponent`` runs as a
    command step."""
    data = step.component_data
    if step.type not in ("command", "pipeline") or "type" not in step.node or not isinstance(data, dict) \
            or "type" not in data:
        return None
    written = data["type"]
    if type_word(written) == step.type or (step.type == "command" and is_legacy_type(written)):
        return None
    shown = written if isinstance(written, str) and len(written) <= 40 else "something else"
    return (f"it is of type {shown!r}, and a {step.type} step runs only a {step.type} component "
            f"(type: {step.type}), as azure-ai-ml requires")


def inline_steps(component, path: tuple, depth: int = 0):
    """(path, name) of every step of an inline pipeline component, inline ones inside it included."""
    jobs = component.get("jobs") if isinstance(component, dict) and depth <= MAX_DEPTH else None
    for name, node in (jobs.items() if isinstance(jobs, dict) else ()):
        yield path + ("jobs", name), name
        if isinstance(node, dict) and isinstance(node.get("component"), dict):
            yield from inline_steps(node["component"], path + ("jobs", name, "component"), depth + 1)


def walk(steps: list[Step]):
    """Every step of the tree, parents before their children."""
    for step in steps:
        yield step
        if step.children:
            yield from walk(step.children)


def effective_job(component: dict, node: dict) -> dict:
    """The component with the step's own settings laid over it (see the module docstring)."""
    out = dict(component)
    for key in NODE_OVERRIDES:
        if key in node:
            out[key] = merge(out.get(key), node[key], key)
    return out


def merge(base, over, key: str = ""):
    """``over`` laid on ``base``: mappings key by key; a distribution of another type replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    if key == "distribution" and _type(over.get("type", base.get("type"))) != _type(base.get("type")):
        return over
    out = dict(base)
    for name, value in over.items():
        out[name] = merge(out.get(name), value, name) if key != "distribution" else value
    return out


def _type(value):
    return type_word(value) if isinstance(value, str) else value  # the one case folding (model.kinds)
