"""A component (v2, or a legacy DistributedComponent) as the command job that runs it once.

``amldist submit`` runs components this way; pipeline code can call ``component_to_job`` too.
Legacy specs go through ``amldist.authoring.convert.convert_legacy`` first.
"""

from __future__ import annotations

import os

from amldist.rules import placeholders
from amldist.authoring.arguments import count
from amldist.authoring.convert import TIMEOUT_TAG, check_file, convert_legacy
from amldist.errors import UserError
from amldist.rules import counts, paths, process_counts
from amldist.rules.booleans import is_optional
from amldist.rules.suggestions import did_you_mean
from amldist.rules.literal_inputs import literal_value as _literal
from amldist.rules.secrets import shown
from amldist.model.kinds import binds_path, type_word
from amldist.model import CommandComponent, CommandJob, DistributedComponent, Distribution, Limits, Resources, load

V2_JOB_SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"


def _load_component(component, base_dir, checked: bool):
    if isinstance(component, (str, os.PathLike)):
        path = os.fspath(component)
        base_dir = os.path.dirname(os.path.abspath(path))
        spec = load(path)
        if isinstance(spec, DistributedComponent):
            return convert_legacy(path), base_dir
        check_file(path, "component")
        component = spec
    elif isinstance(component, DistributedComponent):
        component = convert_legacy(component, checked=checked, base_dir=base_dir)
    if not isinstance(component, CommandComponent):
        raise UserError(f"expected a command component or a legacy DistributedComponent, got {component!r:.60}")
    return component, base_dir or os.getcwd()


def _local(path, base_dir):
    """Local relative paths made absolute, so the job means the same wherever its YAML goes."""
    if not paths.is_local(path):
        return path
    return paths.local_path(path, base_dir)


def _job_inputs(component: CommandComponent, given: dict) -> dict:
    declared = component.inputs or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        guess = did_you_mean(unknown[0], list(declared))
        raise UserError(f"unknown input(s) {', '.join(unknown)}: the component declares no such input"
                        + (f" ({guess})" if guess else ""),
                        hint=f"the component's inputs are: {', '.join(sorted(declared)) or 'none'}")
    out = {}
    for name, port in declared.items():
        value = given.get(name, port.get("default"))
        if value is None:
            if not is_optional(port):
                example = "./local/path" if binds_path(port.get("type")) else "VALUE"
                raise UserError(f"input {name!r} is required", hint=f"give it a value ({port.get('type')}): "
                                f"--input {name}={example}")
            continue
        if binds_path(port.get("type")):
            data = {"type": port["type"], **(value if isinstance(value, dict) else {"path": str(value)})}
            data["path"] = _local(data.get("path"), os.getcwd())
            if type_word(data["type"]) == "path":  # azure-ai-ml's untyped path: a file or a folder
                data["type"] = "uri_file" if isinstance(data["path"], str) and os.path.isfile(data["path"]) else "uri_folder"
            out[name] = data
        else:
            out[name] = _literal(name, port, value)
    return out


def _job_outputs(component: CommandComponent) -> dict:
    """The component's outputs as the job declares them: azure-ai-ml's untyped ``path`` is a folder
    there (``uri_folder``, what Azure ML mounts for it), which a command job can declare. A value
    output (a pipeline's control output) is kept: a local run gives it a folder; the Azure backend
    sends such a component as the one step of a pipeline job (:mod:`amldist.backends.azureml.component_pipeline`)."""
    outputs = {}
    for name, port in (component.outputs or {}).items():
        kind = port.get("type", "uri_folder") if isinstance(port, dict) else "uri_folder"
        outputs[name] = {"type": "uri_folder" if type_word(kind) == "path" else kind}
    return outputs


def component_to_job(component, *, inputs=None, compute=None, instance_count=None, process_count_per_instance=None,
                     instance_type=None, environment_variables=None, name=None, experiment_name=None, timeout=None,
                     base_dir=None, checked: bool = False, keep_includes: bool = False) -> CommandJob:
    """A command job that runs ``component`` once (a CommandComponent, a DistributedComponent or a path).

    ``inputs`` map names to values: literals for string/integer/number/boolean inputs (text is
    coerced), a path/URI or a ``{"path": ..., "mode": ...}`` mapping for data inputs (local relative
    paths are taken from the current directory). Defaults fill unset inputs; optional groups whose
    inputs stay unset are dropped from the command. Relative paths of the component (code, conda file,
    build context) are resolved against its folder (``base_dir`` for an object; default: the current
    directory), so the job holds absolute local paths. ``timeout`` (seconds) becomes ``limits.timeout``;
    without it the component's ``amldist.timeout_seconds`` tag does. ``checked``: the caller has
    validated ``component`` (an object) already, so it is not validated again. ``keep_includes``: the
    caller adds the component's ``additional_includes`` to the snapshot itself (``amldist submit`` does,
    :mod:`amldist.rules.additional_includes`); otherwise a component with some is refused.
    """
    component, base_dir = _load_component(component, base_dir, checked)
    if component.extra.get("additional_includes") and not keep_includes:
        raise UserError("the component has additional_includes, which a job cannot carry",
                        hint="copy those files into the code folder")
    job_inputs = _job_inputs(component, dict(inputs or {}))
    command = placeholders.drop_unset_groups(component.command or "", set(job_inputs), placeholders.V2)
    dist = Distribution.from_dict(component.distribution.to_dict()) if component.distribution else None
    if process_count_per_instance is not None:
        if dist is None or not process_counts.takes_process_count(dist.type):
            raise UserError(process_counts.message("process_count_per_instance", dist and dist.type, "the component"),
                            hint=process_counts.HINT)
        dist.process_count_per_instance = count("process_count_per_instance", process_count_per_instance)
    res = Resources.from_dict(component.resources.to_dict()) if component.resources else Resources()
    res.instance_count = count("instance_count", instance_count) or res.instance_count
    res.instance_type = instance_type or res.instance_type
    tags = dict(component.tags or {})
    tag_timeout = tags.pop(TIMEOUT_TAG, None)
    timeout = count("timeout", timeout) or _tag_timeout(tag_timeout)
    env = component.environment
    if isinstance(env, dict):
        env = dict(env)
        if isinstance(env.get("conda_file"), str):
            env["conda_file"] = _local(env["conda_file"], base_dir)
        if isinstance(env.get("build"), dict):
            env["build"] = dict(env["build"], path=_local(env["build"].get("path"), base_dir))
    return CommandJob(
        schema=V2_JOB_SCHEMA, type="command", name=name, display_name=component.display_name,
        experiment_name=experiment_name, description=component.description, tags=tags or None,
        code=_local(component.code, base_dir), command=command, environment=env,
        environment_variables=dict(environment_variables) if environment_variables else None, compute=compute,
        inputs=job_inputs or None,
        outputs=_job_outputs(component) or None,
        distribution=dist, resources=res if res.to_dict() else None,
        limits=Limits(timeout=timeout) if timeout else None,
    )


def _tag_timeout(value) -> int | None:
    """The component's ``amldist.timeout_seconds`` tag (what ``convert`` keeps of a legacy timeout) as a count;
    a tag that is no whole number of seconds (``"²"``, ``"1h"``) is one line naming the tag, not ignored."""
    if value is None:
        return None
    try:
        return counts.parse_count(str(value), maximum=None)
    except ValueError as exc:
        raise UserError(f"tags.{TIMEOUT_TAG}: {exc}", hint=f"write the tag as a whole number of seconds ({TIMEOUT_TAG}: '3600')") from None
