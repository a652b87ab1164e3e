"""Legacy ``DistributedComponent`` -> ML v2 command component (a component -> a job: ``amldist.authoring.component_job``).

Mapping (``convert_legacy``), with the choices the issue left open:

- ``launcher.type`` torch.distributed -> ``distribution.type: pytorch``, mpi -> ``mpi``;
  ``launcher.additional_arguments`` -> ``command`` with ``{inputs.x}`` -> ``${{inputs.x}}`` and
  ``[ ... ]`` -> ``$[[ ... ]]`` (``amldist.rules.placeholders``).
- Input types (case-insensitive): path, AnyDirectory and any other ``*Directory`` -> uri_folder;
  AnyFile and any other ``*File`` -> uri_file; a list -> uri_folder unless every entry is a file type;
  String -> string, Integer/int -> integer, Float/double -> number, Boolean -> boolean, Enum -> string
  with ``enum`` (values as strings). optional, default, min, max, enum and description are kept; other
  port keys (is_resource, datastore_mode, ...) have no v2 meaning and are dropped with a warning.
- Name: v2 component names must match ``^[a-z][a-z0-9_]*$`` (azure-ai-ml's check), legacy names may
  hold dots and capitals, so the name is lower-cased and every other character becomes ``_``; the
  legacy name is kept as ``display_name`` when there was none.
- ``code``: absent means the spec's folder in the legacy SDK, so it becomes ``code: .``.
- Environment: ``name`` (+ ``version``) -> ``azureml:<name>:<version>`` or ``azureml:<name>@latest``
  (a registered or curated environment; it wins over docker/conda, as in the legacy service);
  ``docker.image`` -> inline ``image``; ``docker.build.dockerfile: file:<path>`` -> ``build:`` with the
  Dockerfile's folder as context (inline Dockerfile text cannot be expressed in v2: an error);
  ``conda.conda_dependencies`` -> inline ``conda_file`` mapping; ``conda.conda_dependencies_file`` ->
  ``conda_file`` path; ``conda.pip_requirements_file`` -> an inline conda mapping listing the
  requirements (what azure-ai-ml builds from it, python pinned to its 3.8.5); an image is required
  in v2, so conda without one gets ``DEFAULT_IMAGE``; no environment at all gets ``DEFAULT_IMAGE``.
  Legacy file paths are relative to the code folder, v2 ones to the YAML's folder: they are joined.
- Run settings given as options: instance_count and shm_size, docker_args -> ``resources``,
  process_count_per_node -> ``distribution.process_count_per_instance``. A component has no
  ``limits`` in v2, so timeout_seconds is kept as the tag ``amldist.timeout_seconds``, which
  ``component_to_job`` turns into ``limits.timeout`` (its own ``timeout`` argument wins).
- ``<spec>.additional_includes`` next to the legacy file -> ``additional_includes:`` (local paths only).
"""

from __future__ import annotations

import os
import posixpath
import re
import warnings

from amldist.rules import paths, placeholders
from amldist.rules.shm_size import HINT as SHM_SIZE_HINT, is_shm_size, message as shm_size_message
from amldist.authoring.arguments import count
from amldist.diagnostics import errors_in
from amldist.errors import UserError
from amldist.model.files import FileProblem, read_text
from amldist.authoring.legacy_builder import (
    ComponentSpecError,
    check_with_validator,
    command_problems,
    normalize_launcher,
    v2_port_type,
)
from amldist.model import CommandComponent, DistributedComponent, Distribution, Resources, YamlError, load_yaml, loads
from amldist.validate import validate_file, validate_text

V2_COMPONENT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json"
DEFAULT_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest"
TIMEOUT_TAG = "amldist.timeout_seconds"
LEGACY_PIP_PYTHON = "python=3.8.5"  # azure-ai-ml's InternalEnvironment.DEFAULT_PYTHON_VERSION
DISTRIBUTION_OF_LAUNCHER = {"torch.distributed": "pytorch", "mpi": "mpi"}

