"""amldist.authoring.convert: legacy DistributedComponent -> v2 command component, component -> job."""

import warnings

import pytest

from amldist.rules import placeholders
from amldist.authoring.convert import (
    DEFAULT_IMAGE,
    TIMEOUT_TAG,
    ConversionError,
    ConversionWarning,
    convert_legacy,
    rebase_paths,
    v2_name,
)
from amldist.authoring.component_job import component_to_job
from amldist.errors import UserError
from amldist.authoring.legacy_builder import ComponentSpecError, v2_port_type
from amldist.model import CommandComponent, DistributedComponent, Launcher
from tests.conftest import conformance_files

LEGACY = conformance_files("valid/legacy")


def legacy(**overrides):
    """A DistributedComponent object built directly (not through the builder's checks)."""
    fields = dict(
        schema="https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json",
        name="Contoso.Train-Model", version="1.2", type="DistributedComponent",
        inputs={
            "data": {"type": "path", "description": "training data"},
            "lr": {"type": "Float", "optional": True, "min": 0.0, "max": 1.0},
            "mode": {"type": "Enum", "enum": ["fast", 2], "default": 2},
        },
        outputs={"model": {"type": "AnyDirectory", "description": "the model"}},
        environment={"docker": {"image": "contoso/train:1"}},
        launcher=Launcher(type="torch.distributed",
                          additional_arguments="python t.py --data {inputs.data} [--lr {inputs.lr}] "
                                               "--mode {inputs.mode} --out {outputs.model}"),
    )
    fields.update(overrides)
    return DistributedComponent(**fields)


@pytest.mark.parametrize(
    "legacy_type, expected",
    [
        ("path", "uri_folder"), ("AnyDirectory", "uri_folder"), ("anydirectory", "uri_folder"),
        ("ModelDirectory", "uri_folder"), ("AnyFile", "uri_file"), ("CsvFile", "uri_file"),
        (["AnyFile", "AnyDirectory"], "uri_folder"), (["AnyFile"], "uri_file"),
        ("String", "string"), ("string", "string"), ("Integer", "integer"), ("int", "integer"),
        ("Float", "number"), ("double", "number"), ("DOUBLE", "number"), ("Boolean", "boolean"),
    ],
)
def test_port_types(legacy_type, expected):
    assert v2_port_type(legacy_type) == expected


@pytest.mark.parametrize("bad", ["Tensor", "", None, ["AnyFile", "String"], [], 3])
def test_unknown_port_types(bad):
    with pytest.raises(ComponentSpecError) as info:
        v2_port_type(bad, where="inputs.x")
    assert info.value.code == "unknown-input-type" and "inputs.x" in info.value.message


@pytest.mark.parametrize(
    "name, expected",
    [("microsoft.com.azureml.samples.mpi_example", "microsoft_com_azureml_samples_mpi_example"),
     ("Contoso.Train-Model", "contoso_train_model"), ("9lives", "c_9lives"), ("ok_name", "ok_name")],
)
def test_names(name, expected):
    assert v2_name(name) == expected


def test_mapping_of_a_full_spec():
    component = convert_legacy(legacy(), instance_count=2, process_count_per_node=4, shm_size="16g",
                               docker_args="--ipc=host", timeout_seconds=7200)
    assert isinstance(component, CommandComponent)
    data = component.to_dict()
    assert data["$schema"].endswith("commandComponent.schema.json") and data["type"] == "command"
    assert (data["name"], data["display_name"], data["version"]) == ("contoso_train_model", "Contoso.Train-Model", "1.2")
    assert data["code"] == "."
    assert data["command"] == ("python t.py --data ${{inputs.data}} $[[--lr ${{inputs.lr}}]] "
                               "--mode ${{inputs.mode}} --out ${{outputs.model}}")
    assert data["inputs"] == {
        "data": {"type": "uri_folder", "description": "training data"},
        "lr": {"type": "number", "optional": True, "min": 0.0, "max": 1.0},
        "mode": {"type": "string", "default": "2", "enum": ["fast", "2"]},
    }
    assert data["outputs"] == {"model": {"type": "uri_folder", "description": "the model"}}
    assert data["environment"] == {"image": "contoso/train:1"}
    assert data["distribution"] == {"type": "pytorch", "process_count_per_instance": 4}
    assert data["resources"] == {"instance_count": 2, "shm_size": "16g", "docker_args": "--ipc=host"}
    assert data["tags"] == {TIMEOUT_TAG: "7200"}
    assert "limits" not in data


