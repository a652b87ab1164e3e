"""Builders against the real azure-ai-ml: load_job + _validate(), and the REST body vs the swagger."""

import json
import os

import pytest

pytest.importorskip("azure.ai.ml")
jsonschema = pytest.importorskip("jsonschema")

import amldist  # noqa: E402
from amldist import model as amlspec  # noqa: E402
from amldist.authoring import BuilderError  # noqa: E402
from amldist.errors import UserError  # noqa: E402
from amldist.azure_sdk.entities import InteropError, rest_body, to_azure  # noqa: E402
from tests.authoring.cases import CASES, ENV, build  # noqa: E402
from tests.authoring.swagger import SwaggerSchema  # noqa: E402
from tests.conftest import CONFORMANCE, CORPUS_MISSING  # noqa: E402

# azure-ai-ml 1.35.2 on marshmallow 3.2x: one deprecation warning per schema object, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The `context` parameter is deprecated"),
    pytest.mark.filterwarnings("ignore:The `ordered` `class Meta` option is deprecated"),
]

REST_SUBSET = CONFORMANCE / "rest" / "mfe-2025-12-01.distribution-subset.json"
REST_TYPES = {"pytorch": "PyTorch", "mpi": "Mpi", "tensorflow": "TensorFlow"}

# Definitions the subset abridges or leaves out, as the full mfe.json 2025-12-01 (same commit as
# the subset's _source) declares them; JobInput/JobOutput/IdentityConfiguration/NotificationSetting
# keep only what the builders' bodies touch and stay open to their derived models.
_NULLABLE_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string", "x-nullable": True},
                        "x-nullable": True}
SUPPLEMENTS = {
    "JobBase": {
        "allOf": [{"$ref": "#/definitions/ResourceBase"}],
        "properties": {
            "componentId": {"type": "string", "x-nullable": True},
            "displayName": {"type": "string", "x-nullable": True},
            "isArchived": {"type": "boolean"},
            "notificationSetting": {"$ref": "#/definitions/NotificationSetting", "x-nullable": True},
            "status": {"$ref": "#/definitions/JobStatus", "readOnly": True},
        },
    },
    "ResourceBase": {
        "type": "object",
        "properties": {
            "description": {"type": "string", "x-nullable": True},
            "properties": _NULLABLE_STRING_MAP,
            "tags": _NULLABLE_STRING_MAP,
        },
        "additionalProperties": False,
    },
    "JobInput": {
        "type": "object", "required": ["jobInputType"],
        "properties": {
            "description": {"type": "string", "x-nullable": True},
            "jobInputType": {"type": "string", "enum": [
                "literal", "uri_file", "uri_folder", "mltable", "custom_model", "mlflow_model", "triton_model"]},
        },
    },
    "JobOutput": {
        "type": "object", "required": ["jobOutputType"],
        "properties": {
            "description": {"type": "string", "x-nullable": True},
            "jobOutputType": {"type": "string", "enum": [
                "uri_file", "uri_folder", "mltable", "custom_model", "mlflow_model", "triton_model"]},
        },
    },
    "IdentityConfiguration": {"type": "object"},
    "NotificationSetting": {"type": "object"},
    "JobStatus": {"type": "string"},
}


@pytest.fixture(scope="module")
def command_job_schema():
    if not REST_SUBSET.is_file():
        pytest.skip(f"REST definitions not found at {REST_SUBSET}; {CORPUS_MISSING}")
    definitions = json.loads(REST_SUBSET.read_text(encoding="utf-8"))["definitions"]
    schema = SwaggerSchema(definitions, SUPPLEMENTS).schema_for("CommandJob")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator, instance) -> list[str]:
    """Every error as "path: message", descending into anyOf/oneOf branches to the leaves."""
    def leaves(error):
        if not error.context:
            yield error
        for sub in error.context:
            yield from leaves(sub)

    return sorted(
        f"{'/'.join(map(str, leaf.absolute_path))}: {leaf.message}"
        for error in validator.iter_errors(instance) for leaf in leaves(error)
    )


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A project folder with the ./src the cases name, as the current directory."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _passes(entity):
    result = entity._validate()
    assert result.passed, result.error_messages


# -- every YAML the builders emit loads in azure-ai-ml and validates -------------------------------

