"""--set and --input on plain mappings (no processes)."""

from __future__ import annotations

import os

import pytest

from amldist.errors import UserError
from amldist.submit.overrides import apply_inputs, apply_sets, cli_path, parse_path, parse_value


def test_set_dotted_paths_create_mappings_and_leave_the_original_alone():
    original = {"resources": {"instance_count": 1}, "tags": {}}
    result = apply_sets(original, ["resources.instance_count=4", "environment_variables.SEED=7",
                                   'tags["team.name"]=vision', "limits.timeout=3600"])
    assert result == {"resources": {"instance_count": 4}, "tags": {"team.name": "vision"},
                      "environment_variables": {"SEED": 7}, "limits": {"timeout": 3600}}
    assert original == {"resources": {"instance_count": 1}, "tags": {}}


@pytest.mark.parametrize("text, expected", [
    ("4", 4), ("0.5", 0.5), ("true", True), ("'4'", "4"), ("hello world", "hello world"),
    ("{type: mpi, process_count_per_instance: 2}", {"type": "mpi", "process_count_per_instance": 2}),
    ("", ""), ("null", None), ("2024-01-01", "2024-01-01"), ("a: b: c", "a: b: c"),
])
def test_values_are_read_as_yaml(text, expected):
    assert parse_value(text) == expected


def test_list_items_by_index_append_and_remove():
    data = {"args": ["a", "b"]}
    assert apply_sets(data, ["args[1]=B"]) == {"args": ["a", "B"]}
    assert apply_sets(data, ["args.2=c"]) == {"args": ["a", "b", "c"]}
    assert apply_sets(data, ["args[0]=null"]) == {"args": ["b"]}
    assert apply_sets({"a": {"b": 1, "c": 2}}, ["a.b=null"]) == {"a": {"c": 2}}


def test_paths_are_split_with_brackets_and_quotes():
    assert parse_path('jobs.train.args[0]["x.y"]') == ["jobs", "train", "args", 0, "x.y"]


@pytest.mark.parametrize("assignment, words", [
    ("resources=1", None),  # replacing a whole mapping is allowed
    ("resources.instance_count.x=1", "is a int"),
    ("args[5]=x", "no index 5"),
    ("args.name=x", "is a list"),
    ("=3", "is not NAME=VALUE"),
    ("no_equals_sign", "is not NAME=VALUE"),
    ("a..b=1", "malformed"),
])
def test_bad_assignments_say_what_is_wrong(assignment, words):
    data = {"resources": {"instance_count": 1}, "args": ["a"]}
    if words is None:
        assert apply_sets(data, [assignment])["resources"] == 1
        return
    with pytest.raises(UserError) as info:
        apply_sets(data, [assignment])
    assert words in str(info.value)


def test_inputs_keep_the_type_of_path_inputs_and_replace_literals(tmp_path):
    job = {"inputs": {"data": {"type": "uri_file", "path": "./a.csv", "mode": "download"},
                      "epochs": 3, "lr": {"type": "number", "default": 0.1}}}
    result = apply_inputs(job, {"data": "b.csv", "epochs": 5, "lr": 0.01}, cwd=str(tmp_path))
    assert result["inputs"]["data"] == {"type": "uri_file", "path": str(tmp_path / "b.csv"), "mode": "download"}
    assert result["inputs"]["epochs"] == 5
    assert result["inputs"]["lr"] == 0.01
    assert job["inputs"]["epochs"] == 3


def test_an_undeclared_input_is_an_error_with_a_suggestion():
    with pytest.raises(UserError) as info:
        apply_inputs({"inputs": {"epochs": 1}}, {"epoch": 2})
    assert "no input named 'epoch'" in str(info.value) and "did you mean 'epochs'" in str(info.value)


def test_command_line_paths_are_relative_to_the_current_directory_and_uris_kept(tmp_path):
    assert cli_path("data/x", str(tmp_path)) == os.path.join(str(tmp_path), "data", "x")
    for uri in ("azureml:cifar:1", "https://host/x", "azureml://datastores/d/paths/p", "abfss://c@a/p"):
        assert cli_path(uri, str(tmp_path)) == uri


@pytest.mark.parametrize("text", ["\u0663", "\u00b2", "1\u0660", "9" * 5000], ids=["3", "2", "10", "5000-digits"])
def test_an_input_value_is_a_number_only_in_ascii_digits_and_a_bounded_length(text):
    """'٣' is a digit to Python's \\d and int(), not to Azure ML; 5,000 digits would make int() raise."""
    from amldist.submit.overrides import typed_value

    assert typed_value(text, {"type": "integer"}) == text
    if text.isascii():
        return
    assert typed_value(text, {"type": "number"}) == text
    assert typed_value("42", {"type": "integer"}) == 42 and typed_value("4.5", {"type": "number"}) == 4.5


def test_a_set_typo_is_blamed_on_the_set_not_on_a_line_of_the_file(tmp_path):
    """The file never held the key: its finding names the --set (path only, the value may be a secret)."""
    from amldist.submit.prepare import SpecInvalid, prepare

    from tests.conftest import ROOT

    with pytest.raises(SpecInvalid) as caught:
        prepare(str(ROOT / "samples" / "pytorch_ddp" / "job.yml"),
                sets=["resources.instanc_count=1", "distribution.process_count_per_instance=0"])
    found = {d.code: d for d in caught.value.diagnostics}
    assert found["unknown-key"].message.startswith("--set resources.instanc_count: unknown key 'instanc_count'")
    assert found["out-of-range"].message.startswith("--set distribution.process_count_per_instance: ")
    assert {(d.line, d.col) for d in found.values()} == {(0, 0)}
