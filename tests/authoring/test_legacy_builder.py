"""amldist.distributed_component: the legacy spec builder and its checks."""

import pytest

from amldist import model as spec
from amldist.errors import UserError
from amldist import validate
from amldist.authoring.legacy_builder import LEGACY_SCHEMA, ComponentSpecError, distributed_component
from amldist.model.yamlio import load_yaml

COMMAND = "python train.py --data {inputs.data} [--lr {inputs.lr}] --epochs {inputs.epochs} --out {outputs.model}"
INPUTS = {
    "data": "AnyDirectory",
    "lr": {"type": "Float", "optional": True, "description": "learning rate"},
    "epochs": {"type": "Integer", "default": 3, "min": 1},
}


def build(**overrides):
    kwargs = dict(name="amldist.samples.train", version="1.0.0", launcher="mpi", command=COMMAND, inputs=INPUTS,
                  outputs={"model": "AnyDirectory"}, environment="mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04")
    kwargs.update(overrides)
    return distributed_component(**kwargs)


def test_emits_the_legacy_yaml():
    component = build(display_name="Train", tags={"team": "x"}, is_deterministic=False, code="src")
    data = load_yaml(component.to_yaml()).data
    assert data["$schema"] == LEGACY_SCHEMA
    assert data["type"] == "DistributedComponent"
    assert data["launcher"] == {"type": "mpi", "additional_arguments": COMMAND}
    assert data["inputs"]["data"] == {"type": "AnyDirectory"}
    assert data["inputs"]["lr"]["optional"] is True
    assert data["environment"] == {"docker": {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04"},
                                   "os": "Linux"}
    assert (data["code"], data["display_name"], data["tags"], data["is_deterministic"]) == ("src", "Train", {"team": "x"}, False)
    # the project's own loader reads it back as the same spec
    again = spec.loads(component.to_yaml())
    assert isinstance(again, spec.DistributedComponent) and again == component


@pytest.mark.parametrize("launcher, expected", [("torch.distributed", "torch.distributed"), ("MPI", "mpi"),
                                                 ("Torch.Distributed", "torch.distributed")])
def test_launcher_names_are_case_insensitive(launcher, expected):
    assert build(launcher=launcher).launcher.type == expected


def test_environment_name_string():
    assert build(environment="AzureML-Minimal").environment == {"name": "AzureML-Minimal"}


@pytest.mark.parametrize(
    "overrides, code, words",
    [
        (dict(launcher="pytorch"), "unknown-launcher", ["'pytorch'", "torch.distributed"]),
        (dict(launcher="horovod"), "unknown-launcher", ["horovod"]),
        (dict(command=COMMAND + " --seed {inputs.seed}"), "undeclared-input", ["seed", "data, epochs, lr"]),
        (dict(command=COMMAND + " --log {outputs.logs}"), "undeclared-output", ["logs"]),
        (dict(command="python train.py --data {inputs.data} --lr {inputs.lr} --epochs {inputs.epochs}"),
         "optional-input-outside-group", ["'lr'", "[--lr {inputs.lr}]"]),
        (dict(command="python train.py [--lr {inputs.lr}"), "unbalanced-bracket", ["offset 16"]),
        (dict(inputs={**INPUTS, "kind": {"type": "Enum"}}), "missing-enum", ["inputs.kind"]),
        (dict(inputs={**INPUTS, "x": {"type": "Tensor"}}), "unknown-input-type", ["inputs.x", "'Tensor'"]),
        (dict(inputs={**INPUTS, "x": {"default": 1}}), "invalid-input", ["'x'", "type"]),
        (dict(name="has space"), "invalid-name", ["has space"]),
        (dict(version=None), "invalid-version", []),
        (dict(command="  "), "missing-command", []),
        (dict(environment=42), "invalid-environment", ["42"]),
    ],
)
def test_refuses_with_one_clear_error(overrides, code, words):
    with pytest.raises(ComponentSpecError) as info:
        build(**overrides)
    assert info.value.code == code
    assert isinstance(info.value, UserError)
    text = info.value.message + " " + (info.value.hint or "")
    for word in words:
        assert word in text
    assert "\n" not in info.value.message


def test_required_input_inside_a_group_is_fine():
    component = build(command="python t.py [--data {inputs.data}] --out {outputs.model}")
    assert "[--data {inputs.data}]" in component.launcher.additional_arguments


def test_passes_the_validator():
    for launcher in ("mpi", "torch.distributed"):
        component = build(launcher=launcher, code=".")
        errors = [d for d in validate.validate_spec(component) if d.severity == "error"]
        assert errors == []
        assert [d for d in validate.validate_text(component.to_yaml()) if d.severity == "error"] == []


def test_top_level_api_reexport():
    import amldist
    from amldist.authoring.legacy_builder import distributed_component as build_legacy

    fn = amldist.distributed_component
    assert fn is build_legacy
    assert fn(name="a", version=1, launcher="mpi", command="echo {inputs.x}", inputs={"x": "String"}).name == "a"
