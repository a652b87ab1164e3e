"""What kind of Azure ML document a mapping is: ``$schema`` first, then its shape.

:func:`recognise` names every Azure ML YAML kind it can tell (jobs, components,
environments, data, models, compute, endpoints, deployments, workspaces,
connections, registries, schedules, datastores, feature stores, ...).
:data:`VALIDATED` are the kinds amldist checks; :func:`detect_kind` returns one of
them or None, so a kind amldist does not model (a spark job, a batch deployment,
a promptflow ``flow.dag.yaml``) is reported as skipped, never checked as another.

- ``$schema``: its last path segment, lower-cased, without ``.schema.json`` /
  ``.json`` (``.../latest/pipelineComponent.schema.json`` -> ``pipelinecomponent``),
  matched exactly (``pipelineComponentBatchDeployment`` is no pipeline component).
  A ``type`` that contradicts a job or component ``$schema`` (``type: parallel``
  under ``commandComponent.schema.json``) wins: azure-ai-ml's loaders pick the
  class by ``type``. Any other ``$schema`` is recognised as that (unvalidated) kind.
- shape, without ``$schema``: ``type`` decides; ``command`` and ``pipeline`` files
  are components when they have a ``version`` or ``is_deterministic`` and none
  of the job-only keys (what ``az ml job create`` / ``component create`` would
  take them for); a few keys tell the non-job kinds apart (``endpoint_name``: a
  deployment, ``auth_mode``: an endpoint, ``trigger``: a schedule, ...).
"""

from __future__ import annotations

COMMAND_JOB = "command_job"
COMMAND_COMPONENT = "command_component"
PIPELINE_JOB = "pipeline_job"
PIPELINE_COMPONENT = "pipeline_component"
DISTRIBUTED_COMPONENT = "distributed_component"
SWEEP_JOB = "sweep_job"
VALIDATED = (COMMAND_JOB, COMMAND_COMPONENT, PIPELINE_JOB, PIPELINE_COMPONENT, DISTRIBUTED_COMPONENT, SWEEP_JOB)

_VALIDATED_SCHEMAS = {  # $schema segment -> kind amldist validates
    "distributedcomponent": DISTRIBUTED_COMPONENT,
    "commandcomponent": COMMAND_COMPONENT,
    "commandjob": COMMAND_JOB,
    "pipelinejob": PIPELINE_JOB,
    "pipelinecomponent": PIPELINE_COMPONENT,
    "sweepjob": SWEEP_JOB,
}
# Job/component types azure-ai-ml knows besides command and pipeline (recognised, not validated).
_OTHER_JOB_TYPES = ("sweep", "spark", "parallel", "automl", "import", "data_transfer", "finetuning",
                    "distillation", "flow")
# ``type:`` values of the non-job kinds, as their YAML files write them.
_TYPE_KINDS = {
    "amlcompute": "compute", "computeinstance": "compute", "kubernetes": "compute",
    "virtualmachine": "compute", "synapsespark": "compute", "serverless": "compute",
    "azure_blob": "datastore", "azure_file": "datastore", "azure_data_lake_gen1": "datastore",
    "azure_data_lake_gen2": "datastore", "one_lake": "datastore",
    "uri_file": "data", "uri_folder": "data", "mltable": "data",
    "mlflow_model": "model", "custom_model": "model", "triton_model": "model",
    "git": "connection", "python_feed": "connection", "container_registry": "connection",
    "azure_open_ai": "connection", "azure_sql_db": "connection", "s3": "connection",
    "snowflake": "connection", "custom": "connection", "api_key": "connection",
    "managed": "online_deployment",
}
# queue_settings is not here: components may carry it too (azure-ai-ml models it on both).
_JOB_ONLY_KEYS = ("compute", "experiment_name", "limits", "services", "identity", "settings")


# What every reader says of a document that is no kind amldist validates (the loader, validate, submit).
NOT_A_SPEC = ("not a spec amldist knows (a command job, command component, pipeline job, sweep job or "
              "DistributedComponent)")
NOT_A_SPEC_HINT = "set 'type:' (command, pipeline, sweep or DistributedComponent) or '$schema:'"


def is_legacy_type(value) -> bool:
    return isinstance(value, str) and value.split("@", 1)[0].lower() == "distributedcomponent"


def schema_segment(schema) -> str | None:
    """``https://.../latest/pipelineComponent.schema.json`` -> ``pipelinecomponent``."""
    if not isinstance(schema, str) or not schema.strip():
        return None
    segment = schema.strip().rstrip("/").rsplit("/", 1)[-1].split("#", 1)[0].lower()
    for suffix in (".schema.json", ".json", ".yaml", ".yml"):
        if segment.endswith(suffix):
            return segment[: -len(suffix)]
    return segment


def _type_of(data: dict) -> str | None:
    return type_word(data.get("type"))


