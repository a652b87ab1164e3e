"""A sweep run locally through the CLI, for real: 2 trials of 2 nodes x 2 processes, the metric logged with
MLflow by rank 0, a bandit policy stopping the worse trial, the table of trials, and the job verbs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

AMLDIST = [sys.executable, "-m", "amldist"]  # the command as users run it

TRIAL = '''\
import os, sys, time
lr = float(sys.argv[1])
rank, world = os.environ["RANK"], os.environ["WORLD_SIZE"]
print(f"rank {rank} of {world} node {os.environ['NODE_RANK']} lr={sys.argv[1]}", flush=True)
done = os.path.join(os.environ["SWEEP_TEST_FLAGS"], "good_done")
if lr < 10:  # the good trial: three falling errors, then a flag for the bad one
    if rank == "0":
        import mlflow
        for step in range(3):
            mlflow.log_metric("err", lr / (step + 1), step=step)
        open(done, "w").close()
    sys.exit(0)
while not os.path.exists(done):  # the bad trial reports after the good one, so both are compared
    time.sleep(0.1)
if rank == "0":
    import mlflow
    for step in range(3):
        mlflow.log_metric("err", lr * (step + 1), step=step)
time.sleep(300)  # the bandit policy stops it long before
'''

SWEEP = '''\
$schema: https://azuremlschemas.azureedge.net/latest/sweepJob.schema.json
type: sweep
trial:
  code: src
  command: python trial.py ${{search_space.lr}}
  environment: azureml:AzureML-sklearn-1.5@latest
  distribution: {type: pytorch, process_count_per_instance: 2}
  resources: {instance_count: 2}
sampling_algorithm: grid
search_space:
  lr: {type: choice, values: [1, 50]}
objective: {goal: minimize, primary_metric: err}
early_termination: {type: bandit, slack_amount: 5, evaluation_interval: 1, delay_evaluation: 2}
limits: {max_total_trials: 5, max_concurrent_trials: 2, trial_timeout: 280}
'''


def amldist(cwd, *args, timeout=400):
    return subprocess.run([*AMLDIST, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "SWEEP_TEST_FLAGS": str(cwd)})


def test_a_distributed_sweep_runs_each_trial_2_by_2_and_stops_the_worse_one(tmp_path):
    pytest.importorskip("mlflow")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "trial.py").write_text(TRIAL)
    (tmp_path / "sweep.yml").write_text(SWEEP)
    done = amldist(tmp_path, "submit", "sweep.yml", "--local", "--name", "sw", "--max-parallel", "8")
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / ".amldist" / "runs" / "sw"
    for trial, lr in (("trial_0", 1), ("trial_1", 50)):
        logs = sorted(os.listdir(run / trial / "user_logs"))
        assert logs == [f"std_log_process_0{i}.txt" for i in range(4)]
        lines = {(run / trial / "user_logs" / log).read_text().splitlines()[0] for log in logs}
        assert lines == {f"rank {r} of 4 node {r // 2} lr={lr}" for r in range(4)}  # ${{search_space.lr}} filled
    # judged at its 2nd report (100 > 1/2 + 5), or at its 3rd when all three landed between two reads
    assert re.search(r"trial_1: stopped by the bandit policy after (2|3) report\(s\) of err \(last (100|150)\)",
                     done.stderr), done.stderr
    table = done.stdout[done.stdout.index("  trial  "):].splitlines()
    assert table[1].split() == ["*", "trial_0", "lr=1", "0.333333", "Completed"]
    assert table[2].split()[:2] == ["trial_1", "lr=50"] and table[2].split()[3] == "Canceled"
    state = json.loads((run / "status.json").read_text())
    assert state["status"] == "Completed" and state["sweep"]["best"] == "trial_0"
    assert [s["note"] for s in state["steps"]] == [None, "stopped by the bandit policy"]
    trial_state = json.loads((run / "trial_1" / "status.json").read_text())
    assert trial_state["status"] == "Canceled"  # every rank of the stopped trial ended with it
    shown = amldist(tmp_path, "job", "show", "sw")
    assert shown.returncode == 0 and "*  trial_0  lr=1" in shown.stdout and "trial_1  lr=50" in shown.stdout
    logs = amldist(tmp_path, "job", "logs", "sw", "--step", "trial_0", "--rank", "3")
    assert logs.stdout.strip() == "rank 3 of 4 node 1 lr=1"


def test_bayesian_is_refused_locally_in_one_line_and_azure_is_named(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "sweep.yml").write_text(SWEEP.replace("sampling_algorithm: grid", "sampling_algorithm: bayesian")
                                        .replace("early_termination:", "#"))
    done = amldist(tmp_path, "submit", "sweep.yml", "--local", timeout=120)
    assert done.returncode != 0 and not (tmp_path / ".amldist" / "runs").exists()
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "bayesian" in errors[0] and "Traceback" not in done.stderr
    assert "sampling_algorithm: random" in done.stderr and "without --local" in done.stderr


def test_without_mlflow_a_local_sweep_says_so_in_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "sweep.yml").write_text(SWEEP)
    (tmp_path / "nomlflow").mkdir()
    (tmp_path / "nomlflow" / "sitecustomize.py").write_text(
        "import importlib.util as u\n_find = u.find_spec\n"
        "u.find_spec = lambda name, *a: None if name == 'mlflow' else _find(name, *a)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "nomlflow"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([*AMLDIST, "submit", "sweep.yml", "--local"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "mlflow is not installed" in done.stderr and "amldist[sweep]" in done.stderr
    assert not (tmp_path / ".amldist" / "runs").exists()  # nothing started


REAL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "real_specs", "azureml-examples", "cli", "jobs")


def test_the_public_hello_sweep_runs_here_with_a_table_of_trials(tmp_path):
    """azureml-examples' hello-sweep as written (its script logs random_metric with MLflow), two of its trials."""
    pytest.importorskip("mlflow")
    spec = os.path.abspath(os.path.join(REAL, "basics", "hello-sweep.yml"))
    done = amldist(tmp_path, "submit", spec, "--local", "--name", "hello", "--set", "limits.max_total_trials=2")
    assert done.returncode == 0, done.stdout + done.stderr
    table = done.stdout[done.stdout.index("  trial  "):].splitlines()[:3]
    assert table[0].split() == ["trial", "parameters", "random_metric", "status"]
    rows = [row.replace("*", " ").split() for row in table[1:]]
    assert [r[0] for r in rows] == ["trial_0", "trial_1"] and all(r[-1] == "Completed" for r in rows)
    metrics = {r[0]: float(r[-2]) for r in rows}
    best = min(metrics, key=metrics.get)  # goal: minimize
    assert next(row for row in table[1:] if best in row).startswith("*")
    state = json.loads((tmp_path / ".amldist" / "runs" / "hello" / "status.json").read_text())
    for trial in state["sweep"]["trials"]:
        log = (tmp_path / ".amldist" / "runs" / "hello" / trial["name"] / "user_logs" / "std_log.txt").read_text()
        assert f"B: {trial['parameters']['B']}" in log and trial["parameters"]["B"] in ("hello", "world", "hello_world")
        assert f"C: {trial['parameters']['C']}" in log and 0.1 <= trial["parameters"]["C"] <= 1.0


