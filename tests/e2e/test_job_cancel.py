"""``amldist job`` from another terminal against a real ``amldist submit --local`` in a subprocess:
show while it runs, cancel stops every process (mpirun's ranks and grandchildren included) and
records ``Canceled``; ``submit --format json`` is one parseable object."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.backends.local.helpers import (ROOT, amldist_cmd, recorded_pids, stop_amldist, survivors,
                                          wait_for_pid_files, worker_job)

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def amldist(tmp_path, *args, timeout=60):
    return subprocess.run(amldist_cmd(*args), cwd=tmp_path, capture_output=True, text=True, env=ENV,
                          timeout=timeout)


@pytest.mark.parametrize("dist", ["pytorch", "mpi"])
def test_cancel_from_another_terminal_leaves_no_process(tmp_path, dist):
    path = worker_job(tmp_path, mode="hang", dist=dist, per_node=2)
    proc = subprocess.Popen(amldist_cmd("submit", str(path), "--local", "--name", "long"), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        wait_for_pid_files(tmp_path / "pids", 2)
        shown = amldist(tmp_path, "job", "show", "long", "--format", "json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["status"] == "Running"
        assert json.loads(shown.stdout)["pid"] == proc.pid
        canceled = amldist(tmp_path, "job", "cancel", "-n", "long")
        out, err = proc.communicate(timeout=30)
    except BaseException:
        stop_amldist(proc, tmp_path / "pids")
        raise
    assert canceled.returncode == 0, canceled.stderr
    assert canceled.stdout.strip() == "job long: Canceled", (canceled.stderr, proc.returncode, err[-2000:])
    assert survivors(recorded_pids(tmp_path / "pids")) == []
    assert proc.returncode == 143, err  # the supervisor's own shutdown path
    assert "job long was canceled (amldist job cancel)" in err and "stopped by SIGTERM" not in err
    shown = json.loads(amldist(tmp_path, "job", "show", "long", "--format", "json").stdout)
    assert shown["status"] == "Canceled" and shown["stopped_by"] == "amldist job cancel"
    listed = amldist(tmp_path, "job", "list")
    assert listed.returncode == 0 and "long" in listed.stdout and "Canceled" in listed.stdout
    again = amldist(tmp_path, "job", "cancel", "long")
    assert again.returncode == 0 and "already Canceled" in again.stderr


def test_submit_format_json_is_one_parseable_object(tmp_path):
    path = worker_job(tmp_path, mode="fail", per_node=2, fail_rank=0)
    done = amldist(tmp_path, "submit", str(path), "--local", "--name", "js", "--format", "json")
    survivors(recorded_pids(tmp_path / "pids"), timeout=0)
    assert done.returncode == 1
    data = json.loads(done.stdout)  # stdout holds the object alone; the run's lines went to stderr
    assert data["name"] == "js" and data["status"] == "Failed" and data["exit_code"] == 1
    assert data["ranks"][0]["exit_code"] == 3
    assert "job js: 2 process(es)" in done.stderr
