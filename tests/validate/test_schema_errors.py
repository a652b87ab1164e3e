"""From jsonschema-rs's errors to diagnostics: positions, codes, hints, did-you-mean, patterns in words."""

from __future__ import annotations

import re

import pytest

from amldist.model.field_paths import field_path
from amldist.rules.suggestions import suggest
from amldist.validate import schema_store, validate_text
from amldist.validate.schema_errors import DROPS, LEGACY_TOP, SENDS
from amldist.validate.schema_wording import words_of
from tests.conftest import conformance_files
from tests.validate.helpers import fixture_files

JOB = "command: python train.py\nenvironment: azureml:env:1\n"
COMPONENT = ("$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\n"
             "type: command\nname: c\nversion: 1\nenvironment: azureml:env:1\ncommand: x\n")
# What a regular expression looks like: a character class, an anchored group, an escape, a wildcard.
REGEX_LIKE = re.compile(r"\[\^|\[[^\]\s]*[a-zA-Z0-9]-[a-zA-Z0-9][^\]\s]*\]|\[[a-zA-Z]{2}\]|\\[dswDSW.$]|\(\?|\.\*|\(\^")


def found(text: str):
    return [(d.severity, d.code, d.field, d.line, d.col, d.message, d.hint) for d in validate_text(text, "f.yml")]


def test_unknown_top_level_key_is_reported_at_the_key_with_did_you_mean():
    [(severity, code, field, line, col, message, hint)] = found(JOB + "distributon:\n  type: pytorch\n")
    assert (severity, code, field, line, col, hint) == ("error", "unknown-key", "distributon", 3, 1,
                                                         "did you mean 'distribution'?")
    assert message == "unknown key 'distributon' in the document"


def test_another_types_key_is_not_allowed_with_that_types_hint():
    [(severity, code, field, line, col, message, hint)] = found(
        JOB + "distribution:\n  type: pytorch\n  worker_count: 2\n")
    assert (severity, code, field, line, col) == ("error", "unknown-key", "distribution.worker_count", 5, 3)
    assert message == "distribution.worker_count is not allowed here"
    assert "belong to tensorflow" in hint and "process_count_per_instance" in hint


def test_a_caseless_word_pattern_lists_the_words_and_suggests():
    [(_, code, field, line, col, message, hint)] = found(JOB + "distribution:\n  type: pytorh\n")
    assert (code, field, line, col) == ("invalid-value", "distribution.type", 4, 3)
    assert message == "distribution.type: 'pytorh' is not one of: pytorch, mpi, tensorflow, ray"
    assert "did you mean 'pytorch'?" in hint


@pytest.mark.parametrize("text, field, words", [
    (JOB + "resources:\n  shm_size: lots\n", "resources.shm_size", "a number above 0 followed by a unit b, k, m or g"),
    (COMPONENT.replace("name: c", "name: Train"), "name",
     "a name of lower-case letters, digits and underscores, starting with a letter"),
    (JOB + "environment_variables:\n  'A=B': x\n", "environment_variables", "a variable name, which cannot contain '='"),
])
def test_an_invalid_format_says_the_form_in_words_and_gives_the_value(text, field, words):
    [(severity, code, at, _, _, message, _)] = [f for f in found(text) if f[2] == field]
    assert (severity, code) == ("error", "invalid-format")
    assert words in message and not REGEX_LIKE.search(message), message


def test_no_message_or_hint_over_the_corpus_shows_a_regex():
    """Every diagnostic of every conformance and fixture file, and the pattern errors of each kind."""
    shown = []
    for path in [*conformance_files("valid"), *conformance_files("invalid"), *fixture_files("invalid"),
                 *fixture_files("kinds")]:
        for d in validate_text(path.read_text(errors="replace"), str(path)):
            if REGEX_LIKE.search(d.message) or REGEX_LIKE.search(d.hint or ""):
                shown.append((path.name, d.message, d.hint))
    assert not shown, shown