_KEPT_INPUT_KEYS = ("type", "description", "optional", "default", "min", "max", "enum")


class ConversionWarning(UserWarning):
    """Something of the legacy spec that has no v2 equivalent and was left out."""


class ConversionError(UserError):
    """The legacy file does not validate; ``diagnostics`` holds the validator's findings."""

    def __init__(self, message: str, diagnostics=(), hint: str | None = None):
        super().__init__(message, hint=hint, exit_code=1)
        self.diagnostics = list(diagnostics)


def v2_name(legacy_name: str) -> str:
    """``microsoft.com.Sample-X`` -> ``microsoft_com_sample_x`` (v2 names: lower-case, digits and _)."""
    name = re.sub(r"[^a-z0-9_]", "_", legacy_name.lower())
    if not name[:1].isalpha():
        name = "c_" + name
    return name[:255]


def _port(name: str, port: dict, what: str) -> dict:
    v2 = {"type": v2_port_type(port.get("type"), enum=port.get("enum"), where=f"{what}s.{name}")}
    for key in _KEPT_INPUT_KEYS[1:] if what == "input" else ("description",):
        if key in port:
            v2[key] = port[key]
    if "enum" in v2:
        v2["enum"] = [str(v) for v in v2["enum"]]
        if v2.get("default") is not None:
            v2["default"] = str(v2["default"])
    dropped = sorted(set(port) - set(_KEPT_INPUT_KEYS if what == "input" else ("type", "description")))
    if dropped:
        warnings.warn(f"{what}s.{name}: dropped {', '.join(dropped)} (no v2 equivalent)", ConversionWarning, 3)
    return v2


def _join(code: str, path: str) -> str:
    """A legacy path (relative to the code folder) as a path relative to the spec's folder."""
    if posixpath.isabs(path) or ":" in code or posixpath.isabs(code):
        return path
    return posixpath.normpath(posixpath.join(code, path))


LEGACY_FILES_HINT = "move the file into the code folder and name it relative to that folder"


def _inside_code(field: str, value: str, code: str) -> str:
    """``value``, a legacy environment file path (relative to the code folder), unless it climbs out of the
    code folder: azure-ai-ml reads it from the component's code snapshot (a temporary copy of that folder
    and its additional_includes) when it submits, where ``../x`` names nothing (one line here instead)."""
    if paths.leaves_folder(value):
        raise ComponentSpecError("outside-code", f"{field}: {value!r} is outside the code folder {code!r}; "
                                 "Azure ML reads it from the component's code snapshot, which holds only that "
                                 "folder", hint=LEGACY_FILES_HINT)
    return value


