"""Real local runs that must behave as in Azure ML's container: the ranks' python, a past run run
again, run folders kept out of git, and the README's local examples run exactly as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.backends.local.helpers import ROOT, amldist_cmd, write_job


def amldist(tmp_path, *args, env=None, timeout=120):
    return subprocess.run(amldist_cmd(*args), cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def only_log(tmp_path, name):
    return (tmp_path / ".amldist" / "runs" / name / "user_logs" / "std_log.txt").read_text()


def test_ranks_run_amldists_python_not_the_first_one_on_path(tmp_path):
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    for name in ("python", "python3"):  # what an activated other venv, or no venv at all, would give
        (wrong / name).write_text("#!/bin/sh\necho 'the python on PATH ran'; exit 1\n")
        (wrong / name).chmod(0o755)
    path = write_job(tmp_path, 'command: python -c "import sys, torch; print(sys.executable)"\n')
    run = amldist(tmp_path, "submit", str(path), "--local", "--name", "ranks",
                  env={"PATH": f"{wrong}{os.pathsep}{os.environ['PATH']}"})
    assert run.returncode == 0, run.stderr + only_log(tmp_path, "ranks")
    assert only_log(tmp_path, "ranks").strip() == sys.executable
    assert f"python {sys.executable}" in run.stdout  # the run header names it


def test_dash_dash_python_chooses_the_ranks_interpreter(tmp_path):
    other = tmp_path / "other-python"
    other.write_text("#!/bin/sh\necho \"other python: $*\"\n")
    other.chmod(0o755)
    path = write_job(tmp_path, "command: python train.py --epochs 1\n")
    run = amldist(tmp_path, "submit", str(path), "--local", "--name", "other", "--python", str(other))
    assert run.returncode == 0, run.stderr
    assert only_log(tmp_path, "other").strip() == "other python: train.py --epochs 1"


def test_a_past_runs_job_yml_runs_again(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.txt").write_text("42\n")
    path = write_job(tmp_path, """
        command: cat ${{inputs.data}}/rows.txt && cat worker.py > /dev/null
        inputs:
          data: {type: uri_folder, path: data}
        """)
    first = amldist(tmp_path, "submit", str(path), "--local", "--name", "first")
    assert first.returncode == 0, first.stderr
    again = amldist(tmp_path, "submit", ".amldist/runs/first/job.yml", "--local", "--name", "again")
    assert again.returncode == 0, again.stderr
    assert only_log(tmp_path, "again") == "42\n"


def test_run_folders_stay_out_of_git(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    path = write_job(tmp_path, "command: echo hi\n")
    assert amldist(tmp_path, "submit", str(path), "--local").returncode == 0
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert ".amldist" not in status
    assert "job.yml" in status  # git does see the rest of the folder


def readme_commands(heading: str, starts=("amldist ",)) -> list[str]:
    """The commands of the first ```bash block under a README heading, comments cut off."""
    text = (ROOT / "README.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.startswith(starts)]


# README commands that train what another default test already trains (the long tier runs them as written too)
AGAIN = {
    "amldist submit samples/pytorch_ddp/job.yml --local":
        "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes (the same sample, "
        "the same 2 x 2) and, here, the same command with --set/--input/--stream",
    "amldist submit samples/pipeline/pipeline.yml --local":
        "the same pipeline with --set jobs.train.resources.instance_count=1 --input steps=80, here",
    "amldist submit samples/pipeline/pipeline.yml --dry-run":
        "tests/test_readme_commands.py::test_a_readme_command_runs_as_written[amldist submit samples/pipeline/"
        "pipeline.yml --dry-run] (the same command, from a copy of the repository)",
    "python samples/pipeline/pipeline.py":
        "its --dry-run (tests/e2e/test_submit_cli.py) and run_local of a @dsl.pipeline "
        "(tests/backends/local/test_pipeline_jobs.py::test_run_local_takes_a_job_yaml_a_builder_job_and_a_pipeline)",
}


def tiered(commands: list[str]) -> list:
    return [pytest.param(c, marks=pytest.mark.long(covered_by=AGAIN[c])) if c in AGAIN else c for c in commands]


def readme_local_commands() -> list:
    return tiered(readme_commands("## Submitting: running a job locally"))


@pytest.mark.parametrize("command", tiered(readme_commands("## Pipelines", ("amldist ", "python "))))
def test_the_readmes_pipeline_examples_run_as_written(tmp_path, command):
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    argv = shlex.split(command)
    if argv[0] == "python":
        run = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    else:
        run = amldist(tmp_path, *argv[1:], timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]


@pytest.mark.parametrize("command", readme_local_commands())
def test_the_readmes_local_examples_run_as_written(tmp_path, command):
    (tmp_path / "samples").symlink_to(ROOT / "samples")  # the README's paths, from the repository root
    run = amldist(tmp_path, *shlex.split(command)[1:], timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    if "--dry-run" not in command:
        assert "status: Completed after" in run.stdout  # the one duration of the run
        assert "Failed to initialize NumPy" not in run.stdout  # torch's warning when numpy is missing