def test_unknown_key_warnings_say_what_azure_ai_ml_does_there():
    def warned(text):
        return {d.field: d.message for d in validate_text(text) if d.code == "unknown-key" and d.severity == "warning"}

    component = (COMPONENT + "compute: cpu\n"
                 "distribution:\n  type: mpi\n  process_count: 2\nresources:\n  gpus: 2\n"
                 "intellectual_property:\n  publisher: me\n  owner: you\n")
    found_ = warned(component)
    assert found_["compute"] == f"unknown key 'compute' in the document ({SENDS})"
    assert found_["distribution.process_count"].endswith(f"in distribution ({DROPS})")
    assert found_["resources.gpus"].endswith(f"in resources ({DROPS})")
    assert found_["intellectual_property.owner"] == "unknown key 'owner' in intellectual_property"  # not verified
    pipeline = ("type: pipeline\nsettings:\n  default_compute: azureml:cpu\n  environment: x\njobs:\n  a:\n"
                "    type: command\n    component:\n      command: x\n      environment: azureml:env:1\n"
                "      colour: red\n      resources:\n        gpus: 1\n")
    assert warned(pipeline) == {
        "settings.environment": f"unknown key 'environment' in settings ({SENDS})",
        "jobs.a.component.colour": f"unknown key 'colour' in jobs.a.component ({SENDS})",
        "jobs.a.component.resources.gpus": f"unknown key 'gpus' in jobs.a.component.resources ({DROPS})"}
    legacy = ("name: x.y\nversion: 0.0.1\ntype: DistributedComponent\nowner: me\nenvironment:\n  name: AzureML-Minimal\n"
              "launcher:\n  type: mpi\n  additional_arguments: python t.py\n")
    assert warned(legacy) == {"owner": f"unknown key 'owner' in the document ({LEGACY_TOP})"}
    assert "drops" not in SENDS and "drops" not in LEGACY_TOP and "drops" in DROPS


def test_a_warning_stays_beside_an_error_in_the_same_mapping():
    """The subschema failed (process_count_per_instance: 0), yet its unknown key is still a warning."""
    diagnostics = found(COMPONENT + "distribution:\n  type: mpi\n  process_count_per_instance: 0\n  colour: red\n")
    assert {(s, c, f) for s, c, f, *_ in diagnostics} == {
        ("error", "out-of-range", "distribution.process_count_per_instance"),
        ("warning", "unknown-key", "distribution.colour")}


def test_values_json_has_no_word_for_are_refused_by_type_and_shown_as_written():
    diagnostics = found("command: !!binary aGk=\nenvironment: azureml:e:1\nresources: {instance_count: .inf}\n")
    assert [(c, f, m) for _, c, f, _, _, m, _ in diagnostics] == [
        ("wrong-type", "command", "command: expected a string, got binary data"),
        ("wrong-type", "resources.instance_count", "resources.instance_count: expected an integer, got inf")]


def test_the_shipped_schemas_have_no_union_to_pick_a_branch_from():
    """The Reporter words each error of the branch that applied; an anyOf/oneOf would need it to pick one."""
    text = "".join(str(doc) for doc in schema_store.documents().values())
    assert "'anyOf'" not in text and "'oneOf'" not in text


def test_helpers():
    assert field_path(("jobs", "train", "inputs", 0, "x")) == "jobs.train.inputs[0].x"
    assert field_path(("inputs", "group.lr")) == "inputs.group.lr"  # a parameter group's input
    assert field_path(("tags", "a[0]")) == 'tags["a[0]"]'
    assert words_of({"pattern": "^([pP][yY]|[mM][pP][iI])$"}) == ["py", "mpi"]
    assert words_of({"pattern": "^\\d+$"}) == []
    assert suggest("Pytorch", ["pytorch", "mpi"]) == "pytorch"
    assert suggest("instnce_type", ["instance_type", "instance_count"]) == "instance_type"
    assert suggest("zzz", ["pytorch"]) is None
