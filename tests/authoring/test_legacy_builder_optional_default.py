"""The legacy builder refuses no more than `amldist validate` does for optional inputs."""

import pytest

import amldist
from amldist.errors import UserError
from amldist.validate import validate_spec


def _component(port: dict):
    return amldist.distributed_component(
        "demo", "1", launcher="mpi", command="python train.py --lr {inputs.lr}",
        inputs={"lr": port}, environment={"docker": {"image": "python:3.11"}},
    )


def test_optional_input_with_default_outside_group_is_accepted_with_validate_warning():
    spec = _component({"type": "Float", "optional": True, "default": 0.1})
    codes = {(d.severity, d.code) for d in validate_spec(spec)}
    assert ("warning", "optional-input-default-outside-group") in codes
    assert not any(severity == "error" for severity, _ in codes)


def test_optional_input_without_default_outside_group_is_refused():
    with pytest.raises(UserError) as info:
        _component({"type": "Float", "optional": True})
    assert "optional input 'lr'" in str(info.value)
