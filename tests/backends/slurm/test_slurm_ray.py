"""``distribution: type: ray`` through ``--slurm`` on the real two-node Slurm cluster: a Ray head on the first
node, a worker on the second, the sample's command once on the head, every Ray process gone with the job."""

from __future__ import annotations

import time

import pytest

from tests.backends.local.helpers import SAMPLES
from tests.backends.slurm.test_slurm_cluster import queue_empty, wait_ended
from tests.conftest import skip_module_without
from tests.e2e.test_local_ray import processes_with

skip_module_without("ray", reason="Ray is the user's dependency: pip install 'ray[default]' to run this test")


def test_the_ray_sample_forms_a_cluster_across_the_two_slurm_nodes_and_leaves_no_process(on_cluster, cli, tmp_path):
    code, _out, err = cli("submit", str(SAMPLES / "ray" / "job.yml"), "--slurm", "-n", "rayjob")
    assert code == 0, err
    record = wait_ended("rayjob")
    run = tmp_path / ".amldist" / "slurm" / "rayjob"
    logs = {p.name: p.read_text() for p in (run / "user_logs").iterdir()}
    assert record.status == "Completed", (record, logs)
    assert sorted(logs) == ["std_log_node_00.txt", "std_log_node_01.txt"]  # one per node, as locally
    head, worker = logs["std_log_node_00.txt"], logs["std_log_node_01.txt"]
    assert "ray cluster: 2 node(s)" in head and "sum of squares: 140" in head
    assert head.count("sum of squares") == 1 and "sum of squares" not in worker  # the command once, on the head
    address = next(line.split("at ")[-1] for line in head.splitlines() if "amldist: Ray cluster of" in line)
    deadline = time.monotonic() + 30
    while (left := processes_with(f"AMLDIST_RAY_HEAD={address}")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == []  # raylets, GCS, Ray workers on both nodes: all stopped with the job
    assert queue_empty()
