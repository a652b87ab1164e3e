"""``amldist submit`` (the real CLI) to a fake Azure ML workspace at the HTTP boundary."""

from __future__ import annotations

import json

import pytest

JOB = """\
type: command
code: src
command: python train.py --lr ${{inputs.lr}}
inputs:
  lr: 0.1
environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
compute: azureml:gpu-cluster
distribution:
  type: pytorch
  process_count_per_instance: 2
resources:
  instance_count: 2
environment_variables:
  WANDB_API_KEY: abc123secret
"""

LEGACY = """\
$schema: http://azureml/sdk-2-0/DistributedComponent.json
name: ddp_train
version: 0.0.1
type: DistributedComponent
inputs:
  epochs:
    type: Integer
    default: 2
outputs:
  model:
    type: path
code: ./src
environment:
  docker:
    image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04
  os: Linux
launcher:
  type: torch.distributed
  additional_arguments: python train.py --epochs {inputs.epochs} --out {outputs.model}
"""


@pytest.fixture
def project(clean_env):
    src = clean_env / "src"
    src.mkdir()
    (src / "train.py").write_text("print('training')\n")
    (clean_env / "job.yml").write_text(JOB)
    return clean_env


WS = ["--workspace", "ws", "--resource-group", "rg", "--subscription", "00000000-0000-0000-0000-000000000000"]


def test_submit_to_azure(fake_azure, project, cli):
    code, out, err = cli("submit", "job.yml", *WS, "--name", "cli-run-1")
    assert code == 0, err
    (put,) = fake_azure.job_puts()
    assert put.path.endswith("/jobs/cli-run-1")
    props = put.json()["properties"]
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 2}
    assert props["resources"]["instanceCount"] == 2
    assert props["environmentVariables"] == {"WANDB_API_KEY": "abc123secret"}
    assert "amldist/runtime/__init__.py" in fake_azure.uploaded_code()
    assert "train.py" in fake_azure.uploaded_code()
    lines = out.splitlines()
    assert lines[0] == "job: cli-run-1"
    assert lines[1].startswith("studio: https://ml.azure.com/runs/cli-run-1?")
    assert "abc123secret" not in out + err


def test_overrides_reach_the_put_body(fake_azure, project, cli):
    code, out, err = cli("submit", "job.yml", *WS, "--instance-count", "4", "--process-count-per-instance", "8",
                         "--set", "resources.instance_type=Standard_ND96isr_H100_v5", "--input", "lr=0.5")
    assert code == 0, err
    props = fake_azure.job_puts()[0].json()["properties"]
    assert props["resources"]["instanceCount"] == 4
    assert props["resources"]["instanceType"] == "Standard_ND96isr_H100_v5"
    assert props["distribution"]["processCountPerInstance"] == 8
    assert props["inputs"]["lr"]["value"] == "0.5"
    assert (project / "job.yml").read_text() == JOB  # the file on disk is never modified


@pytest.mark.parametrize("args, field", [
    (["--set", "distribution.type=torch.distributed"], "distribution.type"),
    (["--set", "resources.instance_count=0"], "resources.instance_count"),
    (["--set", "command="], "command"),
])
def test_invalid_spec_sends_nothing(fake_azure, project, cli, args, field):
    code, out, err = cli("submit", "job.yml", *WS, *args)
    assert code == 1
    assert any(line.startswith("job.yml:") and ": error " in line and f" {field}:" in line
               for line in err.splitlines()), err
    assert "nothing was submitted or started" in err
    assert fake_azure.requests == []
    assert fake_azure.credential.calls == 0


def test_invalid_file_sends_nothing(fake_azure, project, cli):
    (project / "bad.yml").write_text(JOB.replace("process_count_per_instance: 2", "process_count_per_instance: -1"))
    code, out, err = cli("submit", "bad.yml", *WS)
    assert code == 1
    assert "bad.yml:" in err
    assert fake_azure.requests == [] and fake_azure.credential.calls == 0


def test_no_workspace_exits_2_naming_both_ways_forward(fake_azure, project, cli):
    code, out, err = cli("submit", "job.yml")
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[-2].startswith("error: no Azure ML workspace configured")
    assert lines[-1].startswith("hint: ")
    for needed in ("--workspace", "AZUREML_ARM_WORKSPACE_NAME", "config.json", "--local"):
        assert needed in err
    assert fake_azure.requests == []


def test_dry_run_prints_the_masked_rest_body_and_sends_nothing(fake_azure, project, cli):
    code, out, err = cli("submit", "job.yml", "--dry-run")
    assert code == 0, err
    shown = json.loads(out)
    body = shown["request"]["body"]
    assert body["properties"]["environmentVariables"] == {"WANDB_API_KEY": "***"}
    # the body names what will be uploaded (the snapshot with the runtime), not the local folder
    assert body["properties"]["codeId"].startswith("<uploaded at submit:")
    assert "amldist/runtime/__init__.py" in shown["code_snapshot"]["files"]
    assert body["properties"]["distribution"]["distributionType"] == "PyTorch"
    assert "abc123secret" not in out + err
    assert fake_azure.requests == [] and fake_azure.credential.calls == 0


def test_stream_prints_the_job_logs(fake_azure, project, cli):
    fake_azure.run_log = "epoch 1 done\n"
    code, out, err = cli("submit", "job.yml", *WS, "--stream")
    assert code == 0, err
    assert "epoch 1 done" in out


def test_stream_of_a_failed_job_exits_1(fake_azure, project, cli):
    fake_azure.run_statuses = ("Running", "Failed")
    code, out, err = cli("submit", "job.yml", *WS, "--stream")
    assert code == 1
    assert "failed" in err and "rank 1 exited with code 3" in err


def test_legacy_component_is_submitted_as_a_distributed_job(fake_azure, project, cli):
    (project / "legacy.yml").write_text(LEGACY)
    code, out, err = cli("submit", "legacy.yml", *WS, "--instance-count", "2",
                         "--process-count-per-instance", "4", "--set", "compute=azureml:gpu-cluster")
    assert code == 0, err
    props = fake_azure.job_puts()[0].json()["properties"]
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 4}
    assert props["resources"]["instanceCount"] == 2
    assert "amldist/runtime/__init__.py" in fake_azure.uploaded_code()
