"""A local run folder the job turned hostile (issue 23), through the real CLI under a memory cap: each case is
one line or a correct answer within seconds, nothing read or written outside the run folder or ``-o DIR``.

The Slurm backend reads its run folders with the same engine; its cases run on the real test cluster in
``tests/backends/slurm/test_slurm_hostile.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.attack.limits import amldist

JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
type: command
command: echo hello from the job; mkdir -p ${{outputs.model}}; echo weights > ${{outputs.model}}/w.txt
environment: azureml:env:1
code: .
outputs: {model: {type: uri_folder}}
"""


@pytest.fixture
def project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "job.yml").write_text(JOB)
    amldist("submit", "job.yml", "--local", "--name", "done", cwd=project, timeout=60).assert_clean(codes=(0,))
    (tmp_path / "precious.txt").write_text("keep me\n")
    return project


def run_dir(project, name="done"):
    return project / ".amldist" / "runs" / name


def quick(project, *args, codes=(0, 1, 2)):
    result = amldist(*args, cwd=project, timeout=30)
    result.assert_clean(codes=codes)
    assert result.seconds < 20, args
    assert len([line for line in result.err.splitlines() if line.startswith("error:")]) <= 1, result.err
    return result


def test_a_log_that_is_a_fifo_or_a_link_to_dev_zero_or_elsewhere_is_not_read(project):
    logs = run_dir(project) / "user_logs"
    (log,) = logs.iterdir()
    log.unlink()
    os.symlink("/dev/zero", log)
    assert quick(project, "job", "logs", "done", "--local").out == ""
    log.unlink()
    os.mkfifo(log)
    assert quick(project, "job", "logs", "done", "--local").out == ""
    log.unlink()
    os.symlink(project.parent / "precious.txt", log)
    assert "keep me" not in quick(project, "job", "logs", "done", "--local").out
    log.unlink()
    os.rename(logs, run_dir(project) / "logs_moved")
    outside = project.parent / "elsewhere"
    outside.mkdir()
    (outside / log.name).write_text("a secret of another folder\n")
    os.symlink(outside, logs)  # user_logs itself led out of the run folder
    assert "secret" not in quick(project, "job", "logs", "done", "--local").out


def test_download_copies_links_as_links_skips_fifos_and_never_leaves_the_destination(project):
    model = run_dir(project) / "outputs" / "model"
    os.symlink("loop", model / "loop")  # a link to itself
    os.symlink(".", model / "here")  # a link to its own folder
    os.symlink("/", model / "root")
    os.mkfifo(model / "pipe")
    os.symlink("/dev/zero", model / "zero")
    quick(project, "job", "download", "done", "--local", "--all", "-o", "got", codes=(0,))
    got = project / "got" / "named-outputs" / "model"
    assert (got / "w.txt").read_text() == "weights\n"
    assert {p.name for p in got.iterdir()} == {"w.txt", "loop", "here", "root", "zero"}  # the FIFO is skipped
    assert all((got / n).is_symlink() for n in ("loop", "here", "root", "zero"))
    assert os.readlink(got / "root") == "/"


def test_an_output_folder_the_job_replaced_by_a_link_out_of_the_run_is_not_read(project):
    outputs = run_dir(project) / "outputs"
    outside = project.parent / "elsewhere"
    (outside / "model").mkdir(parents=True)
    (outside / "model" / "secret.txt").write_text("not the run's\n")
    os.rename(outputs, run_dir(project) / "outputs_moved")
    os.symlink(outside, outputs)
    quick(project, "job", "download", "done", "--local", "--all", "-o", "got")
    assert not any(p.name == "secret.txt" for p in (project / "got").rglob("*"))


def test_status_json_naming_outputs_outside_the_run_folder_is_one_line(project):
    state_path = run_dir(project) / "status.json"
    state = json.loads(state_path.read_text())
    state["outputs"]["model"]["path"] = str(project.parent)
    state_path.write_text(json.dumps(state))
    result = quick(project, "job", "download", "done", "--local", "--all", "-o", "got", codes=(1,))
    assert "outside the run folder" in result.err
    assert not (project / "got").exists()


def test_cancel_never_truncates_what_a_planted_cancel_requested_link_points_to(project):
    (project / "slow.yml").write_text(JOB.replace("command: echo hello from the job;", "command: sleep 60;"))
    env = {k: v for k, v in os.environ.items() if k != "AMLDIST_DEBUG"}
    runner = subprocess.Popen([sys.executable, "-m", "amldist", "submit", "slow.yml", "--local", "--name", "slow"],
                              cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while '"Running"' not in _text(run_dir(project, "slow") / "status.json"):
            assert time.monotonic() < deadline and runner.poll() is None, "the run never started"
            time.sleep(0.2)
        os.symlink(project.parent / "precious.txt", run_dir(project, "slow") / "cancel_requested")
        result = quick(project, "job", "cancel", "slow", "--local", codes=(0,))
        assert "Canceled" in result.out
        assert runner.wait(timeout=30) != 0
    finally:
        if runner.poll() is None:
            runner.send_signal(signal.SIGKILL)
            runner.wait()
    assert (project.parent / "precious.txt").read_text() == "keep me\n"


def _text(path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
