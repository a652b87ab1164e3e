"""Workspace resolution: flags > AZUREML_ARM_* > config.json, searched as MLClient.from_config searches."""

from __future__ import annotations

import json

import pytest

from amldist.backends.azureml.workspace import find_config_file, require_workspace, resolve_workspace
from amldist.errors import UserError

ENV = {"AZUREML_ARM_SUBSCRIPTION": "env-sub", "AZUREML_ARM_RESOURCEGROUP": "env-rg",
       "AZUREML_ARM_WORKSPACE_NAME": "env-ws"}


def write_config(folder, sub="cfg-sub", rg="cfg-rg", ws="cfg-ws", name="config.json", **extra):
    folder.mkdir(parents=True, exist_ok=True)
    data = {"subscription_id": sub, "resource_group": rg, "workspace_name": ws, **extra}
    (folder / name).write_text(json.dumps(data))
    return folder / name


def triple(found):
    return (found.subscription_id, found.resource_group, found.workspace_name)


def test_flags_win_over_environment_and_config(tmp_path):
    write_config(tmp_path)
    found = resolve_workspace(ENV, str(tmp_path), subscription="s", resource_group="g", workspace="w")
    assert triple(found) == ("s", "g", "w")
    assert found.sources == {"subscription_id": "--subscription", "resource_group": "--resource-group",
                             "workspace_name": "--workspace"}


def test_environment_wins_over_config(tmp_path):
    write_config(tmp_path)
    found = resolve_workspace(ENV, str(tmp_path))
    assert triple(found) == ("env-sub", "env-rg", "env-ws")


def test_each_setting_comes_from_its_first_source(tmp_path):
    path = write_config(tmp_path)
    found = resolve_workspace({"AZUREML_ARM_RESOURCEGROUP": "env-rg"}, str(tmp_path), workspace="flag-ws")
    assert triple(found) == ("cfg-sub", "env-rg", "flag-ws")
    assert found.sources["subscription_id"] == str(path)
    assert "flag-ws" in found.describe() and str(path) in found.describe()


def test_blank_values_count_as_missing(tmp_path):
    write_config(tmp_path)
    found = resolve_workspace({"AZUREML_ARM_WORKSPACE_NAME": "  "}, str(tmp_path), workspace="")
    assert triple(found) == ("cfg-sub", "cfg-rg", "cfg-ws")


def test_config_found_in_a_parent_folder(tmp_path):
    write_config(tmp_path)
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert triple(resolve_workspace({}, str(deep))) == ("cfg-sub", "cfg-rg", "cfg-ws")


def test_dot_azureml_in_a_parent_beats_plain_config_here(tmp_path):
    """from_config tries .azureml/ through every parent before it tries a plain config.json."""
    write_config(tmp_path / ".azureml", ws="from-dot-azureml")
    here = tmp_path / "project"
    write_config(here, ws="plain-here")
    assert resolve_workspace({}, str(here)).workspace_name == "from-dot-azureml"


def test_scope_form_of_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "Scope": "/subscriptions/s1/resourceGroups/g1/providers/Microsoft.MachineLearningServices/workspaces/w1"}))
    assert triple(resolve_workspace({}, str(tmp_path))) == ("s1", "g1", "w1")


LAYOUTS = [
    {".azureml/config.json": "a"},
    {"aml_config/config.json": "b", "config.json": "c"},
    {"config.json": "c", "project.json": "d"},
    {"project.json": "d"},
    {".azureml/project.json": "e", "aml_config/config.json": "b"},
    {"../config.json": "up", "aml_config/project.json": "f"},
    {"../../.azureml/config.json": "up2", "config.json": "here"},
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: ",".join(layout))
def test_search_order_matches_mlclient_from_config(tmp_path, layout):
    """The reference is azure-ai-ml itself: MLClient.from_config reads the same file we find."""
    from azure.ai.ml import MLClient

    from tests.backends.azureml.fake_azure import FakeCredential

    start = tmp_path / "x" / "y"
    start.mkdir(parents=True)
    for relative, ws in layout.items():
        target = (start / relative).resolve()
        write_config(target.parent, ws=ws, name=target.name)
    client = MLClient.from_config(FakeCredential(), path=str(start))
    ours = resolve_workspace({}, str(start))
    assert ours.workspace_name == client.workspace_name
    assert find_config_file(str(start)) is not None


def test_nothing_configured_is_none_and_require_names_both_ways_forward(tmp_path):
    if find_config_file(str(tmp_path)) is not None:
        pytest.skip("a config.json above the temporary folder would be found")
    assert resolve_workspace({}, str(tmp_path)) is None
    with pytest.raises(UserError) as caught:
        require_workspace({}, str(tmp_path))
    err = caught.value
    assert err.exit_code == 2
    text = f"{err.message} {err.hint}"
    for needed in ("--workspace", "--resource-group", "--subscription", "AZUREML_ARM_WORKSPACE_NAME",
                   "config.json", "--local"):
        assert needed in text


def test_incomplete_settings_name_what_is_missing(tmp_path):
    with pytest.raises(UserError) as caught:
        resolve_workspace({"AZUREML_ARM_WORKSPACE_NAME": "w"}, str(tmp_path), resource_group="g")
    err = caught.value
    assert err.exit_code == 2
    assert "subscription_id" in err.message and "workspace_name from AZUREML_ARM_WORKSPACE_NAME" in err.message
    assert "--subscription" in err.hint and "--local" in err.hint


def test_a_config_json_that_is_not_a_workspace_config_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 768}))
    with pytest.raises(UserError) as caught:
        resolve_workspace({}, str(tmp_path))
    assert str(tmp_path / "config.json") in caught.value.message
    assert "workspace_name" in caught.value.message


def test_config_is_not_read_when_flags_and_environment_are_complete(tmp_path):
    (tmp_path / "config.json").write_text("{ not json")
    found = resolve_workspace({"AZUREML_ARM_SUBSCRIPTION": "s"}, str(tmp_path), resource_group="g", workspace="w")
    assert triple(found) == ("s", "g", "w")


def test_broken_config_json_is_a_user_error(tmp_path):
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(UserError) as caught:
        resolve_workspace({}, str(tmp_path))
    assert "config.json" in caught.value.message and caught.value.exit_code == 2


def test_a_fifo_named_config_json_is_refused_not_read(tmp_path):
    import os

    import pytest

    from amldist.backends.azureml.workspace import read_config_file
    from amldist.errors import UserError

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(UserError) as refused:
        read_config_file(str(fifo))  # would block forever if it were opened
    assert "FIFO" in refused.value.message and "workspace config file" in refused.value.message
