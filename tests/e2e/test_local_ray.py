"""``distribution: type: ray`` run for real: a 2-node Ray cluster on this machine, the sample's command once on
the head, every Ray process gone at the end."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.backends.local.helpers import SAMPLES
from tests.conftest import skip_module_without

skip_module_without("ray", reason="Ray is the user's dependency: pip install 'ray[default]' to run this test")


def processes_with(variable: str) -> list[int]:
    """Pids of the processes whose environment holds ``variable`` (a NAME=value pair, exactly)."""
    found = []
    needle = variable.encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile, or not ours to read
    return found


def test_the_ray_sample_forms_a_two_node_cluster_and_leaves_no_process(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _out, err = cli("submit", str(SAMPLES / "ray" / "job.yml"), "--local")
    (run,) = sorted((tmp_path / ".amldist" / "runs").iterdir())
    head_log = (run / "user_logs" / "std_log_node_00.txt").read_text()
    assert code == 0, err + head_log + (run / "user_logs" / "std_log_node_01.txt").read_text()
    assert "ray cluster: 2 node(s)" in head_log and "sum of squares: 140" in head_log
    assert head_log.count("sum of squares") == 1  # the command ran once, on the head
    worker_log = (run / "user_logs" / "std_log_node_01.txt").read_text()
    assert "sum of squares" not in worker_log
    address = next(line.split("at ")[-1] for line in head_log.splitlines() if "amldist: Ray cluster of" in line)
    deadline = time.monotonic() + 10
    while (left := processes_with(f"AMLDIST_RAY_HEAD={address}")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []  # raylets, GCS, Ray workers: all stopped with the job
