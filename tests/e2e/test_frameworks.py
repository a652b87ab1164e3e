"""Lightning and Hugging Face Accelerate under amldist: the samples run 2 nodes x 2 processes through
``amldist submit --local`` (real processes, gloo on the CPU) and each framework forms the launcher's world."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# every (rank, node_rank, local_rank) of a 2 x 2 world, as Azure ML's pytorch distribution lays it out
TWO_BY_TWO = {(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)}


def run_sample(tmp_path, sample: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``amldist submit samples/<sample>/job.yml --local`` from ``tmp_path``; the worlds the ranks printed."""
    job = ROOT / "samples" / sample / "job.yml"
    done = subprocess.run([sys.executable, "-m", "amldist", "submit", str(job), "--local", "--name", sample,
                           "--format", "json"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    worlds = []
    for log in sorted((tmp_path / ".amldist" / "runs" / sample / "user_logs").glob("std_log_process_*.txt")):
        worlds += [json.loads(line.split(" world ", 1)[1]) for line in log.read_text().splitlines()
                   if line.startswith(f"{sample} world ")]
    return done, worlds


def test_lightning_forms_the_launchers_world(tmp_path):
    pytest.importorskip("lightning", reason="pip install lightning (the [dev] extra has it)")
    done, worlds = run_sample(tmp_path, "lightning")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["status"] == "Completed"
    assert {(w["rank"], w["node_rank"], w["local_rank"]) for w in worlds} == TWO_BY_TWO
    assert {w["world_size"] for w in worlds} == {4}
    assert (tmp_path / ".amldist" / "runs" / "lightning" / "outputs" / "model" / "model.pt").is_file()


def test_accelerate_uses_the_group_the_runtime_formed(tmp_path):
    pytest.importorskip("accelerate", reason="pip install accelerate (the [dev] extra has it)")
    done, worlds = run_sample(tmp_path, "accelerate")
    assert done.returncode == 0, done.stderr[-3000:]
    assert {(w["rank"], w["local_rank"]) for w in worlds} == {(r, lr) for r, _, lr in TWO_BY_TWO}
    assert {(w["world_size"], w["distributed_type"]) for w in worlds} == {(4, "DistributedType.MULTI_CPU")}
    assert (tmp_path / ".amldist" / "runs" / "accelerate" / "outputs" / "model" / "model.pt").is_file()