@pytest.mark.parametrize("builder,kwargs", CASES)
def test_builder_yaml_loads_with_load_job_and_validates(builder, kwargs, workdir):
    from azure.ai.ml import load_job

    job = build(builder, **kwargs)
    entity = load_job(job.save(workdir / "job.yaml"))
    _passes(entity)
    assert entity.type == "command"
    assert entity.distribution.type == job.distribution.type
    if job.distribution.type == "tensorflow":
        assert entity.distribution.worker_count == job.distribution.worker_count
        assert entity.distribution.parameter_server_count == (job.distribution.parameter_server_count or 0)
    else:
        assert entity.distribution.process_count_per_instance == job.distribution.process_count_per_instance
    assert entity.resources.instance_count == job.resources.instance_count
    assert entity.resources.instance_type == job.resources.instance_type
    assert entity.resources.shm_size == job.resources.shm_size
    assert dict(entity.environment_variables or {}) == (job.environment_variables or {})
    assert set(entity.inputs) == set(job.inputs or {}) and set(entity.outputs) == set(job.outputs or {})


@pytest.mark.parametrize("builder,kwargs", CASES)
def test_to_azure_is_what_load_job_makes_of_the_file(builder, kwargs, workdir):
    from azure.ai.ml import load_job
    from azure.ai.ml.entities import Command

    job = build(builder, **kwargs)
    entity = to_azure(job)
    assert isinstance(entity, Command)
    _passes(entity)
    from_file = load_job(job.save(workdir / "job.yaml"))
    ours, theirs = entity._to_dict(), from_file._to_dict()
    if job.code is not None and os.path.isdir(job.code):  # local code becomes its snapshot, runtime added
        assert os.path.isfile(os.path.join(entity.code, "amldist", "runtime", "__init__.py"))
        for side in (ours, theirs):
            side.pop("code", None), side.get("component", {}).pop("code", None)
    assert ours == theirs


# -- the REST body azure-ai-ml builds satisfies the swagger definitions -----------------------------

@pytest.mark.parametrize("builder,kwargs", CASES)
def test_rest_body_satisfies_the_swagger(builder, kwargs, workdir, command_job_schema):
    job = build(builder, **kwargs)
    body = rest_body(job, base_dir=workdir)
    assert set(body) == {"properties"}
    props = body["properties"]
    assert schema_errors(command_job_schema, props) == []
    assert props["jobType"] == "Command"
    dist = props["distribution"]
    assert dist["distributionType"] == REST_TYPES[job.distribution.type]
    if job.distribution.type == "tensorflow":
        assert dist["workerCount"] == job.distribution.worker_count
    else:
        assert dist["processCountPerInstance"] == job.distribution.process_count_per_instance
    assert props["resources"]["instanceCount"] == job.resources.instance_count
    assert (props.get("environmentVariables") or None) == job.environment_variables
    if job.limits is not None:
        assert props["limits"]["jobLimitsType"] == "Command"
        assert props["limits"]["timeout"] == {600: "PT10M", 7200: "PT2H"}[job.limits.timeout]


def test_rest_body_keeps_the_infiniband_settings(workdir):
    job = build(instance_type="Standard_ND96isr_H100_v5", instance_count=2)
    env = rest_body(job)["properties"]["environmentVariables"]
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0"


# -- the schema check has teeth: what the swagger forbids is caught ---------------------------------

def _raw_job_body(text: str, workdir) -> dict:
    return rest_body(amlspec.loads(text), base_dir=workdir)["properties"]


RAW = """\
type: command
command: python train.py
environment: azureml:env@latest
distribution:
  type: pytorch
  process_count_per_instance: 2
resources:
  instance_count: 2
"""


@pytest.mark.parametrize("extra,where", [
    ("  shm_size: lots\n", "resources/shmSize"),  # azure-ai-ml sends it as is
    ("limits:\n  timeout: -5\n", "limits/timeout"),  # sent as -PT5S, not an ISO 8601 duration
])
def test_swagger_rejects_what_azure_ai_ml_lets_through(extra, where, workdir, command_job_schema):
    text = RAW.replace("  instance_count: 2\n", "  instance_count: 2\n" + extra) if "shm" in extra else RAW + extra
    props = _raw_job_body(text, workdir)
    errors = schema_errors(command_job_schema, props)
    assert any(e.startswith(where) for e in errors), errors