def _environment(env, code: str, base_dir: str):
    if env is None:
        warnings.warn(f"no environment given: using {DEFAULT_IMAGE}", ConversionWarning, 3)
        return {"image": DEFAULT_IMAGE}
    if not isinstance(env, dict):
        raise ComponentSpecError("invalid-environment", f"environment must be a mapping, got {env!r}")
    if env.get("name"):
        if env.get("docker") or env.get("conda"):
            warnings.warn("environment: 'name' given, so docker and conda are ignored", ConversionWarning, 3)
        version = env.get("version")
        return f"azureml:{env['name']}:{version}" if version else f"azureml:{env['name']}@latest"
    docker, conda = env.get("docker") or {}, env.get("conda") or {}
    out: dict = {}
    dockerfile = (docker.get("build") or {}).get("dockerfile")
    if dockerfile:
        if not dockerfile.startswith("file:"):
            raise ComponentSpecError(
                "inexpressible", "environment.docker.build.dockerfile holds Dockerfile text; v2 needs a file",
                hint="save it as a file next to the spec and write dockerfile: file:Dockerfile",
            )
        if conda:
            raise ComponentSpecError(
                "inexpressible", "environment has both a Dockerfile build and conda; v2 builds only the Dockerfile",
                hint="install the conda dependencies in the Dockerfile",
            )
        if docker.get("image"):
            warnings.warn("environment: docker.build given, so docker.image is ignored", ConversionWarning, 3)
        path = _join(code, _inside_code("environment.docker.build.dockerfile", dockerfile[len("file:"):], code))
        out["build"] = {"path": posixpath.dirname(path) or ".", "dockerfile_path": posixpath.basename(path)}
    else:
        out["image"] = docker.get("image") or DEFAULT_IMAGE
    if conda.get("conda_dependencies"):
        out["conda_file"] = conda["conda_dependencies"]
    elif conda.get("conda_dependencies_file"):
        out["conda_file"] = _join(code, _inside_code("environment.conda.conda_dependencies_file",
                                                     conda["conda_dependencies_file"], code))
    elif conda.get("pip_requirements_file"):
        field = "environment.conda.pip_requirements_file"
        path = os.path.join(base_dir, _join(code, _inside_code(field, conda["pip_requirements_file"], code)))
        try:  # only a regular file, of bounded size (a FIFO or /dev/zero here would hang the conversion)
            lines = read_text(path).splitlines()
        except FileProblem as exc:
            raise UserError(f"cannot read pip requirements file {path}: {exc.reason}", exit_code=1) from None
        reqs = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        out["conda_file"] = {"name": "project_environment", "dependencies": [LEGACY_PIP_PYTHON, {"pip": reqs}]}
    if str(env.get("os", "")).lower() == "windows":
        out["os_type"] = "windows"
    extra = sorted(set(env) - {"name", "version", "docker", "conda", "os"})
    if extra:
        warnings.warn(f"environment: dropped {', '.join(extra)} (no v2 equivalent)", ConversionWarning, 3)
    return out


def _additional_includes(path: str | None) -> list | None:
    if not path:
        return None
    includes = os.path.splitext(path)[0] + ".additional_includes"
    if not os.path.isfile(includes):
        return None
    text = read_text(includes)
    try:
        data = load_yaml(text).data
    except YamlError:  # a plain list of lines is not always valid YAML
        data = None
    lines = data.get("additional_includes", []) if isinstance(data, dict) else text.splitlines()
    lines = [x for x in lines if not isinstance(x, str) or x.strip()]
    local = [x.strip() for x in lines if isinstance(x, str)]
    if len(local) != len(lines):
        warnings.warn("additional_includes: artifact entries dropped (local paths only)", ConversionWarning, 3)
    return local or None


def check_file(path: str, what: str) -> None:
    """Raise a ConversionError holding the validator's errors for the file, if it has any."""
    errors = errors_in(validate_file(path))
    if errors:
        raise ConversionError(f"{path} is not a valid {what} ({len(errors)} error(s))", errors)


def load_legacy(spec_or_path) -> tuple[DistributedComponent, str | None]:
    """The legacy spec and its file path; the validator's errors raise a ConversionError."""
    path = None
    if isinstance(spec_or_path, (str, os.PathLike)):
        path = os.fspath(spec_or_path)
        text = read_text(path)  # read once; a missing or special file is its own one-line error
        errors = errors_in(validate_text(text, path, base_dir=os.path.dirname(os.path.abspath(path))))
        if errors:
            raise ConversionError(f"{path} is not a valid legacy spec ({len(errors)} error(s))", errors)
        spec = loads(text, file=path)
    else:
        spec = spec_or_path
    if not isinstance(spec, DistributedComponent):
        kind = getattr(spec, "kind", type(spec).__name__)
        raise ConversionError(
            f"{path or 'the spec'} is a {kind}, not a legacy DistributedComponent",
            hint="amldist convert reads legacy specs (type: DistributedComponent with a launcher)",
        )
    return spec, path


def _legacy_command(legacy) -> str:
    """The legacy launcher's arguments as one command, checked against the declared ports."""
    arguments = legacy.launcher.additional_arguments if legacy.launcher else None
    if isinstance(arguments, list):  # some legacy specs list the arguments
        arguments = " ".join(str(part) for part in arguments)
    if not isinstance(arguments, str) or not arguments.strip():
        raise ComponentSpecError("missing-command", "launcher.additional_arguments (the command) is missing")
    problems = command_problems(arguments, legacy.inputs, legacy.outputs)
    if problems:
        code, message, hint = problems[0]
        raise ComponentSpecError(code, message, hint=hint)
    return arguments


