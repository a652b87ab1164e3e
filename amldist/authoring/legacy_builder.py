"""``distributed_component(...)``: a legacy ``DistributedComponent`` spec, checked before it is written.

The legacy spec (``type: DistributedComponent``) is what the old Component SDK and azure-ai-ml's
internal components read: the command lives in ``launcher.additional_arguments`` with
``{inputs.x}`` placeholders and ``[ ... ]`` optional groups (see ``amldist.rules.placeholders``).

Checked here, each with one UserError naming the input and what to do:
- the launcher is ``torch.distributed`` or ``mpi`` (the old SDK silently ran anything else as mpi);
- every ``{inputs.x}`` / ``{outputs.y}`` names a declared input / output;
- an ``optional: true`` input without a default is referenced only inside an optional group (outside
  one, the command would carry a bare flag with nothing after it when the input is not given);
- input types are legacy types amldist can also convert to v2;
- then ``amldist.validate.validate_spec`` reports no error.
"""

from __future__ import annotations

from amldist.rules.command_checks import command_findings
from amldist.diagnostics import errors_in
from amldist.errors import UserError
from amldist.model.kinds import type_word
from amldist.model.specs import DistributedComponent, Launcher
from amldist.validate import validate_spec

LEGACY_SCHEMA = "https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json"
LAUNCHERS = ("torch.distributed", "mpi")
# legacy parameter type (lower-cased) -> v2 type; data types are matched by _data_type
_PRIMITIVE = {"string": "string", "integer": "integer", "int": "integer", "float": "number",
              "double": "number", "boolean": "boolean", "enum": "string"}


class ComponentSpecError(UserError):
    """A component that validation would reject; ``code`` is the diagnostic code."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message, hint=hint, exit_code=1)  # a spec that does not validate: 1, as validate says
        self.code = code


def normalize_launcher(value) -> str:
    """The canonical launcher name (case-insensitive), or a ComponentSpecError."""
    word = type_word(value)
    if word in LAUNCHERS:
        return word
    hint = "use launcher='torch.distributed' (PyTorch, one process per GPU) or launcher='mpi'"
    if word in ("pytorch", "torch", "tensorflow"):
        hint = f"the legacy spec has no {value!r} launcher; " + hint
    raise ComponentSpecError("unknown-launcher", f"unknown launcher {value!r}", hint=hint)


def command_problems(command: str, inputs: dict | None, outputs: dict | None) -> list[tuple[str, str, str]]:
    """(code, message, hint) for each error of a legacy command against the declared ports
    (:mod:`amldist.rules.command_checks`, the validator's rule)."""
    return [(f.code, f"command: {f.without_position()}", f.hint)
            for f in command_findings(command, inputs or {}, outputs or {}, legacy=True) if f.severity == "error"]


def _data_type(name: str) -> str | None:
    lowered = type_word(name) or ""
    if lowered == "anyfile" or (lowered.endswith("file") and lowered != "file"):
        return "uri_file"
    if lowered in ("path", "anydirectory") or lowered.endswith("directory"):
        return "uri_folder"
    return None


def v2_port_type(legacy_type, *, enum=None, where: str = "type") -> str:
    """The v2 type of a legacy port type, or a ComponentSpecError naming ``where``."""
    if isinstance(legacy_type, list) and legacy_type and all(isinstance(t, str) for t in legacy_type):
        kinds = {_data_type(t) for t in legacy_type}
        if None not in kinds:
            return "uri_file" if kinds == {"uri_file"} else "uri_folder"
    elif isinstance(legacy_type, str):
        lowered = type_word(legacy_type)
        if lowered == "enum" and not (isinstance(enum, list) and enum):
            raise ComponentSpecError("missing-enum", f"{where}: type Enum needs a non-empty 'enum' list")
        v2 = _PRIMITIVE.get(lowered) or _data_type(legacy_type)
        if v2:
            return v2
    raise ComponentSpecError(
        "unknown-input-type", f"{where}: unknown legacy type {legacy_type!r}",
        hint="use String, Integer, Float, Boolean, Enum, path, AnyFile, AnyDirectory or a list of data types",
    )


def _port(name: str, value, what: str) -> dict:
    """A port given as a mapping, or as a bare type name (``"AnyDirectory"``)."""
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, dict) or "type" not in value:
        raise ComponentSpecError(
            f"invalid-{what}", f"{what} {name!r} must be a mapping with a 'type' (or a type name), got {value!r}",
            hint="e.g. {'type': 'AnyDirectory'} or {'type': 'Integer', 'default': 1}",
        )
    v2_port_type(value["type"], enum=value.get("enum"), where=f"{what}s.{name}")
    return dict(value)


