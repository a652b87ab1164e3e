"""``pytorch_job``, ``mpi_job``, ``tensorflow_job``: ML v2 command jobs for a VM size.

Each returns an ``amldist.model.CommandJob`` (``.to_yaml()``, ``.save(path)``, ``.to_dict()``,
``amldist.to_azure()``), already checked: a mistake raises one BuilderError (a UserError) naming the
argument, and whatever is returned passes ``amldist validate``. Nothing here imports azure-ai-ml.

Defaults that come from the VM size (``instance_type``, or ``vm_size`` for the nodes of a
compute cluster) are described in ``amldist.authoring.size_defaults``.
"""

from __future__ import annotations

import warnings

from amldist.authoring import arguments
from amldist.authoring import size_defaults
from amldist.authoring.arguments import BuilderError
from amldist.authoring.legacy_builder import first_validation_error
from amldist.authoring.size_defaults import BuilderWarning
from amldist.rules.command_checks import command_findings
from amldist.rules.process_counts import takes_process_count
from amldist.model.specs import CommandJob, Distribution, Limits, Resources

COMMAND_JOB_SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"

_COMMON_DOC = """
    Arguments shared by the three builders (all keyword-only):

    - command: the command line; ``${{inputs.x}}`` / ``${{outputs.y}}`` must name declared
      inputs / outputs.
    - environment (required): ``azureml:name:version`` / ``azureml:name@latest`` or an inline
      mapping (``{"image": ...}``).
    - code: local folder or ``azureml:`` code asset; compute: compute target name.
    - inputs: literal values (str, int, float, bool), mappings such as
      ``{"type": "uri_folder", "path": "azureml://..."}``, or azure.ai.ml ``Input`` objects.
    - outputs: mappings such as ``{"type": "uri_folder"}`` (or just ``"uri_folder"``), or
      azure.ai.ml ``Output`` objects.
    - instance_type: VM size for serverless compute, or a Kubernetes instance type;
      written to ``resources.instance_type``. vm_size: the VM size of ``compute``'s nodes when
      that is a compute cluster (not written; used for the defaults and checks below).
    - instance_count: nodes (default 1).
    - environment_variables: name -> string. On an InfiniBand size with more than one node
      the NCCL/UCX settings Azure uses on those sizes are added unless already set (see
      ``amldist.authoring.size_defaults``); ``infiniband_env=False`` leaves them out.
    - shm_size: shared memory of the container, e.g. ``"16g"`` (Azure's default is 2g).
    - timeout: seconds (or a timedelta) -> ``limits.timeout``.
    - name, display_name, experiment_name, description, tags: job metadata.

    Warns NoInfiniBandWarning for more than one node of a size without InfiniBand.
    Warnings are BuilderWarning subclasses (UserWarning): filter them by class.
    Raises BuilderError for anything ``amldist validate`` would reject.
"""


def _check_command(command: str, inputs, outputs) -> None:
    """The command against the declared ports (:mod:`amldist.rules.command_checks`, validate's rule):
    the first error raises, warnings are Python warnings."""
    for found in command_findings(command, inputs or {}, outputs or {}):
        if found.severity == "error":
            raise BuilderError("command", found.without_position(), hint=found.hint)
        warnings.warn(f"command: {found.without_position()} ({found.hint})", BuilderWarning, stacklevel=4)


def _check_with_validator(spec) -> None:
    """Raise the validator's first error as a BuilderError naming its field."""
    found = first_validation_error(spec)
    if found is not None:
        first, message = found
        raise BuilderError(first.field or first.code, message, hint=first.hint)


