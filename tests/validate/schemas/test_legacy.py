"""DistributedComponent.schema.json (the legacy Component SDK spec) on documents of our own."""

from __future__ import annotations

import pytest

from tests.validate.schemas.support import blamed_fields, errors, hints, parse

LEGACY = """
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: contoso.ml.train_resnet
version: 0.0.1
display_name: Train ResNet
type: DistributedComponent
description: trains a model
tags: {owner: ml-team, reviewed: }
is_deterministic: true
inputs:
  data:
    type: path
    description: training images
outputs:
  model:
    type: AnyDirectory
    description: the trained model
code: ./src
environment:
  docker:
    image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04
  conda:
    conda_dependencies_file: conda.yaml
  os: Linux
launcher:
  type: mpi
  additional_arguments: python train.py --data {inputs.data} --model {outputs.model}
"""


def legacy(**replace) -> dict:
    data = parse(LEGACY)
    data.update(replace)
    return data


def assert_accepted(data):
    errs = errors(data, "distributed_component")
    assert not errs, "\n".join(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errs)


def assert_rejected(data, field, hint=None):
    errs = errors(data, "distributed_component")
    fields = blamed_fields(errs)
    assert field in fields, f"expected an error at {field}, got {sorted(fields)}"
    if hint:
        assert any(hint in h for h in hints(errs)), hints(errs)


def test_baseline_is_valid_and_detected_as_legacy():
    data = legacy()
    assert not errors(data)  # detect_kind picks the legacy schema itself


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "path"},
        {"type": "AnyDirectory"},
        {"type": "AnyFile"},
        {"type": ["AnyFile", "AnyDirectory"]},
        {"type": ["path"]},
        {"type": "String", "default": "x"},
        {"type": "string"},
        {"type": "STRING"},
        {"type": "Integer", "default": 1, "min": 0, "max": 10},
        {"type": "integer"},
        {"type": "int", "default": 3},
        {"type": "Float", "default": 0.5, "min": 0.0, "max": 1.0},
        {"type": "float"},
        {"type": "double", "default": 1e-4},
        {"type": "Double"},
        {"type": "Boolean", "default": True},
        {"type": "boolean", "optional": True},
        {"type": "Enum", "enum": ["a", "b"], "default": "a"},
        {"type": "enum", "enum": [1, 2]},
        {"type": "ENUM", "enum": ["x"]},
        {"type": "path", "optional": True, "description": "may be absent"},
    ],
)
def test_every_listed_input_type_is_accepted(spec):
    data = legacy()
    data["inputs"]["x"] = spec
    assert_accepted(data)


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"type": "Strng"}, "inputs.x.type"),
        ({"type": ["AnyFile", "String"]}, "inputs.x.type.1"),
        ({"type": []}, "inputs.x.type"),
        ({"type": "Enum"}, "inputs.x.enum"),
        ({"type": "Integer", "optinal": True}, "inputs.x.optinal"),
        ({"description": "no type"}, "inputs.x.type"),
        ({"type": "Integer", "optional": "maybe"}, "inputs.x.optional"),
    ],
)
def test_input_mistakes(spec, field):
    data = legacy()
    data["inputs"]["x"] = spec
    assert_rejected(data, field)


@pytest.mark.parametrize("launcher_type", ["mpi", "torch.distributed"])
def test_both_launcher_types_are_accepted(launcher_type):
    data = legacy()
    data["launcher"]["type"] = launcher_type
    assert_accepted(data)


@pytest.mark.parametrize("launcher_type", ["pytorch", "horovod", "MPI", "torch", ""])
def test_other_launcher_types_are_rejected_with_a_hint(launcher_type):
    data = legacy()
    data["launcher"]["type"] = launcher_type
    assert_rejected(data, "launcher.type", hint="mpi or torch.distributed")


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("launcher"), "launcher"),
        (lambda d: d["launcher"].pop("additional_arguments"), "launcher.additional_arguments"),
        (lambda d: d["launcher"].update(additional_arguments=["python", "x.py"]), "launcher.additional_arguments"),
        (lambda d: d["launcher"].update(process_count=2), "launcher.process_count"),
        (lambda d: d.update(type="CommandComponent"), "type"),
        (lambda d: d.update(name="has space"), "name"),
        (lambda d: d.update(distribution={"type": "mpi"}), "distribution"),
        (lambda d: d["environment"]["docker"].update(imag="x"), "environment.docker.imag"),
        (lambda d: d["environment"].update(os="Ubuntu"), "environment.os"),
        (lambda d: d["environment"]["conda"].update(pip_requirement_file="r.txt"),
         "environment.conda.pip_requirement_file"),
        (lambda d: d["outputs"]["model"].update(type="Strin"), "outputs.model.type"),
    ],
)
def test_legacy_mistakes(mutate, field):
    data = legacy()
    mutate(data)
    assert_rejected(data, field)


@pytest.mark.parametrize(
    "environment",
    [
        {"name": "AzureML-Minimal"},
        {"docker": {"build": {"dockerfile": "file:Dockerfile"}}, "os": "Linux"},
        {"docker": {"image": "python:3.11"}, "conda": {"conda_dependencies": {"dependencies": ["python=3.11"]}}},
        {"conda": {"pip_requirements_file": "requirements.txt"}},
        "azureml:AzureML-Minimal:1",
    ],
)
def test_environment_forms(environment):
    assert_accepted(legacy(environment=environment))


def test_versioned_type_label_and_dotted_name():
    assert_accepted(legacy(type="DistributedComponent@1-legacy", name="microsoft.com.azureml.samples.mpi_example"))
