"""The messages a person reads: at the key they concern, quoting what is written, with the fix.

Each case is a real file validated through ``validate_file`` (positions come from the YAML
text), and the placeholder cases also through the builders, which share the one rule.
"""

from __future__ import annotations

import pytest

from amldist.diagnostics import ERROR, WARNING
from amldist.validate import validate_file

COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: c
inputs:
  a: {type: string}
  x: {type: string, optional: true}
  d: {type: string, optional: true, default: "3"}
environment: azureml:env:1
"""
PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
jobs:
  good_step:
    type: command
    command: echo hi
    environment: azureml:env:1
  Bad-Step:
    type: command
    command: echo hi
    environment: azureml:env:1
"""


def check(tmp_path, text: str):
    path = tmp_path / "spec.yml"
    path.write_text(text)
    return validate_file(path), text.splitlines()


def at(lines, diagnostic) -> str:
    """The file's text from the diagnostic's position on its line."""
    return lines[diagnostic.line - 1][diagnostic.col - 1:]


@pytest.mark.parametrize("command", [
    "command: python x.py --a ${{inputs.a}} --x ${{inputs.x",
    "command: >-\n  python x.py --a ${{inputs.a}}\n  $[[--x ${{inputs.x]]",
])
def test_a_malformed_reference_is_quoted_and_pointed_at_not_the_valid_one_before_it(tmp_path, command):
    found, lines = check(tmp_path, COMPONENT + command + "\n")
    [d] = found
    assert (d.severity, d.code) == (ERROR, "malformed-placeholder")
    assert "'${{inputs.x" in d.message and "not closed with '}}'" in d.message, d.message
    assert at(lines, d).startswith("${{inputs.x"), (d.line, d.col, lines[d.line - 1])


def test_a_malformed_name_is_quoted_whole(tmp_path):
    [d], lines = check(tmp_path, COMPONENT + "command: python x.py ${{inputs.a}} ${{inputs.my-x}}\n")
    assert d.message == "command: the reference '${{inputs.my-x}}' is malformed: a name is letters, digits and _"
    assert at(lines, d).startswith("${{inputs.my-x}}")


def test_legacy_brackets_around_an_optional_input_point_to_the_v2_group(tmp_path):
    [d], lines = check(tmp_path, COMPONENT + "command: python x.py --a ${{inputs.a}} [--x ${{inputs.x}}]\n")
    assert (d.severity, d.code) == (ERROR, "optional-input-outside-group")
    assert "'[--x ${{inputs.x}}]'" in d.message and "passes on as text" in d.message and "$[[ ... ]]" in d.message
    assert d.hint.startswith("write $[[--x ${{inputs.x}}]] instead")
    assert at(lines, d).startswith("${{inputs.x}}")


def test_legacy_brackets_around_an_optional_input_with_a_default_warn_with_the_same_hint(tmp_path):
    [d], _ = check(tmp_path, COMPONENT + "command: python x.py [--d ${{inputs.d}}]\n")
    assert (d.severity, d.code) == (WARNING, "optional-input-default-outside-group")
    assert "$[[--d ${{inputs.d}}]]" in d.hint


def test_a_legacy_group_with_a_legacy_placeholder_gets_the_whole_v2_form(tmp_path):
    [d], lines = check(tmp_path, COMPONENT + "command: python x.py --a ${{inputs.a}} [--x {inputs.x}]\n")
    assert (d.code, d.message) == ("legacy-placeholder", "command: '{inputs.x}' is the legacy placeholder syntax")
    assert d.hint.endswith("an optional group $[[ ... ]]: $[[--x ${{inputs.x}}]]"), d.hint
    assert at(lines, d).startswith("{inputs.x}")


@pytest.mark.parametrize("command", [
    "command: python x.py $[[--x ${{inputs.x}}]]",           # the v2 group itself
    "command: bash -c '[[ -n ${{inputs.a}} ]] && echo ok'",  # a shell test is not a group
    "command: python x.py --shape [${{inputs.a}},3]",        # literal brackets around a required input
])
def test_brackets_that_are_not_legacy_groups_give_nothing(tmp_path, command):
    found, _ = check(tmp_path, COMPONENT + command + "\n")
    assert [d for d in found if d.code != "shell-context"] == []  # bash -c '...': the shell rule's own warning


def test_an_undeclared_reference_is_quoted(tmp_path):
    [d], _ = check(tmp_path, COMPONENT + "command: python x.py ${{inputs.nope}}\n")
    assert d.message == "command: uses '${{inputs.nope}}' but inputs declares no 'nope'"


def test_the_builders_give_the_same_quoted_message():
    from amldist import pytorch_job
    from amldist.errors import UserError

    with pytest.raises(UserError) as info:
        pytorch_job(command="python t.py ${{inputs.a}} ${{inputs.b", environment="azureml:env:1",
                    inputs={"a": 1, "b": 2}, instance_type="Standard_NC6s_v3")
    assert "the reference '${{inputs.b' is not closed with '}}'" in str(info.value)


def test_a_step_name_error_points_at_the_step_not_at_jobs(tmp_path):
    found, lines = check(tmp_path, PIPELINE)
    [d] = [d for d in found if d.severity == ERROR]
    assert "'Bad-Step'" in d.message
    assert (d.line, d.col) == (8, 3) and at(lines, d).startswith("Bad-Step:")


DIST = "distribution:\n  type: pytorch\n  worker_count: 2\n"


def test_a_key_of_another_distribution_type_is_a_warning_in_a_component(tmp_path):
    [d], lines = check(tmp_path, COMPONENT + "command: python x.py\n" + DIST)
    assert (d.severity, d.code, d.field) == (WARNING, "unknown-key", "distribution.worker_count")
    assert "azure-ai-ml drops it" in d.message and "tensorflow" in d.hint
    assert at(lines, d).startswith("worker_count")


def test_the_same_key_is_an_error_in_a_job(tmp_path):
    [d], _ = check(tmp_path, "type: command\ncommand: python x.py\nenvironment: azureml:env:1\n" + DIST)
    assert (d.severity, d.code, d.field) == (ERROR, "unknown-key", "distribution.worker_count")


def test_in_a_pipeline_the_inline_component_warns_and_the_step_errs(tmp_path):
    found, _ = check(tmp_path, """\
type: pipeline
jobs:
  s1:
    type: command
    distribution: {type: pytorch, worker_count: 2}
    component:
      command: echo hi
      environment: azureml:env:1
      distribution: {type: mpi, worker_count: 2}
""")
    assert {(d.field, d.severity) for d in found if d.code == "unknown-key"} == {
        ("jobs.s1.distribution.worker_count", ERROR), ("jobs.s1.component.distribution.worker_count", WARNING)}


def test_a_binding_is_quoted(tmp_path):
    found, _ = check(tmp_path, """\
type: pipeline
inputs:
  data: {type: uri_folder, path: azureml://datastores/x/paths/y}
jobs:
  s1:
    type: command
    command: echo ${{inputs.x}}
    inputs:
      x: ${{parent.inputs.dta}}
    environment: azureml:env:1
""")
    [d] = [d for d in found if d.code == "undeclared-input"]
    assert "binds '${{parent.inputs.dta}}' but the pipeline declares no input 'dta'" in d.message
    assert d.hint == "did you mean 'data'?"
