"""``amldist submit`` end to end: the samples, overrides, validation first, dry runs, safety."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from amldist.backends.submit import choose_backend

from tests.backends.local.helpers import SAMPLES, write_job

ENV = "environment: azureml:AzureML-sklearn-1.5@latest\n"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run from a fresh folder: run folders go under ./.amldist/runs."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_folders(folder):
    root = folder / ".amldist" / "runs"
    return sorted(root.iterdir()) if root.is_dir() else []


def test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes(cli, here):
    # three epochs of two steps each (2048 samples, 4 ranks, batches of 256): enough for the loss to fall, while
    # the 4 ranks share 2 cores here (each step waits for all of them)
    code, _out, err = cli("submit", str(SAMPLES / "pytorch_ddp" / "job.yml"), "--local", "--input", "epochs=3",
                          "--input", "batch_size=256")
    (run,) = run_folders(here)
    logs = sorted(p.name for p in (run / "user_logs").iterdir())
    assert code == 0, err + "".join((run / "user_logs" / n).read_text() for n in logs)
    assert logs == [f"std_log_process_0{i}.txt" for i in range(4)]
    rank0 = (run / "user_logs" / "std_log_process_00.txt").read_text()
    assert "rank 0/4 (local 0/2, node 0/2) via pytorch" in rank0
    assert "status: Completed after" in _out  # the run's end, as the README shows it
    for name in logs:  # torch's warning when numpy is missing: the Quick start installs it, CI checks it is gone
        assert "Failed to initialize NumPy" not in (run / "user_logs" / name).read_text()
    assert "parameters in sync across 4 ranks: True" in rank0
    assert "rank 3/4 (local 1/2, node 1/2)" in (run / "user_logs" / "std_log_process_03.txt").read_text()
    metrics = json.loads((run / "outputs" / "model" / "metrics.json").read_text())
    assert metrics["world_size"] == 4 and len(metrics["losses"]) == 3
    assert metrics["losses"][-1] < metrics["losses"][0]
    assert (run / "outputs" / "model" / "model.pt").stat().st_size > 0


@pytest.mark.parametrize("extra, world, collective", [((), 2, True), (("--instance-count", "2"), 4, True)])
def test_mpi_sample(cli, here, extra, world, collective):
    """2 emulated nodes are one mpirun world (engine/launchers.py): the all-reduce spans them."""
    code, _out, err = cli("submit", str(SAMPLES / "mpi" / "job.yml"), "--local", *extra)
    (run,) = run_folders(here)
    logs = {p.name: p.read_text() for p in (run / "user_logs").glob("std_log_process_*.txt")}
    assert code == 0, err + str(logs)
    assert len(logs) == world
    for rank in range(world):
        text = logs[f"std_log_process_0{rank}.txt"]
        assert f"hello from rank {rank}/{world}" in text and "via openmpi" in text
        assert (f"allreduce of ranks: {world * (world - 1) // 2}" in text) is collective


def test_tensorflow_sample(cli, here):
    code, _out, err = cli("submit", str(SAMPLES / "tensorflow" / "job.yml"), "--local")
    (run,) = run_folders(here)
    logs = {p.name: p.read_text() for p in (run / "user_logs").iterdir()}
    assert code == 0, err + str(logs)
    assert sorted(logs) == ["std_log_node_00_ps.txt", "std_log_node_00_worker.txt", "std_log_node_01_worker.txt"]
    assert "task worker 1: workers" in logs["std_log_node_01_worker.txt"]
    assert "task ps 0" in logs["std_log_node_00_ps.txt"]


def test_pipeline_sample_builds_offline_and_plans_every_step(tmp_path):
    result = subprocess.run([sys.executable, str(SAMPLES / "pipeline" / "pipeline.py"), "--dry-run"],
                            capture_output=True, text=True, timeout=180, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    assert "3 step(s)" in result.stdout and result.stdout.count("== step ") == 3
    assert "order: prep -> train -> evaluate" in result.stdout  # the step names of pipeline.yml, not data/trained
    assert "4 process(es)" in result.stdout  # the builder's 2 nodes x 2 processes training step
    assert not (tmp_path / ".amldist").exists()  # a dry run starts and writes nothing


def test_every_sample_yaml_validates(cli):
    code, out, err = cli("validate", str(SAMPLES))
    assert code == 0, out + err
    assert "0 errors" in out + err


def test_overrides_reach_the_ranks_and_the_file_is_not_modified(cli, here):
    path = write_job(here, """
        command: python -c "import os, sys; print(os.environ['WORLD_SIZE'], os.environ['SEED'], sys.argv[1:])" ${{inputs.msg}}
        inputs:
          msg: original
        distribution: {type: pytorch, process_count_per_instance: 1}
        """)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    code, _out, err = cli("submit", str(path), "--local", "--set", "environment_variables.SEED=42",
                         "--input", "msg=x; touch pwned", "--process-count-per-instance", "2", "--name", "first")
    assert code == 0, err
    log = (here / ".amldist" / "runs" / "first" / "user_logs" / "std_log_process_01.txt").read_text()
    # unquoted in the command: split into words as Azure ML's shell splits it, but never run
    assert log.strip() == "2 42 ['x;', 'touch', 'pwned']"
    assert not any(here.rglob("pwned"))
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    code, _out, err = cli("submit", str(path), "--local", "--name", "first")
    assert code == 2 and "already exists" in err


def test_an_invalid_spec_starts_nothing(cli, here):
    marker = here / "started"
    path = write_job(here, f"command: touch {marker}\n")
    code, _out, err = cli("submit", str(path), "--local", "--set", "resources.instance_count=0",
                         "--set", "distribution.type=torch.distributed")
    assert code == 1
    assert "resources.instance_count" in err and "distribution.type" in err
    assert f"{path}:" in err  # the same FILE:LINE:COL diagnostics as amldist validate
    assert not marker.exists() and run_folders(here) == []


def test_an_invalid_file_gets_the_diagnostics_amldist_validate_prints(cli, here):
    path = write_job(here, """
        command: python worker.py ${{inputs.nope}}
        distribution: {type: PyTorch, process_count_per_instanc: 2}
        """)
    code, out, err = cli("validate", str(path))
    assert code == 1
    expected = [line for line in (out + err).splitlines() if ": error " in line]
    assert len(expected) == 2
    code, _out, err = cli("submit", str(path), "--local")
    assert code == 1
    assert [line for line in err.splitlines() if ": error " in line] == expected
    assert run_folders(here) == []


def test_dry_run_prints_ranks_with_secrets_masked_and_starts_nothing(cli, here):
    marker = here / "started"
    path = write_job(here, f"""
        command: touch {marker}
        environment_variables:
          WANDB_API_KEY: wandb-secret-value
          PLAIN_SETTING: visible-value
        distribution: {{type: pytorch, process_count_per_instance: 2}}
        """)
    code, out, err = cli("submit", str(path), "--local", "--dry-run", "--set", "environment_variables.DB_PASSWORD=pw123")
    assert code == 0, err
    assert "wandb-secret-value" not in out and "pw123" not in out
    assert "WANDB_API_KEY='***'" in out and "DB_PASSWORD='***'" in out and "PLAIN_SETTING=visible-value" in out
    assert "RANK=0 LOCAL_RANK=0 touch" in out and "RANK=1 LOCAL_RANK=1 touch" in out
    assert not marker.exists() and run_folders(here) == []


def test_compute_local_picks_the_local_backend_and_a_component_runs_as_a_job(cli, here):
    (here / "src").mkdir()
    (here / "component.yml").write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\n"
        "type: command\nname: hello\nversion: '1'\ncode: src\n" + ENV +
        "command: echo hello ${{inputs.who}} $[[--loud ${{inputs.loud}}]]\n"
        "inputs:\n  who: {type: string}\n  loud: {type: boolean, optional: true}\n")
    code, _out, err = cli("submit", "component.yml", "--input", "who=world", "--set", "compute=local")
    assert code == 0, err
    (run,) = run_folders(here)
    assert (run / "user_logs" / "std_log.txt").read_text().strip() == "hello world"


def test_a_legacy_distributed_component_runs_with_run_settings_from_options(cli, here):
    (here / "src").mkdir()
    (here / "data").mkdir()
    (here / "src" / "echo.py").write_text("import os, sys\nprint(os.environ['RANK'], os.environ['WORLD_SIZE'], "
                                          "sys.argv[1:])\n")
    (here / "legacy.yaml").write_text("""\
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: microsoft.com.amldist.echo
version: 0.0.1
type: DistributedComponent
inputs:
  input_path: {type: path, optional: false}
  greeting: {type: String, optional: true}