def test_tags_become_strings():
    tags = {"owner": "x", "priority": 2, "gpu": True, "empty": None}
    assert convert_legacy(legacy(tags=tags)).tags == {"owner": "x", "priority": "2", "gpu": "True", "empty": ""}


def test_arguments_written_as_a_list():
    launcher = Launcher(type="mpi", additional_arguments=["python", "t.py", "[--lr {inputs.lr}]", "{inputs.data}"])
    assert convert_legacy(legacy(launcher=launcher)).command == "python t.py $[[--lr ${{inputs.lr}}]] ${{inputs.data}}"


def test_mpi_launcher_and_no_run_settings():
    data = convert_legacy(legacy(launcher=Launcher(type="MPI", additional_arguments="echo {inputs.data}"))).to_dict()
    assert data["distribution"] == {"type": "mpi"}
    assert "resources" not in data and "tags" not in data


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"name": "AzureML-Minimal"}, "azureml:AzureML-Minimal@latest"),
        ({"name": "my-env", "version": "3"}, "azureml:my-env:3"),
        ({"docker": {"image": "x/y:1"}, "conda": {"conda_dependencies": {"dependencies": ["python=3.10"]}}},
         {"image": "x/y:1", "conda_file": {"dependencies": ["python=3.10"]}}),
        ({"conda": {"conda_dependencies_file": "env/conda.yaml"}}, {"image": DEFAULT_IMAGE, "conda_file": "src/env/conda.yaml"}),
        ({"docker": {"build": {"dockerfile": "file:docker/Dockerfile"}}},
         {"build": {"path": "src/docker", "dockerfile_path": "Dockerfile"}}),
        ({"docker": {"image": "x/y:1"}, "os": "Windows"}, {"image": "x/y:1", "os_type": "windows"}),
    ],
)
def test_environment_mapping(env, expected):
    assert convert_legacy(legacy(environment=env, code="src")).environment == expected


def test_pip_requirements_become_an_inline_conda_file(tmp_path):
    (tmp_path / "requirements.txt").write_text("# pinned\ntorch==2.3.1\n\nnumpy\n")
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(legacy(environment={"conda": {"pip_requirements_file": "requirements.txt"}}).to_yaml())
    env = convert_legacy(str(spec_file)).environment
    assert env["conda_file"]["dependencies"][1] == {"pip": ["torch==2.3.1", "numpy"]}
    assert env["image"] == DEFAULT_IMAGE


def test_environment_problems():
    with pytest.raises(ComponentSpecError, match="Dockerfile text"):
        convert_legacy(legacy(environment={"docker": {"build": {"dockerfile": "FROM ubuntu\n"}}}))
    with pytest.raises(ComponentSpecError, match="both a Dockerfile"):
        convert_legacy(legacy(environment={"docker": {"build": {"dockerfile": "file:Dockerfile"}},
                                           "conda": {"conda_dependencies": {"dependencies": []}}}))
    with pytest.warns(ConversionWarning, match="no environment"):
        assert convert_legacy(legacy(environment=None)).environment == {"image": DEFAULT_IMAGE}
    with pytest.warns(ConversionWarning, match="docker.image is ignored"):
        env = convert_legacy(legacy(environment={"docker": {"image": "x", "build": {"dockerfile": "file:Dockerfile"}}}))
    assert env.environment == {"build": {"path": ".", "dockerfile_path": "Dockerfile"}}
    with pytest.warns(ConversionWarning, match="docker and conda are ignored"):
        convert_legacy(legacy(environment={"name": "e", "docker": {"image": "x"}}))


def test_dropped_keys_are_reported():
    inputs = {"data": {"type": "path", "is_resource": True, "datastore_mode": "mount"}}
    with pytest.warns(ConversionWarning) as caught:
        convert_legacy(legacy(inputs=inputs, launcher=Launcher(type="mpi", additional_arguments="x {inputs.data}"),
                              outputs=None, extra={"successful_return_code": "Zero"}))
    messages = [str(w.message) for w in caught]
    assert "inputs.data: dropped datastore_mode, is_resource (no v2 equivalent)" in messages
    assert "dropped successful_return_code (no v2 equivalent)" in messages