def _environment(value):
    """A legacy environment mapping; a string is a registered environment name or a docker image."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        if "/" in value or ":" in value:  # an image reference like mcr.microsoft.com/azureml/x:tag
            return {"docker": {"image": value}, "os": "Linux"}
        return {"name": value}
    raise ComponentSpecError(
        "invalid-environment", f"environment must be a mapping, a name or a docker image, got {value!r}",
        hint="e.g. environment={'docker': {'image': 'mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04'}}",
    )


def distributed_component(
    name: str,
    version,
    launcher: str = "torch.distributed",
    *,
    command: str,
    inputs: dict | None = None,
    outputs: dict | None = None,
    environment=None,
    code: str | None = None,
    display_name: str | None = None,
    description: str | None = None,
    tags: dict | None = None,
    is_deterministic: bool | None = None,
) -> DistributedComponent:
    """A legacy DistributedComponent spec; ``.to_yaml()`` / ``.save(path)`` write it.

    ``inputs``/``outputs`` map names to legacy port mappings (``{"type": "Integer", "default": 1}``)
    or bare type names. ``environment`` is a legacy mapping (``docker``, ``conda``, ``os``, ``name``),
    a registered environment name, or a docker image (a string with ``/`` or ``:``).
    """
    if not isinstance(name, str) or not name.strip() or any(c.isspace() for c in name):
        raise ComponentSpecError("invalid-name", f"component name must be a non-empty word, got {name!r}")
    if version is None or isinstance(version, bool) or str(version).strip() == "":
        raise ComponentSpecError("invalid-version", f"version must be given, got {version!r}", hint="e.g. '1.0.0'")
    if not isinstance(command, str) or not command.strip():
        raise ComponentSpecError("missing-command", "command must be a non-empty string")
    launcher = normalize_launcher(launcher)
    inputs = {k: _port(k, v, "input") for k, v in (inputs or {}).items()} or None
    outputs = {k: _port(k, v, "output") for k, v in (outputs or {}).items()} or None
    problems = command_problems(command, inputs, outputs)
    if problems:
        code_, message, hint = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise ComponentSpecError(code_, message + more, hint=hint)
    spec = DistributedComponent(
        schema=LEGACY_SCHEMA,
        name=name,
        version=str(version),
        display_name=display_name,
        type="DistributedComponent",
        description=description,
        tags=dict(tags) if tags else None,
        is_deterministic=is_deterministic,
        inputs=inputs,
        outputs=outputs,
        code=code,
        environment=_environment(environment),
        launcher=Launcher(type=launcher, additional_arguments=command.strip()),
    )
    check_with_validator(spec)
    return spec


def first_validation_error(spec):
    """The validator's first error for ``spec`` and its one-line text, or None when it has none.

    The text counts the errors left out, so that a builder refusing with the first one still
    says how many more ``amldist validate`` would show.
    """
    errors = errors_in(validate_spec(spec))
    if not errors:
        return None
    first = errors[0]
    more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
    return first, f"{first.message}{more}"


def check_with_validator(spec) -> None:
    """Raise the validator's first error for ``spec`` as a ComponentSpecError."""
    found = first_validation_error(spec)
    if found is not None:
        first, message = found
        raise ComponentSpecError(first.code, f"{first.field}: {message}" if first.field else message, hint=first.hint)