def convert_legacy(spec_or_path, *, instance_count=None, process_count_per_node=None, shm_size=None,
                   docker_args=None, timeout_seconds=None, checked: bool = False,
                   base_dir: str | None = None) -> CommandComponent:
    """The v2 command component equivalent to a legacy DistributedComponent (a spec or a file path).

    Paths in the result are relative to the legacy file's folder (for a spec object: ``base_dir``, else the
    current directory, which is also where a pip requirements file is read). Anything dropped is reported as a
    ConversionWarning (``warnings``); anything that cannot be expressed raises a UserError.
    The result is validated (the builders' self-check) unless ``checked`` says the caller has
    validated the legacy spec already (``amldist submit`` does, once).
    """
    legacy, path = load_legacy(spec_or_path)
    base_dir = os.path.dirname(os.path.abspath(path)) if path else (base_dir or os.getcwd())
    launcher = legacy.launcher
    arguments = _legacy_command(legacy)
    dist_type = DISTRIBUTION_OF_LAUNCHER[normalize_launcher(launcher.type)]
    if shm_size is not None and not is_shm_size(str(shm_size)):
        raise UserError(f"shm_size: {shm_size_message(shm_size)}", hint=SHM_SIZE_HINT)
    timeout = count("timeout_seconds", timeout_seconds)
    code = legacy.code if legacy.code is not None else "."
    # v2 tags are strings; legacy ones may be numbers, booleans or empty
    tags = {str(k): "" if v is None else str(v) for k, v in (legacy.tags or {}).items()}
    if timeout is not None:
        tags[TIMEOUT_TAG] = str(timeout)
    name = v2_name(str(legacy.name))
    resources = Resources(instance_count=count("instance_count", instance_count),
                          shm_size=None if shm_size is None else str(shm_size), docker_args=docker_args)
    component = CommandComponent(
        schema=V2_COMPONENT_SCHEMA,
        type="command",
        name=name,
        version=None if legacy.version is None else str(legacy.version),
        display_name=legacy.display_name or (str(legacy.name) if name != legacy.name else None),
        description=legacy.description,
        tags=tags or None,
        is_deterministic=legacy.is_deterministic,
        code=code,
        command=placeholders.legacy_to_v2(arguments.strip()),
        environment=_environment(legacy.environment, code, base_dir),
        inputs={k: _port(k, v, "input") for k, v in (legacy.inputs or {}).items()} or None,
        outputs={k: _port(k, v, "output") for k, v in (legacy.outputs or {}).items()} or None,
        distribution=Distribution(type=dist_type,
                                  process_count_per_instance=count("process_count_per_node",
                                                                           process_count_per_node)),
        resources=resources if resources.to_dict() else None,
    )
    includes = _additional_includes(path)
    if includes:
        component.extra["additional_includes"] = includes
    dropped = sorted(set(legacy.extra) | ({"launcher extras"} if launcher.extra else set()))
    if dropped:
        warnings.warn(f"dropped {', '.join(dropped)} (no v2 equivalent)", ConversionWarning, 2)
    if not checked:
        check_with_validator(component)
    return component


def rebase_paths(component: CommandComponent, from_dir: str, to_dir: str) -> CommandComponent:
    """Rewrite the component's relative local paths for a YAML written in ``to_dir`` instead."""

    def move(p):
        return paths.rebase(p, from_dir, to_dir)

    component.code = move(component.code)
    env = component.environment
    if isinstance(env, dict):
        if isinstance(env.get("conda_file"), str):
            env["conda_file"] = move(env["conda_file"])
        if isinstance(env.get("build"), dict):
            env["build"]["path"] = move(env["build"].get("path"))
    if isinstance(component.extra.get("additional_includes"), list):
        component.extra["additional_includes"] = [move(p) for p in component.extra["additional_includes"]]
    return component
