"""``amldist convert``: stdout, -o/--force, run settings, warnings, bad files."""

import os

import pytest

from amldist.cli.convert import HEADER
from amldist.authoring.convert import convert_legacy
from amldist.model import load, loads
from amldist.model.yamlio import load_yaml

LEGACY_TEXT = """\
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: contoso.trainer
version: 0.0.1
type: DistributedComponent
inputs:
  data: {type: AnyDirectory, optional: true}
  epochs: {type: Integer, default: 3}
outputs:
  model: {type: AnyDirectory}
code: src
environment:
  docker: {image: contoso/train:1}
launcher:
  type: torch.distributed
  additional_arguments: python train.py [--data {inputs.data}] --epochs {inputs.epochs} --model {outputs.model}
"""


@pytest.fixture
def legacy_file(tmp_path):
    path = tmp_path / "legacy.yaml"
    path.write_text(LEGACY_TEXT)
    (tmp_path / "src").mkdir()
    return path


def test_prints_yaml_on_stdout(cli, legacy_file):
    code, out, err = cli("convert", str(legacy_file), "--instance-count", "2", "--process-count-per-node", "4",
                         "--shm-size", "16g", "--docker-args=--ipc=host", "--timeout-seconds", "3600")
    assert code == 0, err
    assert out.startswith(HEADER.format(source="legacy.yaml"))
    data = load_yaml(out).data
    assert data == convert_legacy(str(legacy_file), instance_count=2, process_count_per_node=4, shm_size="16g",
                                  docker_args="--ipc=host", timeout_seconds=3600).to_dict()
    assert data["resources"] == {"instance_count": 2, "shm_size": "16g", "docker_args": "--ipc=host"}
    assert data["distribution"] == {"type": "pytorch", "process_count_per_instance": 4}
    assert data["tags"] == {"amldist.timeout_seconds": "3600"}
    assert data["command"].startswith("python train.py $[[--data ${{inputs.data}}]]")


def test_writes_out_and_never_overwrites_without_force(cli, legacy_file, tmp_path):
    out = tmp_path / "v2.yaml"
    code, stdout, err = cli("convert", str(legacy_file), "-o", str(out))
    assert (code, stdout) == (0, "") and out.is_file()
    first = out.read_text()
    out.write_text("# my edits\n")
    code, stdout, err = cli("convert", str(legacy_file), "-o", str(out), "--instance-count", "3")
    assert code == 2  # a usage mistake (the exit-code table)
    assert err.strip().count("\n") == 0 and "already exists" in err and "--force" in err
    assert out.read_text() == "# my edits\n"  # untouched
    code, _, err = cli("convert", str(legacy_file), "-o", str(out), "--force")
    assert code == 0 and out.read_text() == first
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".amldist-")]  # no temp files left


def test_paths_are_rewritten_for_another_folder(cli, legacy_file, tmp_path):
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "v2.yaml"
    assert cli("convert", str(legacy_file), "-o", str(out))[0] == 0
    component = load(out)
    assert component.code == "../src"
    assert os.path.isdir(os.path.join(out.parent, component.code))


def test_missing_output_folder(cli, legacy_file, tmp_path):
    code, _, err = cli("convert", str(legacy_file), "-o", str(tmp_path / "nope" / "v2.yaml"))
    assert code == 2 and "folder does not exist" in err


def test_warnings_go_to_stderr(cli, tmp_path):
    path = tmp_path / "legacy.yaml"
    path.write_text(LEGACY_TEXT.replace("environment:\n  docker: {image: contoso/train:1}\n", ""))
    code, out, err = cli("convert", str(path))
    assert code == 0
    assert "warning: no environment given" in err
    assert loads(out).environment == {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest"}


@pytest.mark.parametrize(
    "edit, words",
    [
        (("--epochs {inputs.epochs}", "--epochs {inputs.epoch}"), "epoch"),
        (("[--data {inputs.data}]", "--data {inputs.data}"), "data"),
        (("type: torch.distributed", "type: horovod"), "horovod"),
    ],
)
def test_bad_input_file_exits_1(cli, tmp_path, edit, words):
    path = tmp_path / "legacy.yaml"
    path.write_text(LEGACY_TEXT.replace(*edit))
    code, out, err = cli("convert", str(path))
    assert code == 1 and out == ""
    assert words in err
    assert f"{path}:" in err and ": error " in err  # the validator's diagnostics, FILE:LINE:COL: error CODE: ...


def test_not_a_legacy_file(cli, legacy_file, tmp_path):
    out = tmp_path / "v2.yaml"
    cli("convert", str(legacy_file), "-o", str(out))
    code, _, err = cli("convert", str(out))
    assert code == 1 and "not a legacy DistributedComponent" in err


@pytest.mark.parametrize("args", [["--instance-count", "0"], ["--timeout-seconds", "soon"], []])
def test_usage_errors(cli, legacy_file, args):
    argv = ["convert", str(legacy_file), *args] if args else ["convert"]
    code, _, err = cli(*argv)
    assert code == 2 and "usage:" in err


def test_help_lists_the_options(cli):
    code, out, _ = cli("convert", "--help")
    assert code == 0
    for option in ("--force", "--instance-count", "--process-count-per-node", "--shm-size", "--docker-args",
                   "--timeout-seconds"):
        assert option in out


def test_conformance_files_convert(cli, conformance_dir, tmp_path):
    for path in sorted((conformance_dir / "valid" / "legacy").glob("*.y*ml")):
        out = tmp_path / (path.stem + ".v2.yaml")
        code, _, err = cli("convert", str(path), "-o", str(out))
        assert code == 0, err
        assert load(out).distribution.type == "mpi"