@pytest.mark.parametrize("example", ["lightgbm", "scikit-learn"])
def test_the_public_iris_sweeps_plan_here_with_a_local_copy_of_their_data(tmp_path, example):
    spec = os.path.abspath(os.path.join(REAL, "single-step", example, "iris", "job-sweep.yml"))
    (tmp_path / "iris.csv").write_text("sepal_length,species\n1,setosa\n")
    done = amldist(tmp_path, "submit", spec, "--local", "--dry-run", "--input", "iris_csv=iris.csv", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sweep ") and "20 trial(s), random sampling (seed " in done.stdout.splitlines()[0]
    assert sum(line.startswith("trial_") for line in done.stdout.splitlines()) == 20
    assert done.stdout.count("== trial_0 (trial_1 and after") == 1 and "at most 10 trial(s)" in done.stdout
    refused = amldist(tmp_path, "submit", spec, "--local", "--dry-run", timeout=120)  # the data is on Azure only
    assert refused.returncode == 2 and "pass --input iris_csv=" in refused.stderr and "Traceback" not in refused.stderr


def test_the_sample_plans_two_trials_of_2_by_2_with_its_seed(tmp_path):
    sample = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "sweep", "job.yml")
    done = amldist(tmp_path, "submit", os.path.abspath(sample), "--local", "--dry-run", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 trial(s), random sampling (seed 7)" in done.stdout and "early termination: bandit" in done.stdout
    assert done.stdout.count("job trial_0: pytorch, 4 process(es)") == 1 and "rank 3 (node 1" in done.stdout
    again = amldist(tmp_path, "submit", os.path.abspath(sample), "--local", "--dry-run", timeout=120)
    trials = [line for line in done.stdout.splitlines() if line.startswith("trial_")]
    assert trials == [line for line in again.stdout.splitlines() if line.startswith("trial_")]  # the seed


SLEEPER = '''\
type: sweep
trial:
  code: src
  command: python sleep.py ${{search_space.seconds}}
  environment: azureml:x@latest
sampling_algorithm: grid
search_space:
  seconds: {type: choice, values: [0, 120, 120]}
objective: {goal: minimize, primary_metric: m}
limits: {max_total_trials: 3, max_concurrent_trials: 1, timeout: TIMEOUT}
'''
SLEEP = "import os, sys, time\nopen(f'pid_{os.getpid()}', 'w').close()\ntime.sleep(float(sys.argv[1]))\n"


def sleeper(tmp_path, timeout: int):
    pytest.importorskip("mlflow")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "sleep.py").write_text(SLEEP)
    (tmp_path / "sweep.yml").write_text(SLEEPER.replace("TIMEOUT", str(timeout)))


def test_the_sweeps_timeout_stops_the_running_trial_and_starts_no_other(tmp_path):
    sleeper(tmp_path, 6)
    done = amldist(tmp_path, "submit", "sweep.yml", "--local", "--name", "t")
    assert done.returncode == 0, done.stderr  # trial_0 completed, none failed
    assert "limits.timeout (6s) reached" in done.stderr
    assert "warning: trial_0 completed without logging m with MLflow" in done.stderr
    state = json.loads((tmp_path / ".amldist" / "runs" / "t" / "status.json").read_text())
    assert [(s["name"], s["status"]) for s in state["steps"]] == [
        ("trial_0", "Completed"), ("trial_1", "Canceled"), ("trial_2", "NotStarted")]
    assert state["steps"][1]["note"] == "stopped at the sweep's limits.timeout" and state["sweep"]["best"] is None
    assert not (tmp_path / ".amldist" / "runs" / "t" / "trial_2").exists()


def test_job_cancel_stops_a_running_sweep_and_its_trial(tmp_path):
    sleeper(tmp_path, 600)
    proc = subprocess.Popen([*AMLDIST, "submit", "sweep.yml", "--local", "--name", "c"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code = tmp_path / ".amldist" / "runs" / "c" / "trial_1" / "code"
    try:
        for _ in range(600):  # trial_1, the long one, has started its process
            if code.is_dir() and any(p.name.startswith("pid_") for p in code.iterdir()):
                break
            time.sleep(0.1)
        canceled = amldist(tmp_path, "job", "cancel", "c", timeout=120)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert canceled.returncode == 0 and canceled.stdout.strip() == "job c: Canceled", canceled.stderr
    assert proc.returncode == 143 and "sweep c: Canceled" in out
    pid = int(next(p.name for p in code.iterdir() if p.name.startswith("pid_"))[4:])
    assert not os.path.exists(f"/proc/{pid}")  # the trial's process went with it
    shown = amldist(tmp_path, "job", "show", "c")
    assert "status: Canceled (stopped by amldist job cancel)" in shown.stdout
    assert "trial_1: Canceled" in shown.stdout.replace("step ", "").replace(", exit -15 (SIGTERM)", "")
