"""The fault drill and retries, for real: processes of a local run struck by --inject, the record and the
diagnosis naming the fault, and --retry resubmitting only what was not the code's fault."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from tests.backends.local.helpers import write_job

# Each rank: "count" counts busy-loop iterations for COUNT_SECONDS and records them; "sleep" sleeps SLEEP s,
# then exits 0; "raise" raises at once. RANK selects nothing: the same script for every rank.
SCRIPT = r'''
import json, os, sys, time
rank = os.environ.get("RANK", "0")
mode = os.environ["MODE"]
print(f"rank {rank} started", flush=True)
if mode == "count":
    end, n = time.monotonic() + float(os.environ["COUNT_SECONDS"]), 0
    while time.monotonic() < end:
        n += 1
    with open(os.path.join(os.environ["OUT_DIR"], f"{rank}.json"), "w") as fh:
        json.dump(n, fh)
elif mode == "raise":
    raise ValueError("a bug in the training code")
else:
    time.sleep(float(os.environ.get("SLEEP", "3")))
'''


def job(tmp_path: Path, mode: str, *, nodes: int = 2, per_node: int = 1, timeout: int = 120, **env) -> Path:
    path = write_job(tmp_path, f"""
        command: python drill.py
        environment_variables:
          MODE: {mode}
          OUT_DIR: {tmp_path}
        distribution: {{type: pytorch, process_count_per_instance: {per_node}}}
        resources: {{instance_count: {nodes}}}
        limits: {{timeout: {timeout}}}
        """)
    text = path.read_text()
    extra = "".join(f"  {k}: \"{v}\"\n" for k, v in env.items())
    path.write_text(text.replace("environment_variables:\n", "environment_variables:\n" + extra))
    (tmp_path / "src" / "drill.py").write_text(SCRIPT)
    return path


def status(run: Path) -> dict:
    return json.loads((run / "status.json").read_text())


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def runs(here: Path) -> list[Path]:
    return sorted((here / ".amldist" / "runs").iterdir())


@pytest.mark.parametrize("fault, signature, struck", [
    ("preempt:node=1,after=1,grace=1", "injected-preempt", ["rank 1"]),
    ("kill:rank=0,after=1", "injected-kill", ["rank 0"]),
])
def test_a_fault_ends_the_run_and_the_diagnosis_names_the_fault_not_the_script(cli, here, fault, signature, struck):
    code, _out, err = cli("submit", str(job(here, "sleep", SLEEP=60)), "--local", "--inject", fault)
    assert code == 1, err
    (run,) = runs(here)
    fired = status(run)["faults"]
    assert [f["text"].split(",")[0] for f in fired] == [fault.split(",")[0]] and fired[0]["processes"] == struck
    code, out, _ = cli("job", "diagnose", run.name, "--format", "json")
    found = json.loads(out)["first_failure"]
    assert found["signature"] == signature and found["label"] == struck[0], out


def test_a_hung_rank_stays_stopped_until_the_timeout_and_is_named(cli, here):
    code, _out, err = cli("submit", str(job(here, "sleep", SLEEP=60, timeout=6)), "--local", "--inject",
                          "hang:rank=1,after=1")
    assert code == 1
    (run,) = runs(here)
    assert "limits.timeout" in status(run)["error"]
    _, out, _ = cli("job", "diagnose", run.name, "--format", "json")
    assert json.loads(out)["first_failure"]["signature"] == "injected-hang"


def test_slow_gives_the_rank_a_fraction_of_the_time(cli, here):
    code, _out, err = cli("submit", str(job(here, "count", COUNT_SECONDS=4)), "--local", "--inject",
                          "slow:rank=1,factor=4")
    assert code == 0, err
    counts = {r: json.loads((here / f"{r}.json").read_text()) for r in (0, 1)}
    ratio = counts[0] / counts[1]
    assert 2.0 < ratio < 8.0, counts  # 4x fewer iterations in the same wall time, within the machine's noise


def test_retry_resubmits_a_preempted_run_and_links_the_attempts(cli, here):
    code, _out, err = cli("submit", str(job(here, "sleep", SLEEP=4)), "--local", "--inject",
                          "preempt:node=0,after=1,grace=1", "--retry", "1")
    assert code == 0, err
    first, second = runs(here)
    assert second.name == f"{first.name}-attempt2"
    assert status(first)["status"] == "Failed" and status(second)["status"] == "Completed"
    assert status(second)["attempt"] == {"number": 2, "of": first.name}
    assert status(second)["faults"] == []  # the drill strikes the first attempt only
    assert "retrying: the failure was diagnosed as injected-preempt" in err
    _, out, _ = cli("job", "show", first.name)
    assert f"{first.name}-attempt2" in out and "injected-preempt" in out


def test_a_failure_of_the_code_is_never_retried(cli, here):
    code, _out, err = cli("submit", str(job(here, "raise")), "--local", "--retry", "3")
    assert code == 1
    assert len(runs(here)) == 1
    assert "not retried: the failure was diagnosed as python-exception (user)" in err


def test_the_drill_and_retries_are_local_only_and_checked_before_anything_runs(cli, here):
    path = str(job(here, "sleep"))
    code, _out, err = cli("submit", path, "--inject", "kill:rank=0,after=1", "--dry-run")
    assert code == 2 and "--local" in err
    code, _out, err = cli("submit", path, "--local", "--inject", "kill:rank=7,after=1")
    assert code == 2 and "ranks 0 to 1" in err
    code, _out, err = cli("submit", path, "--local", "--retry-on", "hang")
    assert code == 2 and "without --retry" in err
    assert not (here / ".amldist").exists() or runs(here) == []


@pytest.mark.long(covered_by="test_retry_resubmits_a_preempted_run_and_links_the_attempts")
def test_a_ddp_run_preempted_half_way_resumes_from_its_checkpoint_and_sees_every_step_once(cli, here):
    """The issue's drill: 2 x 2 DDP, node 1 preempted about half-way, --retry 1, resumed from the last checkpoint."""
    from tests.backends.local.helpers import SAMPLES, drill_stops

    steps = 200  # 100 s of steps: a preemption at 60 s lands mid-run whether start-up takes 5 s or 40 s
    code, _out, err = cli("submit", str(SAMPLES / "drill" / "job.yml"), "--local", "--input", f"steps={steps}",
                          "--input", "step_seconds=0.5", "--inject", "preempt:node=1,after=60", "--retry", "1")
    assert code == 0, err
    first, second = runs(here)
    assert status(first)["status"] == "Failed" and status(second)["status"] == "Completed"
    stopped = drill_stops(first, 2)  # the struck node's rank: saved, then stopped (its last checkpoint)
    result = json.loads((second / "outputs" / "model" / "steps.json").read_text())
    assert 0 < result["resumed_at"] < steps  # not from step 0, and not after the end
    assert stopped and result["resumed_at"] == stopped[-1] + 1  # right after the first attempt's last checkpoint
    assert result["seen"] == list(range(steps))  # every step applied exactly once over both attempts
    _, out, _ = cli("job", "show", first.name)
    assert "attempts:" in out and "injected-preempt" in out and f"{first.name}-attempt2: Completed" in out