outputs:
  output_path: {type: path}
launcher:
  type: torch.distributed
  additional_arguments: >-
    python echo.py --input-path {inputs.input_path} [--greeting {inputs.greeting}]
    --output-path {outputs.output_path}
environment:
  name: AzureML-Minimal
code: src
""")
    code, _out, err = cli("submit", "legacy.yaml", "--local", "--instance-count", "1",
                         "--process-count-per-instance", "2", "--input", "input_path=data")
    assert code == 0, err
    (run,) = run_folders(here)
    logs = [(run / "user_logs" / f"std_log_process_0{r}.txt").read_text() for r in range(2)]
    expected_args = ["--input-path", str(here / "data"), "--output-path", str(run / "outputs" / "output_path")]
    assert logs[1].strip() == f"1 2 {expected_args}"


def test_a_pipeline_file_is_refused_with_a_pointer(cli, here):
    (here / "p.yml").write_text("type: pipeline\njobs: {}\n")
    code, _out, err = cli("submit", "p.yml", "--local")
    assert code == 2 and "pipeline" in err


def test_backend_choice():
    job = SimpleNamespace(compute="azureml:gpu-cluster")
    assert choose_backend(local=True, job=job) == "local"
    assert choose_backend(local=False, job=job) == "azureml"
    assert choose_backend(local=False, job=SimpleNamespace(compute="Local")) == "local"
    assert choose_backend(local=False, job=SimpleNamespace(compute=None)) == "azureml"
