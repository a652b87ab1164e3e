"""amldist.rules.booleans reads booleans as azure-ai-ml does, and every place that reads ``optional:`` uses it."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.rules.booleans import is_optional, read_flag

VALUES = [True, False, 1, 0, 1.0, 0.0, 2, -1, 0.5, None, [], {}, "", " true", "true", "True", "TRUE", "tRuE",
          "false", "False", "FALSE", "yes", "Yes", "YES", "yEs", "no", "NO", "on", "On", "off", "OFF", "t", "T",
          "f", "y", "Y", "n", "N", "1", "0", "01", "maybe", "null", "~"]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_read_flag_agrees_with_the_marshmallow_boolean_azure_ai_ml_uses(value):
    # azure-ai-ml's loader reads `optional` with marshmallow's fields.Bool()
    from marshmallow import ValidationError, fields

    try:
        expected = fields.Boolean().deserialize(value)
    except ValidationError:
        expected = None
    assert read_flag(value) is expected


def test_is_optional_needs_a_mapping_whose_optional_reads_true():
    assert is_optional({"optional": "yes"}) and is_optional({"optional": True})
    assert not is_optional({"optional": "false"}) and not is_optional({"optional": "maybe"})
    assert not is_optional({}) and not is_optional("optional") and not is_optional(None)


# ---- the places outside the validator that read `optional` ----

def component(optional):
    from amldist.model import from_data

    return from_data({
        "$schema": "https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json",
        "type": "command", "name": "c", "version": "1", "environment": "azureml:env:1",
        "inputs": {"n": {"type": "integer", "optional": optional}},
        "command": "python t.py $[[--n ${{inputs.n}}]]",
    })


def test_component_to_job_reads_quoted_optional_words():
    from amldist.authoring.component_job import component_to_job

    assert component_to_job(component("yes")).command == "python t.py"  # optional, unset: group dropped
    with pytest.raises(UserError, match="input 'n' is required"):
        component_to_job(component("false"))  # the text 'false' is not optional


def test_legacy_builder_reads_quoted_optional_words():
    from amldist.authoring.legacy_builder import command_problems

    inputs = {"o": {"type": "String", "optional": "True"}}
    assert [p[0] for p in command_problems("python t.py --o {inputs.o}", inputs, {})] == ["optional-input-outside-group"]
    inputs["o"]["optional"] = "no"
    assert command_problems("python t.py --o {inputs.o}", inputs, {}) == []


def test_local_backend_reads_quoted_optional_words(tmp_path):
    from amldist.backends.local.plan import resolve_inputs

    assert resolve_inputs({"d": {"type": "uri_folder", "optional": "true"}}, str(tmp_path), "job.yml") == {"d": None}
    with pytest.raises(UserError, match="input 'd' has no path"):
        resolve_inputs({"d": {"type": "uri_folder", "optional": "false"}}, str(tmp_path), "job.yml")


def test_local_backend_fills_dotted_input_names():
    from amldist.engine.command import render

    command = "echo $[[--n ${{inputs.group.n}}]] ${{inputs.group.s}}"
    unset = render(command, {"inputs.group.n": None, "inputs.group.s": "x y"})
    assert (unset.command, unset.env) == ("echo ${AMLDIST_IN_0_group_s}", {"AMLDIST_IN_0_group_s": "x y"})
    both = render(command, {"inputs.group.n": "3", "inputs.group.s": "x"})
    assert both.command == "echo --n ${AMLDIST_IN_0_group_n} ${AMLDIST_IN_1_group_s}"
    assert both.env == {"AMLDIST_IN_0_group_n": "3", "AMLDIST_IN_1_group_s": "x"}