@pytest.mark.parametrize(
    "overrides, code",
    [
        (dict(launcher=Launcher(type="horovod", additional_arguments="x")), "unknown-launcher"),
        (dict(launcher=Launcher(type="mpi")), "missing-command"),
        (dict(launcher=Launcher(type="mpi", additional_arguments="x {inputs.nope}")), "undeclared-input"),
        (dict(launcher=Launcher(type="mpi", additional_arguments="x --lr {inputs.lr}")), "optional-input-outside-group"),
    ],
)
def test_refuses_bad_legacy_specs(overrides, code):
    with pytest.raises(ComponentSpecError) as info:
        convert_legacy(legacy(**overrides))
    assert info.value.code == code


@pytest.mark.parametrize("option", [dict(instance_count=0), dict(process_count_per_node=-1),
                                    dict(shm_size="lots"), dict(timeout_seconds=1.5)])
def test_refuses_bad_run_settings(option):
    (name,) = option
    with pytest.raises(UserError, match=f"^{name}:? must ") as info:
        convert_legacy(legacy(), **option)
    assert repr(option[name]) in info.value.message and "\n" not in info.value.message


def test_refuses_a_v2_file(tmp_path):
    path = tmp_path / "c.yaml"
    convert_legacy(legacy()).save(path)
    with pytest.raises(ConversionError, match="not a legacy DistributedComponent"):
        convert_legacy(str(path))


def test_additional_includes_file(tmp_path):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(legacy().to_yaml())
    (tmp_path / "spec.additional_includes").write_text("../shared/utils\n\n../common.py\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plain lines are all local paths: nothing to warn about
        component = convert_legacy(str(spec_file))
    assert component.extra["additional_includes"] == ["../shared/utils", "../common.py"]
    (tmp_path / "spec.additional_includes").write_text(
        "additional_includes:\n  - ../x\n  - {type: artifact, feed: f, name: n, version: '1'}\n")
    with pytest.warns(ConversionWarning, match="artifact entries dropped"):
        assert convert_legacy(str(spec_file)).extra["additional_includes"] == ["../x"]
    rebase_paths(component, str(tmp_path), str(tmp_path / "out"))
    assert component.extra["additional_includes"] == ["../../shared/utils", "../../common.py"]
    assert component.code == ".."


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.name)
def test_conformance_legacy_files_keep_their_references(path):
    from amldist.model import load

    source = load(path)
    component = convert_legacy(str(path))
    before = [(r.source, r.name, len(r.groups)) for r in placeholders.references(source.launcher.additional_arguments)]
    after = [(r.source, r.name, len(r.groups)) for r in placeholders.references(component.command, placeholders.V2)]
    assert before == after and before
    assert set(component.inputs) == set(source.inputs)
    assert component.distribution.type == "mpi"


def test_corpus_present(conformance_dir):
    assert len(LEGACY) >= 3


# --- component_to_job ---