def _job_or_component(data: dict, type_: str | None) -> str | None:
    """The kind of a job/component-shaped mapping without ``$schema``, from ``type``."""
    if is_legacy_type(data.get("type")):
        return DISTRIBUTED_COMPONENT
    looks_like_component = ("version" in data or "is_deterministic" in data) and not any(
        key in data for key in _JOB_ONLY_KEYS)
    if type_ == "pipeline":
        return PIPELINE_COMPONENT if looks_like_component else PIPELINE_JOB
    if type_ == "command" or (type_ is None and "command" in data):
        return COMMAND_COMPONENT if looks_like_component else COMMAND_JOB
    if type_ in _OTHER_JOB_TYPES:
        return f"{type_}_{'component' if looks_like_component else 'job'}"
    if type_ is None and "launcher" in data:
        return DISTRIBUTED_COMPONENT
    return None


def recognise(data) -> str | None:
    """The kind of a loaded document (validated or not), or None when no Azure ML kind fits."""
    if not isinstance(data, dict):
        return None
    type_ = _type_of(data)
    segment = schema_segment(data.get("$schema"))
    if segment is not None:
        kind = _VALIDATED_SCHEMAS.get(segment)
        if kind is None:
            return segment  # an Azure ML kind amldist does not validate (batchdeployment, flow, ...)
        family = {COMMAND_JOB: "command", COMMAND_COMPONENT: "command", PIPELINE_JOB: "pipeline",
                  PIPELINE_COMPONENT: "pipeline"}.get(kind)
        if family is not None and type_ not in (None, family) and (
                type_ in _OTHER_JOB_TYPES or type_ in ("command", "pipeline")):
            # type: parallel under commandComponent.schema.json, type: command under pipelineComponent
            return f"{type_}_{'component' if segment.endswith('component') else 'job'}"
        return kind
    kind = _job_or_component(data, type_)
    if kind is not None:
        return kind
    if type_ in _TYPE_KINDS:
        return _TYPE_KINDS[type_]
    return _by_keys(data)


def _by_keys(data: dict) -> str | None:
    """Non-job kinds without ``$schema`` or ``type``, told apart by the keys only they have."""
    if "endpoint_name" in data:
        return "deployment"
    if "auth_mode" in data or "traffic" in data:
        return "endpoint"
    if "trigger" in data and ("create_job" in data or "create_monitor" in data):
        return "schedule"
    if "replication_locations" in data:
        return "registry"
    if "model_id" in data and "name" in data:
        return "serverless_endpoint"
    if "name" in data and {"image", "build", "conda_file"} & data.keys() and not {"command", "jobs"} & data.keys():
        return "environment"
    return None


_CONDA_KEYS = {"name", "channels", "dependencies", "prefix", "variables"}
_PRE_COMMIT_CONFIG_KEYS = {"repos", "default_install_hook_types", "default_language_version", "default_stages",
                           "files", "exclude", "fail_fast", "minimum_pre_commit_version", "ci"}


def companion_file(data) -> str | None:
    """What a YAML file that lives beside specs is, when it is one of the companions a project of specs holds
    (a conda environment a job's ``conda_file`` names, pre-commit's files): ``amldist validate DIR`` passes
    over them without a note. None for anything else (a compose file, a workflow: still a ``not-a-spec`` note)."""
    if isinstance(data, dict) and "dependencies" in data and data.keys() <= _CONDA_KEYS \
            and isinstance(data["dependencies"], list):
        return "conda environment"
    if isinstance(data, dict) and isinstance(data.get("repos"), list) and data.keys() <= _PRE_COMMIT_CONFIG_KEYS:
        return "pre-commit configuration"
    if isinstance(data, list) and data and all(isinstance(h, dict) and {"id", "entry"} <= h.keys() for h in data):
        return "pre-commit hooks"
    return None


def detect_kind(data) -> str | None:
    """The kind of a loaded document when amldist validates it, else None (see :func:`recognise`)."""
    kind = recognise(data)
    return kind if kind in VALIDATED else None


VALUE_TYPES = ("string", "integer", "number", "boolean")


def value_outputs(outputs) -> list[str]:
    """The outputs (of a job's ``outputs:`` mapping) that carry a value, not data: a pipeline step's
    control outputs, which no command job can declare."""
    return [name for name, port in (outputs or {}).items()
            if isinstance(port, dict) and type_word(port.get("type")) in VALUE_TYPES]


def type_word(value) -> str | None:
    """A ``type:`` value -- a document's, a distribution's, a pipeline node's, an input's or an output's --
    as azure-ai-ml matches it: trimmed and lower-cased; None when it is no text.

    The one place amldist folds a type's case: the model, the rules, the validator, the builders and
    the backends call this (or :func:`is_data_type`) rather than ``.lower()`` on their own.
    """
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


distribution_kind = type_word  # the name its callers use for ``distribution.type``


# ML v2 data (non-literal) input and output types. A job's ports take them in any letter case (as
# azure-ai-ml does); a component's must be written in lower case (azure-ai-ml refuses ``URI_FOLDER`` there).
DATA_TYPES = ("uri_folder", "uri_file", "mltable", "mlflow_model", "custom_model", "triton_model")


def is_data_type(value) -> bool:
    """Whether a port's ``type`` names data (a path is bound) rather than a literal value."""
    return type_word(value) in DATA_TYPES


def binds_path(value) -> bool:
    """Whether a port of this ``type`` is given a path: a data type or azure-ai-ml's untyped ``path``."""
    return is_data_type(value) or type_word(value) == "path"