def _build(distribution_type: str, args: dict, distribution: dict) -> CommandJob:
    """Check ``args``, apply the size's defaults, warn, validate; ``distribution`` holds the counts."""
    command = arguments.text("command", args["command"], required=True)
    inputs = arguments.inputs(args["inputs"])
    outputs = arguments.outputs(args["outputs"])
    _check_command(command, inputs, outputs)
    instance_type = arguments.text("instance_type", args["instance_type"])
    vm_size = arguments.text("vm_size", args["vm_size"])
    instance_count = arguments.count("instance_count", args["instance_count"])
    size, instance_type = size_defaults.resolve_size(instance_type, vm_size)
    env = arguments.environment_variables(args["environment_variables"])
    if args["infiniband_env"]:
        env.update(size_defaults.infiniband_env(size, instance_count, env))
    notes = []
    if takes_process_count(distribution_type):
        given = arguments.count("process_count_per_instance", distribution["process_count_per_instance"])
        distribution["process_count_per_instance"] = size_defaults.processes_per_node(size, given, distribution_type)
        if given is None:
            notes.append(size_defaults.default_process_warning(size, instance_type, vm_size))
    spec = CommandJob(
        schema=COMMAND_JOB_SCHEMA,
        type="command",
        name=arguments.text("name", args["name"]),
        display_name=arguments.text("display_name", args["display_name"]),
        experiment_name=arguments.text("experiment_name", args["experiment_name"]),
        description=arguments.text("description", args["description"]),
        tags=arguments.tags(args["tags"]),
        code=arguments.text("code", args["code"]),
        command=command,
        environment=arguments.environment(args["environment"]),
        environment_variables=env or None,
        compute=arguments.text("compute", args["compute"]),
        inputs=inputs,
        outputs=outputs,
        distribution=Distribution(type=distribution_type, **distribution),
        resources=Resources(
            instance_count=instance_count or 1,
            instance_type=instance_type,
            shm_size=arguments.shm_size(args["shm_size"]),
        ),
        limits=Limits(timeout=t) if (t := arguments.timeout_seconds(args["timeout"])) is not None else None,
    )
    _check_with_validator(spec)
    for category, message in [n for n in notes if n] + size_defaults.warnings_for(size, distribution_type, instance_count, env):
        warnings.warn(message, category, stacklevel=3)  # 3: the user's call of the builder
    return spec


def pytorch_job(
    *, command, environment=None, code=None, compute=None, inputs=None, outputs=None,
    instance_type=None, instance_count=1, process_count_per_instance=None,
    environment_variables=None, shm_size=None, timeout=None, name=None, display_name=None,
    experiment_name=None, description=None, tags=None, vm_size=None, infiniband_env=True,
) -> CommandJob:
    """A command job with ``distribution: pytorch`` (Azure ML starts one process per GPU).

    process_count_per_instance: processes per node; default = the size's GPUs, and 1 on CPU
    sizes, on sizes amldist cannot count GPUs for, and when no size is given (those last two
    warn UnknownGpuCountWarning). More than the size's GPUs is an error.
    """
    args = dict(locals())
    return _build("pytorch", args, {"process_count_per_instance": process_count_per_instance})


def mpi_job(
    *, command, environment=None, code=None, compute=None, inputs=None, outputs=None,
    instance_type=None, instance_count=1, process_count_per_instance=None,
    environment_variables=None, shm_size=None, timeout=None, name=None, display_name=None,
    experiment_name=None, description=None, tags=None, vm_size=None, infiniband_env=True,
) -> CommandJob:
    """A command job with ``distribution: mpi`` (Azure ML runs the command under mpirun).

    process_count_per_instance: MPI ranks per node; default = the size's GPUs, and 1 on CPU
    sizes, on sizes amldist cannot count GPUs for, and when no size is given (those last two
    warn UnknownGpuCountWarning; pass it for CPU MPI codes that want one rank per core).
    More than the size's GPUs is an error.
    """
    args = dict(locals())
    return _build("mpi", args, {"process_count_per_instance": process_count_per_instance})


def tensorflow_job(
    *, command, environment=None, code=None, compute=None, inputs=None, outputs=None,
    instance_type=None, instance_count=1, worker_count=None, parameter_server_count=None,
    environment_variables=None, shm_size=None, timeout=None, name=None, display_name=None,
    experiment_name=None, description=None, tags=None, vm_size=None, infiniband_env=True,
) -> CommandJob:
    """A command job with ``distribution: tensorflow`` (Azure ML sets TF_CONFIG per task).

    worker_count: default instance_count (what Azure assumes too, written out so the YAML
    says it). parameter_server_count: parameter-server tasks for TF 1.x-style training;
    left out (Azure's default 0) when not given.
    """
    args = dict(locals())
    workers = arguments.count("worker_count", worker_count)
    servers = arguments.count("parameter_server_count", parameter_server_count)
    nodes = arguments.count("instance_count", instance_count) or 1
    return _build(
        "tensorflow", args,
        {"worker_count": workers if workers is not None else nodes, "parameter_server_count": servers},
    )


for _builder in (pytorch_job, mpi_job, tensorflow_job):
    _builder.__doc__ += _COMMON_DOC
del _builder