def test_job_from_a_component(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    component = convert_legacy(legacy(code="src"), instance_count=2, timeout_seconds=600)
    job = component_to_job(component, inputs={"data": "data/train", "mode": "fast"}, compute="gpu",
                           process_count_per_instance=8, instance_type="Standard_ND96isr_H100_v5",
                           environment_variables={"NCCL_DEBUG": "INFO"}, name="run1", experiment_name="exp",
                           base_dir=str(tmp_path / "components"))
    data = job.to_dict()
    assert data["$schema"].endswith("commandJob.schema.json") and data["type"] == "command"
    assert data["command"] == "python t.py --data ${{inputs.data}} --mode ${{inputs.mode}} --out ${{outputs.model}}"
    assert data["inputs"] == {"data": {"type": "uri_folder", "path": str(tmp_path / "data" / "train")}, "mode": "fast"}
    assert data["outputs"] == {"model": {"type": "uri_folder"}}
    assert data["code"] == str(tmp_path / "components" / "src")
    assert data["distribution"] == {"type": "pytorch", "process_count_per_instance": 8}
    assert data["resources"] == {"instance_count": 2, "instance_type": "Standard_ND96isr_H100_v5"}
    assert data["limits"] == {"timeout": 600}
    assert "tags" not in data  # the timeout tag is consumed
    assert (data["compute"], data["name"], data["experiment_name"]) == ("gpu", "run1", "exp")
    assert data["environment_variables"] == {"NCCL_DEBUG": "INFO"}


@pytest.mark.parametrize("tag", ["\u00b2", "\u0663", "1h", "0", "-5"])
def test_a_timeout_tag_that_is_no_whole_number_of_seconds_is_one_line_naming_the_tag(tmp_path, tag):
    """'²' and '٣' pass str.isdigit() (int() then refuses the first and reads the second as 3)."""
    component = convert_legacy(legacy(code="src"))
    component.tags = {TIMEOUT_TAG: tag}
    inputs = {"data": "data/train", "mode": "fast"}
    with pytest.raises(UserError) as info:
        component_to_job(component, inputs=inputs, base_dir=str(tmp_path))
    problem = "must be at least 1" if tag in ("0", "-5") else f"must be a whole number, got {tag!r}"
    assert info.value.message.startswith(f"tags.{TIMEOUT_TAG}: {problem}")
    assert component_to_job(component, inputs=inputs, base_dir=str(tmp_path), timeout=60).limits.timeout == 60


def test_job_inputs_are_coerced_and_checked():
    component = convert_legacy(legacy(inputs={
        "data": {"type": "AnyFile"}, "lr": {"type": "Float", "optional": True, "min": 0.0, "max": 1.0},
        "mode": {"type": "Enum", "enum": ["a", "b"], "default": "a"}, "n": {"type": "Integer", "default": 2},
        "flag": {"type": "Boolean", "optional": True},
    }, launcher=Launcher(type="mpi", additional_arguments="x {inputs.data} [--lr {inputs.lr}] {inputs.mode} {inputs.n} [--f {inputs.flag}]")))
    job = component_to_job(component, inputs={"data": "azureml:ds:1", "lr": "0.5", "n": "7", "flag": "TRUE"}, timeout=30)
    assert job.inputs == {"data": {"type": "uri_file", "path": "azureml:ds:1"}, "lr": 0.5, "mode": "a", "n": 7, "flag": True}
    assert job.command == "x ${{inputs.data}} --lr ${{inputs.lr}} ${{inputs.mode}} ${{inputs.n}} --f ${{inputs.flag}}"
    assert job.limits.timeout == 30
    for bad, words in [({"lr": "2"}, "[0.0, 1.0]"), ({"mode": "c"}, "one of a, b"), ({"n": "x"}, "expects an integer"),
                       ({"nope": 1}, "unknown input"), ({"flag": "yes"}, "boolean")]:
        with pytest.raises(UserError, match=None) as info:
            component_to_job(component, inputs={"data": "d", **bad})
        assert words in info.value.message
    with pytest.raises(UserError, match="'data' is required"):
        component_to_job(component, inputs={})


def test_job_from_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "comp"
    folder.mkdir()
    legacy_file = folder / "legacy.yaml"
    legacy_file.write_text(legacy(code="src").to_yaml())
    job = component_to_job(str(legacy_file), inputs={"data": "d"})
    assert job.code == str(folder / "src")
    v2_file = folder / "v2.yaml"
    convert_legacy(str(legacy_file)).save(v2_file)
    assert component_to_job(str(v2_file), inputs={"data": "d"}).to_dict() == job.to_dict()
    # a DistributedComponent object converts on the way
    assert component_to_job(legacy(code="src"), inputs={"data": "d"}, base_dir=str(folder)).code == str(folder / "src")


def test_job_refusals():
    component = convert_legacy(legacy())
    with pytest.raises(UserError, match="pytorch and mpi"):
        tf = CommandComponent.from_dict({**component.to_dict(), "distribution": {"type": "tensorflow", "worker_count": 2}})
        component_to_job(tf, inputs={"data": "d"}, process_count_per_instance=2)
    component.extra["additional_includes"] = ["../x"]
    with pytest.raises(UserError, match="additional_includes"):
        component_to_job(component, inputs={"data": "d"})
    with pytest.raises(UserError, match="expected a command component"):
        component_to_job(42)
    for option, value in [("instance_count", 0), ("process_count_per_instance", 2.5), ("timeout", True)]:
        with pytest.raises(UserError, match=f"^{option}: must be ") as info:
            component_to_job(convert_legacy(legacy()), inputs={"data": "d"}, **{option: value})
        assert repr(value) in info.value.message