@pytest.mark.parametrize("mutate,where", [
    (lambda p: p["distribution"].update(workerCount=2), "distribution"),  # not a PyTorch property
    (lambda p: p["distribution"].update(distributionType="Ray"), "distribution"),
    (lambda p: p["distribution"].update(processCountPerInstance=2**31), "distribution"),
    (lambda p: p["resources"].update(instanceCount="2"), "resources/instanceCount"),
    (lambda p: p.update(status="Running"), "status"),  # read-only
    (lambda p: p.update(unknownField=1), ""),
    (lambda p: p.pop("environmentId"), ""),
    (lambda p: p["environmentVariables"].update(N=1), "environmentVariables/N"),
])
def test_swagger_schema_catches_body_mistakes(mutate, where, workdir, command_job_schema):
    props = _raw_job_body(RAW + "environment_variables:\n  A: b\n", workdir)
    assert schema_errors(command_job_schema, props) == []
    mutate(props)
    errors = schema_errors(command_job_schema, props)
    assert errors and any(e.startswith(where) for e in errors), errors


@pytest.mark.parametrize("kwargs,field", [
    ({"shm_size": "lots"}, "shm_size"),
    ({"timeout": -5}, "timeout"),
    ({"instance_type": "Standard_NC24s_v3", "process_count_per_instance": 16}, "process_count_per_instance"),
    ({"process_count_per_instance": 4.5}, "process_count_per_instance"),
    ({"instance_count": 0}, "instance_count"),
])
def test_builder_refuses_what_azure_ai_ml_would_send(kwargs, field):
    with pytest.raises(BuilderError) as info:
        build(**kwargs)
    assert info.value.field == field and "\n" not in str(info.value)


# -- to_azure and rest_body on other specs ----------------------------------------------------------

COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: train
version: "1"
command: python train.py --epochs ${{inputs.epochs}}
environment: azureml:env@latest
inputs:
  epochs: {type: integer, default: 1}
distribution:
  type: mpi
  process_count_per_instance: 4
"""


def test_component_to_azure_and_no_rest_body(workdir):
    from azure.ai.ml.entities import CommandComponent

    component = amlspec.loads(COMPONENT)
    entity = to_azure(component)
    assert isinstance(entity, CommandComponent) and entity.distribution.process_count_per_instance == 4
    _passes(entity)
    with pytest.raises(UserError, match="only a job has a REST body"):
        rest_body(component)


def test_legacy_distributed_component_loads_as_internal_component(workdir):
    before = os.environ.get("AZURE_ML_INTERNAL_COMPONENTS_ENABLED")
    spec = amldist.distributed_component(
        "mpi_train", "0.0.1", launcher="mpi", command="python train.py --epochs {inputs.epochs}",
        inputs={"epochs": {"type": "Integer", "default": 1}},
        environment={"docker": {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04"}},
    )
    entity = to_azure(spec)
    assert type(entity).__name__ == "InternalComponent" and entity.type == "DistributedComponent"
    assert os.environ.get("AZURE_ML_INTERNAL_COMPONENTS_ENABLED") == before  # flag restored


def test_base_dir_resolves_code(tmp_path, workdir):
    job = build(code="./src")
    _passes(to_azure(job, base_dir=workdir))
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    with pytest.raises(InteropError, match=r"code: Can't find directory or file .*elsewhere.src"):
        to_azure(job, base_dir=empty)  # ./src is not there


def test_azure_ai_ml_rejection_is_one_line(workdir):
    text = RAW.replace("type: pytorch", "type: torch.distributed")
    with pytest.raises(InteropError) as info:
        to_azure(amlspec.loads(text))
    message = str(info.value)
    assert message.startswith("azure-ai-ml rejects the command job: distribution.type: ")
    assert "'torch.distributed'" in message
    assert "\n" not in message and "code.visualstudio.com" not in message


def test_rest_body_fills_what_azure_ai_ml_fills(workdir):
    props = rest_body(build(), base_dir=workdir)["properties"]
    assert props["experimentName"] == workdir.name  # azure-ai-ml's default: the current folder's name
    assert props["displayName"]  # a generated name
    assert props["environmentId"] == ENV.split(":", 1)[1]  # "azureml:" dropped, resolved to an ARM id on submit
