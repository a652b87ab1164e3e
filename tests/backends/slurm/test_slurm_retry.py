"""The fault drill and retries on the real two-node Slurm cluster (tests/slurm_cluster.py): ``amldist submit
--slurm --inject ... --retry N`` end to end, with the real sbatch, srun, squeue and scancel, the drill acted out by
each task's script on its node, and ``amldist job show/diagnose`` reading what the attempts left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from amldist.backends import get_backend

from tests.backends.local.helpers import SAMPLES, drill_stops, recorded_pids, survivors, worker_job
from tests.backends.slurm.test_slurm_cluster import queue_empty


def runs(tmp_path: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted((tmp_path / ".amldist" / "slurm").iterdir())}


def meta(run: Path) -> dict:
    return json.loads((run / "slurm.json").read_text())


def processes_under(folder: Path) -> list[str]:
    """The processes whose command line names ``folder`` (the job's own: its run folder is in their arguments)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(folder) in line and "ps -ww -eo" not in line]


def write_a_job_that_hangs_only_the_first_time(tmp_path: Path, first: str = "sleep 300", extra: str = "") -> Path:
    """job.yml whose first attempt runs ``first`` (by default it sleeps until the platform ends it) and whose next
    one ends at once; ``extra`` adds YAML lines; the mark file returned says the first ran."""
    mark = tmp_path / "first-attempt-ran"
    (tmp_path / "src").mkdir()
    (tmp_path / "job.yml").write_text(textwrap.dedent(f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        code: src
        command: >-
          if [ -e {mark} ]; then echo second; else touch {mark}; {first}; fi
        environment: azureml:AzureML-sklearn-1.5@latest
        """) + extra)
    return mark


@pytest.mark.long(covered_by="test_a_killed_one_node_job_is_retried_off_its_node (the drill, a retry off the node and the "
                  "attempts on the cluster) and, locally, test_fault_drill.py::test_retry_resubmits_a_preempted_run_and_"
                  "links_the_attempts (resume from the shared checkpoint folder)")
def test_a_ddp_run_preempted_on_node_1_resumes_from_its_checkpoint_in_a_second_attempt(on_cluster, cli, tmp_path):
    """The issue's drill on Slurm: 2 x 2 DDP (samples/drill), node 1 preempted mid-run, --retry 1.

    40 steps of 0.25 s: the steps alone outlast the preemption at 10 s, so it always lands before the end, and
    after the sample's grace hook is installed (its first line), so the ranks save together before they stop. It
    often lands while the ranks still start (import torch, the process group): they then save at step 0. The grace
    is long so that they reach step 0 even on a busy machine (with 30 s, CI's long tier once found no checkpoint
    line: the SIGKILL 40 s in came first, or rank 0's line was cut off, which drill_stops avoids); the ranks stop
    by themselves once saved, so it costs nothing when they are quick."""
    steps = 40
    code, _out, err = cli("submit", str(SAMPLES / "drill" / "job.yml"), "--slurm", "-n", "drill",
                          "--input", f"steps={steps}", "--input", "save_every=5",
                          "--inject", "preempt:node=1,after=10,grace=120", "--retry", "1")
    assert code == 0, err
    assert list(runs(tmp_path)) == ["drill", "drill-attempt2"]
    first, second = runs(tmp_path).values()
    assert meta(second)["attempt"] == {"number": 2, "of": "drill"} and meta(second)["faults"] == []
    fired = sorted(p.name for p in (first / "state").glob("fault_*"))
    assert fired == ["fault_0_rank_2", "fault_0_rank_3"]  # node 1's tasks, and only them
    assert "retrying: the failure was diagnosed as injected-preempt (preemption)" in err
    # the test cluster's two nodes are what the job needs: the struck one cannot be left out, and it is said
    assert "not excluding node n2: the job needs 2 node(s) and the cluster has 1 other(s) left" in err
    stopped = drill_stops(first, 2)  # the struck node's rank: saved, then stopped (its last checkpoint)
    result = json.loads((second / "outputs" / "model" / "steps.json").read_text())
    assert stopped and result["resumed_at"] == stopped[-1] + 1 > 0  # right after the first attempt's last checkpoint
    assert result["seen"] == list(range(steps))  # every step applied exactly once over both attempts
    code, out, _err = cli("job", "show", "drill", "--slurm")
    assert "status: Failed" in out and "attempts:" in out, out
    assert "  1. drill: Failed: rank 2: injected-preempt: --inject preempt:node=1,after=10,grace=120 fired" in out
    assert "  2. drill-attempt2: Completed" in out
    code, out, _err = cli("job", "list", "--slurm")
    assert "drill-attempt2  job   Completed" in out and "drill           job   Failed" in out, out
    assert queue_empty() and processes_under(tmp_path) == []


@pytest.mark.long(covered_by="test_slurm_drill.py::test_slurms_preempted_and_node_fail_are_the_cause_and_are_retried "
                  "and, locally, test_fault_drill.py::test_a_failure_of_the_code_is_never_retried")
def test_a_script_that_raises_is_not_retried_on_slurm(on_cluster, cli, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.py").write_text("raise ValueError('a bug in the training code')\n")
    (tmp_path / "job.yml").write_text(textwrap.dedent("""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        code: src
        command: python bad.py
        environment: azureml:AzureML-sklearn-1.5@latest
        """))
    code, _out, err = cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "bad", "--retry", "3")
    assert code == 1
    assert list(runs(tmp_path)) == ["bad"]
    assert "not retried: the failure was diagnosed as python-exception (user), a failure of the training code" in err
    assert queue_empty()


def test_a_killed_one_node_job_is_retried_off_its_node(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="ok", nodes=1, per_node=1)
    job.write_text(job.read_text().replace("command: python worker.py", "command: sleep 3; python worker.py"))
    code, _out, err = cli("submit", str(job), "--slurm", "-n", "one", "--inject", "kill:rank=0,after=1",
                          "--retry", "1")
    assert code == 0, err
    first, second = runs(tmp_path).values()
    struck = (first / "state" / "nodes").read_text().split()[0]
    assert meta(second)["exclude"] == struck and f"the retry keeps off node {struck}" in err
    assert (second / "state" / "nodes").read_text().split() != [struck]  # it ran on the other node
    code, out, _err = cli("job", "show", "one", "--slurm")
    assert "1. one: Failed: rank 0: injected-kill" in out and "2. one-attempt2: Completed" in out


@pytest.mark.long(covered_by="test_slurm_cluster.py::test_job_cancel_stops_every_task")
@pytest.mark.parametrize("signum, stream", [(signal.SIGINT, ()), (signal.SIGTERM, ("--stream",))])
def test_stopping_amldist_during_a_retry_cancels_the_attempt_and_ends_the_retries(on_cluster, tmp_path, signum,
                                                                                 stream):
    job = worker_job(tmp_path, mode="hang", nodes=1, per_node=2)
    command = [sys.executable, "-m", "amldist", "submit", str(job), "--slurm", "-n", "stop", "--inject",
               "kill:rank=1,after=2", "--retry", "2", *stream]  # --stream: stopped while it follows the logs
    proc = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    try:
        second = tmp_path / ".amldist" / "slurm" / "stop-attempt2"
        deadline = time.monotonic() + 300
        while not (second / "state" / "started").exists():  # the second attempt runs: the retry is under way
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.2)
        logs = [second / "user_logs" / f"std_log_process_0{r}.txt" for r in (0, 1)]
        while not all(log.exists() and "started" in log.read_text() for log in logs):  # both ranks run
            assert time.monotonic() < deadline
            time.sleep(0.2)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert f"job stop-attempt2: Canceled: stopped by {signal.Signals(signum).name}; no further attempt" in err
    assert not (tmp_path / ".amldist" / "slurm" / "stop-attempt3").exists()
    assert get_backend("slurm").show("stop-attempt2").status == "Canceled"
    assert queue_empty() and survivors(recorded_pids(tmp_path / "pids"), timeout=30) == []


@pytest.mark.long(covered_by="test_slurm_drill.py::test_slurms_preempted_and_node_fail_are_the_cause_and_are_retried "
                  "and test_slurm_cluster.py::test_a_node_that_fails_fails_the_job_in_one_line")
def test_a_real_node_failure_is_diagnosed_as_such_and_retried(on_cluster, cli, tmp_path):
    mark = write_a_job_that_hangs_only_the_first_time(tmp_path)
    first = tmp_path / ".amldist" / "slurm" / "nf"
    downed = []

    def fail_the_node():  # what slurmctld does when a node stops answering, without waiting SlurmdTimeout for it
        deadline = time.monotonic() + 300
        while not (mark.exists() and (first / "state" / "nodes").exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        host = (first / "state" / "nodes").read_text().split()[0]
        downed.append(host)
        subprocess.run(["scontrol", "update", f"nodename={host}", "state=down", "reason=amldist-test"], check=True)

    import threading

    thread = threading.Thread(target=fail_the_node, daemon=True)
    thread.start()
    try:
        code, _out, err = cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "nf", "--retry", "1")
    finally:
        thread.join(timeout=60)
        for host in downed:
            subprocess.run(["scontrol", "update", f"nodename={host}", "state=resume"], capture_output=True)
        on_cluster.wait_idle(60)
    assert code == 0, err
    assert "retrying: the failure was diagnosed as node-failure (node)" in err
    second = tmp_path / ".amldist" / "slurm" / "nf-attempt2"
    assert (second / "user_logs" / "std_log.txt").read_text() == "second\n"
    # NODE_FAIL names no node to the job, so none is excluded: Slurm runs nothing on a node while it is down
    # (this test cluster returns it at once: ReturnToService=2 and its slurmd answers)
    assert meta(second)["exclude"] is None
    code, out, _err = cli("job", "show", "nf", "--slurm")
    assert "1. nf: Failed: process: node-failure: slurm: a node of the job failed" in out, out


@pytest.mark.long(covered_by="test_slurm_drill.py::test_a_retried_job_with_a_time_limit_is_warned_before_it")
def test_a_job_warned_before_its_time_limit_saves_and_is_retried_as_a_hang(on_cluster, cli, tmp_path):
    write_a_job_that_hangs_only_the_first_time(tmp_path, first="trap 'echo saving; exit 143' TERM; sleep 200 & wait",
                                               extra="limits: {timeout: 60}\n")
    # a 1-minute limit and a warning 60 s before it: Slurm warns at its next check, seconds after the start
    code, _out, err = cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "tl", "--retry", "1",
                          "--retry-on", "hang")
    assert code == 0, err
    first = tmp_path / ".amldist" / "slurm" / "tl"
    assert "#SBATCH --signal=B:TERM@60" in (first / "job.sbatch").read_text()
    assert (first / "state" / "time_limit").is_file() and (first / "state" / "rank_0.exit").read_text() == "143\n"
    assert (first / "user_logs" / "std_log.txt").read_text() == "saving\n"  # the task got SIGTERM, not SIGKILL
    assert "retrying: the failure was diagnosed as time-limit (hang)" in err
    code, out, _err = cli("job", "show", "tl", "--slurm")
    assert "error: the job's time limit was near" in out and "2. tl-attempt2: Completed" in out


@pytest.fixture(scope="module")
def preempting_cluster():
    """A cluster of its own whose partition `high` preempts (cancels) the jobs of `low`, the default."""
    from tests.backends.slurm.conftest import missing_tools
    from tests.slurm_cluster import start_cluster

    if missing_tools():
        pytest.skip("Slurm/munge not installed")
    cluster = start_cluster(partitions=("low Default=YES MaxTime=INFINITE State=UP PriorityTier=1",
                                        "high MaxTime=INFINITE State=UP PriorityTier=2"),
                            extra=("PreemptType=preempt/partition_prio", "PreemptMode=CANCEL"))
    yield cluster
    cluster.stop()
    import shutil

    shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.mark.long(covered_by="test_slurm_drill.py::test_slurms_preempted_and_node_fail_are_the_cause_and_are_retried")
def test_a_job_slurm_really_preempts_is_diagnosed_as_preempted_and_retried(preempting_cluster, cli, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(preempting_cluster.conf))
    monkeypatch.chdir(tmp_path)
    mark = write_a_job_that_hangs_only_the_first_time(tmp_path)
    import threading

    def preempt():  # a job of the higher partition that needs both nodes whole: Slurm preempts ours for it
        deadline = time.monotonic() + 300
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run(["sbatch", "-p", "high", "--exclusive", "-N", "2", "-o", "/dev/null", "--wrap", "sleep 2"],
                       check=True, capture_output=True)

    thread = threading.Thread(target=preempt, daemon=True)
    thread.start()
    code, _out, err = cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "pre", "--retry", "1")
    thread.join(timeout=60)
    assert code == 0, err
    assert "retrying: the failure was diagnosed as preempted (preemption)" in err
    assert get_backend("slurm").show("pre").error == "the job was preempted"
    second = tmp_path / ".amldist" / "slurm" / "pre-attempt2"
    assert (second / "user_logs" / "std_log.txt").read_text() == "second\n"
    assert meta(second)["exclude"] is None  # the whole job was preempted: no node is at fault
    code, out, _err = cli("job", "show", "pre", "--slurm")
    assert "1. pre: Failed: process: preempted: slurm: the job was preempted" in out, out
