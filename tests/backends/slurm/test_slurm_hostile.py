"""A hostile Slurm run folder, hostile values and interrupted submissions (issue 23), on the real two-node
test cluster, through the real CLI under a memory cap: one line or a correct answer within seconds, no read
or write outside the run folder or ``-o DIR``, no other job canceled.

The cases share few cluster jobs (the cluster is slow to schedule on a shared machine): one finished run whose
folder is copied and made hostile, one running run, a bystander job that must survive, and two pipelines
stopped while they were being submitted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.attack.limits import amldist

JOB_TIMEOUT = 300
HEADER = ("$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ntype: command\n"
          "environment: azureml:AzureML-sklearn-1.5@latest\n")


@pytest.fixture
def project(on_cluster, tmp_path):
    """A project whose path holds '#', '%' and a space: none of them may move Slurm's output file."""
    folder = tmp_path / "my proj#1%j"
    folder.mkdir()
    return folder


def run(project, *args, codes=(0, 1, 2), timeout=60):
    result = amldist(*args, cwd=project, timeout=timeout)
    result.assert_clean(codes=codes)
    assert len([line for line in result.err.splitlines() if line.startswith("error:")]) <= 1, result.err
    return result


def wait_ended(project, name, timeout=JOB_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        shown = run(project, "job", "show", name, "--slurm", "--format", "json")
        record = json.loads(shown.out)
        if record["status"] in ("Completed", "Failed", "Canceled"):
            return record
        assert time.monotonic() < deadline, f"{name} still {record['status']}"
        time.sleep(1)


def in_queue(job_id: str) -> bool:
    done = subprocess.run(["squeue", "-h", f"--jobs={job_id}", "-o", "%t"], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() not in ("", "CG", "CA")


def scontrol(job_id: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", job_id, "-o"], capture_output=True, text=True).stdout
    return dict(word.split("=", 1) for word in out.split() if "=" in word)


@pytest.fixture
def bystander(on_cluster):
    """A job of the same user that amldist must never cancel."""
    job_id = subprocess.run(["sbatch", "--parsable", "--job-name=bystander", "--output=/dev/null",
                             "--wrap", "sleep 600"], capture_output=True, text=True, check=True).stdout.strip()
    yield job_id
    subprocess.run(["scancel", job_id], capture_output=True)


def test_values_and_paths_never_change_the_jobs_options_or_where_its_output_goes(project, bystander):
    (project / "job.yml").write_text(HEADER + textwrap.dedent("""\
        command: echo "time=$SBATCH_TIMELIMIT name=$SBATCH_JOB_NAME"; echo done > ${{outputs.out}}/f.txt
        environment_variables: {SBATCH_TIMELIMIT: "1", SBATCH_JOB_NAME: hijacked, SBATCH_PARTITION: nosuch}
        outputs: {out: {type: uri_folder}}
        """))
    result = run(project, "submit", "job.yml", "--slurm", "-n", "vals", "--time", "0:07:00", codes=(0,))
    record = wait_ended(project, "vals")
    assert record["status"] == "Completed", (record, result.err)
    folder = project / ".amldist" / "slurm" / "vals"
    info = scontrol(record["slurm_job_id"])
    assert (info["JobName"], info["TimeLimit"], info["Partition"]) == ("vals", "00:07:00", "debug")
    assert "time=1 name=hijacked" in (folder / "user_logs" / "std_log.txt").read_text()  # the spec's, in the task
    assert (folder / "slurm_job.txt").is_file()  # Slurm's own output, where the run folder says
    assert sorted(p.name for p in project.parent.iterdir()) == ["my proj#1%j"]  # nothing written beside it
    for bad in ("gpu\n#SBATCH --wrap=x", "a b", "x%j", "it's", "back\\slash"):
        refused = run(project, "submit", "job.yml", "--slurm", "-n", "bad", "--partition", bad, codes=(2,))
        assert refused.err.startswith("error: --partition") and len(refused.err.strip().splitlines()) <= 2
    assert not (project / ".amldist" / "slurm" / "bad").exists()
    assert in_queue(bystander)


def hostile_copy(project, name: str, edit) -> Path:
    """A copy of the finished run ``vals`` named ``name``, its slurm.json edited by ``edit(meta)``."""
    source = project / ".amldist" / "slurm" / "vals"
    target = project / ".amldist" / "slurm" / name
    shutil.copytree(source, target, symlinks=True)
    meta = json.loads((target / "slurm.json").read_text())
    meta["name"] = name
    edit(meta)
    (target / "slurm.json").write_text(json.dumps(meta))
    return target


def test_a_hostile_run_folder_is_one_line_or_a_correct_answer(project, bystander, tmp_path):
    test_values_and_paths_never_change_the_jobs_options_or_where_its_output_goes(project, bystander)
    (tmp_path / "precious.txt").write_text("keep me\n")
    stolen = hostile_copy(project, "stolen", lambda m: m.update(job_id=bystander))
    (stolen / "state" / "exit_code").unlink()  # its status comes from Slurm: the bystander's, were the id trusted
    hostile_copy(project, "flag", lambda m: m.update(job_id="--user=root"))
    hostile_copy(project, "escape", lambda m: m.update(outputs={"out": [str(tmp_path), "uri_folder"]}))
    hostile_copy(project, "dots", lambda m: m.update(outputs={"../../x": [str(project), "uri_folder"]}))
    hostile_copy(project, "logname", lambda m: m.update(tasks=[["rank 0", "../../../precious.txt", 0]]))
    fifo = hostile_copy(project, "fifo", lambda m: None)
    (fifo / "slurm.json").unlink()
    os.mkfifo(fifo / "slurm.json")
    odd = hostile_copy(project, "odd", lambda m: None)  # state files and logs made hostile
    for name in ("exit_code", "started", "ended"):
        (odd / "state" / name).unlink()
    os.mkfifo(odd / "state" / "exit_code")
    os.symlink("/dev/zero", odd / "state" / "started")
    (odd / "user_logs" / "std_log.txt").unlink()
    os.symlink("/dev/zero", odd / "user_logs" / "std_log.txt")
    out = odd / "outputs" / "out"
    os.symlink("loop", out / "loop")
    os.symlink("/", out / "root")
    os.mkfifo(out / "pipe")
    os.symlink(tmp_path / "precious.txt", odd / "state" / "cancel_requested")

    listed = run(project, "job", "list", "--slurm")
    assert {line.split()[0] for line in listed.out.splitlines()[1:]} == {"vals", "odd", "stolen"}, listed.out
    warned = [line for line in listed.err.splitlines() if line.startswith("warning:")]
    assert len(warned) == 5 and all("slurm.json" in w for w in warned), listed.err  # flag escape dots logname fifo
    for name in ("flag", "escape", "dots", "logname", "fifo"):
        for verb in (("job", "show", name), ("job", "show", name, "--slurm"), ("job", "logs", name, "--slurm"),
                     ("job", "cancel", name, "--slurm"), ("job", "download", name, "--slurm", "-o", "dl")):
            shown = run(project, *verb, codes=(1, 2))
            assert shown.seconds < 20 and "slurm.json" in shown.err, (verb, shown.err)
    canceled = run(project, "job", "cancel", "stolen", "--slurm")  # the bystander's id, not this run's job
    assert in_queue(bystander), canceled.err
    assert json.loads(run(project, "job", "show", "stolen", "--slurm", "--format", "json").out)["status"] == "Failed"

    assert run(project, "job", "logs", "odd", "--slurm").out == ""
    shown = json.loads(run(project, "job", "show", "odd", "--slurm", "--format", "json").out)
    assert shown["start_time"] is None
    run(project, "job", "download", "odd", "--slurm", "--all", "-o", "got", codes=(0,))
    got = project / "got" / "named-outputs" / "out"
    assert (got / "f.txt").read_text() == "done\n" and not (got / "pipe").exists()
    assert (got / "loop").is_symlink() and os.readlink(got / "root") == "/"
    assert not any(p.name == "precious.txt" for p in (project / "got").rglob("*"))
    assert (tmp_path / "precious.txt").read_text() == "keep me\n"
    assert in_queue(bystander)


def test_cancel_stops_only_the_runs_own_job_and_writes_through_no_link(project, bystander, tmp_path):
    (tmp_path / "precious.txt").write_text("keep me\n")
    (project / "job.yml").write_text(HEADER + "command: sleep 300\n")
    run(project, "submit", "job.yml", "--slurm", "-n", "slow", codes=(0,))
    folder = project / ".amldist" / "slurm" / "slow"
    os.symlink(tmp_path / "precious.txt", folder / "state" / "cancel_requested")
    canceled = run(project, "job", "cancel", "slow", "--slurm", codes=(0,), timeout=180)
    assert "Canceled" in canceled.out
    assert (tmp_path / "precious.txt").read_text() == "keep me\n"
    assert in_queue(bystander)


PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
jobs:
  first:
    type: command
    command: sleep 300
    environment: azureml:AzureML-sklearn-1.5@latest
    outputs: {data: {type: uri_folder}}
  second:
    type: command
    command: ls ${{inputs.data}}
    environment: azureml:AzureML-sklearn-1.5@latest
    inputs: {data: "${{parent.jobs.first.outputs.data}}"}
  third:
    type: command
    command: echo third
    environment: azureml:AzureML-sklearn-1.5@latest
"""


def slow_sbatch(folder: Path) -> dict:
    """An environment whose ``sbatch`` takes 3 s before it calls Slurm's: a submission long enough to stop."""
    folder.mkdir()
    real = shutil.which("sbatch")
    (folder / "sbatch").write_text(f"#!/bin/sh\nsleep 3\nexec {real} \"$@\"\n")
    (folder / "sbatch").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def wait_gone(program: str, timeout: float = 60) -> None:
    """Until no process runs ``program`` (read from /proc: the test's own fake sbatch)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                running += [pid] if program.encode() in Path(f"/proc/{pid}/cmdline").read_bytes() else []
            except OSError:
                continue
        if not running:
            return
        time.sleep(0.2)
    raise AssertionError(f"{program} still runs after {timeout} s")


def first_step_queued(folder: Path, runner: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            steps = json.loads((folder / "slurm.json").read_text())["steps"]
            if steps[0]["job_id"]:
                return
        except (OSError, ValueError, KeyError):
            pass
        assert runner.poll() is None and time.monotonic() < deadline, "the first step was never queued"
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_pipeline_stopped_while_submitting_leaves_no_job_that_no_verb_can_see(project, bystander, tmp_path,
                                                                               signum):
    (project / "pipeline.yml").write_text(PIPELINE)
    env = slow_sbatch(tmp_path / "bin")
    runner = subprocess.Popen([sys.executable, "-m", "amldist", "submit", "pipeline.yml", "--slurm", "-n", "cut"],
                              cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    folder = project / ".amldist" / "slurm" / "cut"
    first_step_queued(folder, runner)
    runner.send_signal(signum)
    err = runner.communicate(timeout=120)[1]
    assert "Traceback" not in err, err
    listed = run(project, "job", "list", "--slurm")
    assert "cut" in listed.out, listed.err
    if signum == signal.SIGKILL:  # nothing could cancel on the way out: job cancel reaches what was queued
        wait_gone(str(tmp_path / "bin" / "sbatch"))  # the sbatch it had started may still queue its step
        run(project, "job", "cancel", "cut", "--slurm", codes=(0,), timeout=180)
    record = wait_ended(project, "cut", timeout=120)
    assert record["status"] == "Canceled", record
    ids = [i for i in record["slurm_job_ids"].values() if i]
    assert ids and not any(in_queue(i) for i in ids)
    mine = subprocess.run(["squeue", "-h", "--me", "-o", "%i %k"], capture_output=True, text=True).stdout
    assert [line.split()[0] for line in mine.splitlines() if "amldist-run-" in line] == []
    assert in_queue(bystander)
