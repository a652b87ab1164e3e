"""Hostile ``status.json`` files (issue 17 point 3, through the real CLI): one line each within seconds, the
other runs still listed, and never a signal to a process outside the run."""

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
command: echo hi
environment: azureml:env:1
code: .
"""
SHAPES = [[], "text", {"status": 3, "ranks": "x"}, {"status": "Running", "pid": "1", "ranks": [1, None]},
          {"status": "Completed", "outputs": [], "ranks": [{"log": 5}]}, {"name": {"a": 1}}, None, 1e400]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "job.yml").write_text(JOB)
    amldist("submit", "job.yml", "--local", "--name", "good", cwd=tmp_path, timeout=60).assert_clean(codes=(0,))
    return tmp_path


def _bad_run(project, name):
    folder = project / ".amldist" / "runs" / name
    folder.mkdir()
    return folder / "status.json"


def _verbs(project, name):
    for args in (("job", "list", "--local"), ("job", "show", name, "--local"), ("job", "logs", name, "--local"),
                 ("job", "cancel", name, "--local"), ("job", "download", name, "--local", "-o", "dl")):
        result = amldist(*args, cwd=project, timeout=20)
        result.assert_clean()
        assert result.seconds < 15, args
        if args[1] == "list":
            assert "good" in result.out
        else:
            assert len([line for line in result.err.splitlines() if line.startswith("error:")]) <= 1


def test_a_fifo_status_file_hangs_no_verb(project):
    os.mkfifo(_bad_run(project, "fifo"))
    _verbs(project, "fifo")


def test_a_status_file_linked_to_dev_zero_exhausts_nothing(project):
    os.symlink("/dev/zero", _bad_run(project, "zero"))
    _verbs(project, "zero")


@pytest.mark.parametrize("shape", SHAPES, ids=range(len(SHAPES)))
def test_wrong_shapes_are_one_line(project, shape):
    path = _bad_run(project, "shaped")
    path.write_text(json.dumps(shape) if shape != 1e400 else "1e400")
    _verbs(project, "shaped")


def test_cancel_never_signals_a_pid_the_file_names_by_itself(project):
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = json.loads((project / ".amldist" / "runs" / "good" / "status.json").read_text())
        state.update(status="Running", pid=bystander.pid, pid_start_time=None)
        (_bad_run(project, "forged")).write_text(json.dumps(state))
        amldist("job", "cancel", "forged", "--local", cwd=project, timeout=20).assert_clean()
        time.sleep(0.3)
        assert bystander.poll() is None  # still alive: not ours to stop
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()
