"""Each backend's own flags: accepted for the backend the job goes to, one error line (exit 2) for any other."""

from __future__ import annotations

import sys

import pytest

JOB = "command: echo hi\nenvironment: azureml:x@latest\n"


@pytest.fixture
def job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "job.yml").write_text(JOB)
    (tmp_path / "local.yml").write_text(JOB + "compute: local\n")
    return tmp_path


@pytest.mark.parametrize("argv, line", [
    (("job.yml", "--local", "--dry-run", "--partition", "gpu", "-w", "ws"),
     "error: --workspace (a flag of the azureml backend) and --partition (a flag of the slurm backend) given, but "
     "this goes to the local backend (--local)"),
    (("job.yml", "--dry-run", "--max-parallel", "2"),
     "error: --max-parallel (a flag of the local backend) given, but this goes to the azureml backend (the default)"),
    (("local.yml", "--dry-run", "--account", "a"),
     "error: --account (a flag of the slurm backend) given, but this goes to the local backend (compute: local)"),
    (("job.yml", "--slurm", "--dry-run", "--subscription", "s"),
     "error: --subscription (a flag of the azureml backend) given, but this goes to the slurm backend (--slurm)"),
    (("job.yml", "--local", "--slurm", "--dry-run"), "error: --local and --slurm are given together"),
    (("job.yml", "--backend", "nope", "--dry-run"), "error: no backend named 'nope'"),
])
def test_a_flag_of_another_backend_is_one_line_and_nothing_runs(cli, job, argv, line):
    code, out, err = cli("submit", *argv)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == line and err.splitlines()[1].startswith("hint: ") and len(err.splitlines()) == 2
    assert not (job / ".amldist").exists()


def test_the_chosen_backends_own_flags_reach_its_plan(cli, job):
    python = sys.executable
    code, out, err = cli("submit", "job.yml", "--backend", "slurm", "--dry-run", "--partition", "gpu",
                         "--python", python, "-n", "s1")
    assert code == 0, err
    assert "--partition=gpu" in out and python in out
    code, out, err = cli("submit", "job.yml", "--local", "--dry-run", "--python", python, "-n", "l1")
    assert code == 0 and f"python = {python}" in out, err
