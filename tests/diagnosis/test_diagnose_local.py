"""``amldist job diagnose`` on real local runs: 2 nodes x 2 processes with gloo, each failing one way.

Every test starts four real processes (a real gloo group formed by amldist.runtime) through the
local backend, then reads the run folder through the CLI. They are CPU-heavy: short on purpose.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from amldist.backends.submit import run_local
from tests.conftest import skip_module_without

skip_module_without("torch", reason="the ranks form a gloo group")

# Each rank joins the group, does three all-reduces, then rank TARGET misbehaves as MODE says while
# the others wait in the next all-reduce.
TRAIN = textwrap.dedent('''\
    import os, signal, socket, sys, time
    import torch
    import torch.distributed as dist
    from amldist.runtime import destroy, init_distributed

    mode, target, rank = os.environ["MODE"], int(os.environ["TARGET"]), int(os.environ["RANK"])
    if mode == "port" and rank == target:
        taken = socket.socket()
        taken.bind((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))  # as a stray server would
        taken.listen()
    init_distributed(timeout=int(os.environ.get("PG_TIMEOUT", "30")))
    t = torch.ones(4)
    for _ in range(3):
        dist.all_reduce(t)
    print(f"rank {rank}: 3 steps done", flush=True)


    def misbehave():
        if mode == "raise":
            raise ValueError("bad batch on purpose")
        if mode == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "sigbus":
            os.kill(os.getpid(), signal.SIGBUS)
        if mode == "leave":
            os._exit(0)  # leaves without a word while the others wait
        if mode == "hang":
            time.sleep(600)  # stuck outside any collective
        if mode == "late":
            time.sleep(60)  # the others' collective times out first


    if rank == target:
        time.sleep(0.5)
        misbehave()
    dist.all_reduce(t)
    destroy()
''')


def write_job(folder: Path, mode: str, *, target: int = 3, extra_env: str = "", timeout: int = 120) -> Path:
    (folder / "src").mkdir(parents=True, exist_ok=True)
    (folder / "src" / "train.py").write_text(TRAIN)
    path = folder / f"{mode}.yml"
    path.write_text(textwrap.dedent(f"""\
        type: command
        code: src
        command: python train.py
        environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
        environment_variables:
          MODE: {mode}
          TARGET: "{target}"
        {extra_env}
        distribution:
          type: pytorch
          process_count_per_instance: 2
        resources:
          instance_count: 2
        limits:
          timeout: {timeout}
        """))
    return path


def run_and_diagnose(cli, capsys, tmp_path, mode, **kw):
    root = tmp_path / "runs"
    started = time.monotonic()
    record = run_local(str(write_job(tmp_path, mode, **kw)), name=mode, run_root=str(root), grace_seconds=1.0,
                       status_line=False)
    elapsed = time.monotonic() - started
    assert record.status == "Failed"
    capsys.readouterr()  # what the run printed
    code, out, err = cli("job", "diagnose", mode, "--run-root", str(root), "--format", "json")
    data = json.loads(out)
    return code, data["first_failure"], data, elapsed


def test_a_rank_raising_on_rank_3_of_4_is_named_with_its_exception_and_frame(cli, capsys, tmp_path):
    code, first, data, _ = run_and_diagnose(cli, capsys, tmp_path, "raise")
    assert code == 0
    assert (first["rank"], first["node"], first["exit_code"]) == (3, 1, 1)
    assert first["signature"] == "python-exception"
    assert first["line"] == "ValueError: bad batch on purpose"
    assert "train.py" in first["frame"] and "in misbehave" in first["frame"]
    assert first["log"].endswith("std_log_process_03.txt")
    # the others failed later, because of it
    others = [r for r in data["ranks"] if r["rank"] != 3 and r["exit_code"] not in (0, None)]
    assert others  # an empty list would pass the check below without testing anything
    assert all(r["ended"] >= first["ended"] for r in others)


def test_a_rank_killed_by_sigkill_is_named_with_the_oom_hint(cli, capsys, tmp_path):
    code, first, _, _ = run_and_diagnose(cli, capsys, tmp_path, "sigkill", target=1)
    assert code == 0
    assert (first["rank"], first["node"], first["exit_code"]) == (1, 0, -9)
    assert first["signature"] == "oom-killed" and first["field"] == "resources.instance_type"
    assert "OOM killer" in first["hint"]


def test_a_bus_error_points_at_shm_size(cli, capsys, tmp_path):
    code, first, _, _ = run_and_diagnose(cli, capsys, tmp_path, "sigbus", target=2)
    assert code == 0
    assert (first["rank"], first["node"], first["exit_code"]) == (2, 1, -7)
    assert first["signature"] == "bus-error" and first["field"] == "resources.shm_size"


def test_a_rank_leaving_while_the_others_wait_in_a_collective(cli, capsys, tmp_path):
    code, first, data, _ = run_and_diagnose(cli, capsys, tmp_path, "leave", target=2)
    assert code == 0
    assert (first["rank"], first["exit_code"], first["signature"]) == (2, 0, "left-early")
    assert "still waited for it" in first["line"]
    waited = [r for r in data["ranks"] if r["rank"] != 2]
    assert all(r["exit_code"] not in (0, None) for r in waited)


def test_a_collective_timeout_names_the_rank_that_never_joined(cli, capsys, tmp_path):
    code, first, data, _ = run_and_diagnose(cli, capsys, tmp_path, "late", target=1,
                                            extra_env='  PG_TIMEOUT: "8"')
    assert code == 0
    assert (first["rank"], first["node"], first["signature"], first["ranks"]) == (1, 0, "never-joined", [1])
    assert "ranks 0, 2, 3 timed out in a collective; rank(s) 1 never joined it" == first["line"]


def test_a_port_conflict_names_rank_0_and_master_port(cli, capsys, tmp_path):
    code, first, _, _ = run_and_diagnose(cli, capsys, tmp_path, "port", target=0)
    assert code == 0
    assert (first["rank"], first["node"], first["signature"]) == (0, 0, "address-in-use")
    assert first["field"] == "environment_variables.MASTER_PORT"


def test_submit_ends_a_failed_local_run_with_its_diagnosis(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_job(tmp_path, "raise")
    code, out, err = cli("submit", "raise.yml", "--local", "--name", "r1")
    assert code == 1
    tail = err[err.index("--- diagnosis"):]
    assert "first failure: rank 3 on node 1" in tail
    assert "cause: python-exception: ValueError: bad batch on purpose" in tail
    assert "[spec: command]" in tail


def test_a_pipeline_names_its_failed_step_then_the_rank_inside_it(cli, capsys, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    (tmp_path / "pipe.yml").write_text(textwrap.dedent("""\
        type: pipeline
        jobs:
          prep:
            type: command
            code: ./src
            command: echo prepared
            environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
          train:
            type: command
            code: ./src
            command: python train.py
            environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
            environment_variables:
              MODE: sigbus
              TARGET: "1"
            distribution:
              type: pytorch
              process_count_per_instance: 2
            resources:
              instance_count: 1
        """))
    root = tmp_path / "runs"
    record = run_local(str(tmp_path / "pipe.yml"), name="pipe", run_root=str(root), grace_seconds=1.0,
                       status_line=False)
    assert record.status == "Failed"
    capsys.readouterr()
    code, out, err = cli("job", "diagnose", "pipe", "--run-root", str(root))
    assert code == 0, err
    assert out.startswith("job pipe, step train: Failed")
    assert "first failure: rank 1 on node 0, exit code -7 (SIGBUS)" in out
    assert "[spec: resources.shm_size]" in out


def test_usage_mistakes_exit_2(cli, tmp_path):
    assert cli("job", "diagnose", "--run-root", str(tmp_path))[0] == 2
    code, out, err = cli("job", "diagnose", "nope", "--run-root", str(tmp_path))
    assert code == 2 and "no local run named 'nope'" in err
