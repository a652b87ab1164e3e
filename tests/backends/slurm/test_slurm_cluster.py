"""The Slurm backend end to end on a real two-node Slurm cluster (munge, slurmctld, two slurmd on this host).

Every job goes through ``amldist submit --slurm`` and ``amldist job ...`` in-process, to the real
``sbatch``/``squeue``/``scontrol``/``scancel``; the ranks are real processes started by ``srun`` or
Open MPI's ``mpirun`` inside the allocation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from amldist.backends import get_backend

from tests.backends.local.helpers import SAMPLES, recorded_pids, survivors, wait_for_pid_files, worker_job

JOB_TIMEOUT = 300  # seconds: the machine is shared; a 2 x 2 DDP job takes well under a minute alone


def wait_ended(name: str, timeout: float = JOB_TIMEOUT):
    backend = get_backend("slurm")
    deadline = time.monotonic() + timeout
    while True:
        record = backend.show(name)
        if record.ended:
            return record
        assert time.monotonic() < deadline, f"job {name} still {record.status} after {timeout} s"
        time.sleep(0.5)


def queue_empty(timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.parametrize("per_node", [1, 2])
def test_the_pytorch_sample_trains_on_two_nodes_and_shows_completed(on_cluster, cli, tmp_path, per_node):
    """The DDP sample across the two nodes, 2 x 1 and the sample's own 2 x 2: both in the long tier
    (tests/long_tier.py names what the default tier runs instead: 2 x 2's variables on this cluster, a real world
    across its nodes, and the sample's training locally)."""
    # two epochs of two steps: the training is the sample's, its length is not what this test is about (the
    # ranks share 2 cores here, and each step waits for all of them)
    code, _out, err = cli("submit", str(SAMPLES / "pytorch_ddp" / "job.yml"), "--slurm", "-n", "ddp",
                          "--process-count-per-instance", str(per_node), "--input", "epochs=2",
                          "--input", "batch_size=256")
    assert code == 0, err
    assert re.search(r"^job ddp: \w+ \(amldist job logs ddp --follow follows it", err, re.M), err  # its status
    record = wait_ended("ddp")
    code, out, _err = cli("job", "show", "ddp")
    assert code == 0 and "status: Completed" in out, (out, record)
    run, world = tmp_path / ".amldist" / "slurm" / "ddp", 2 * per_node
    assert sorted(p.name for p in (run / "user_logs").iterdir()) == [f"std_log_process_0{r}.txt" for r in range(world)]
    rank0 = (run / "user_logs" / "std_log_process_00.txt").read_text()
    assert f"parameters in sync across {world} ranks: True" in rank0
    assert f"(local 0/{per_node}, node 0/2)" in rank0
    assert any((run / "outputs" / "model").iterdir())
    code, _out, err = cli("job", "download", "ddp", "-o", str(tmp_path / "got"), "--all")
    assert code == 0, err
    assert (tmp_path / "got" / "artifacts" / "user_logs" / f"std_log_process_0{world - 1}.txt").is_file()
    assert any((tmp_path / "got" / "named-outputs" / "model").iterdir())


def env_dumps(pid_dir: Path) -> dict[int, dict]:
    return {int(f.name.split(".")[0]): json.loads(f.read_text())["env"] for f in pid_dir.glob("*.env.json")}


IGNORED = {
    "MASTER_ADDR", "MASTER_PORT", "HOSTNAME",  # addresses and ports: the nodes' own
    "TMPDIR",  # slurmd sets it on a node when the submitting shell had none, as a machine's login does
    "AMLDIST_RUN_MARKER",  # the local backend's own bookkeeping (how `job cancel` finds its processes)
    "PWD", "OLDPWD", "SHLVL", "_",  # bash's own
}


def added(env: dict, run_dir: str) -> dict:
    """What a rank sees beyond the test's own environment, run folders and ports normalised."""
    base = os.environ
    return {k: v.replace(run_dir, "<run>") for k, v in env.items()
            if (k not in base or base[k] != v) and k not in IGNORED}


def test_a_held_out_jobs_ranks_see_the_same_variables_as_locally(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="env", nodes=2, per_node=2)
    assert cli("submit", str(job), "--slurm", "-n", "held")[0] == 0
    assert wait_ended("held").status == "Completed"
    on_slurm = env_dumps(tmp_path / "pids")
    for f in (tmp_path / "pids").glob("*.env.json"):
        f.unlink()
    code, _out, err = cli("submit", str(job), "--local", "-n", "held")
    assert code == 0, err
    here = env_dumps(tmp_path / "pids")
    assert sorted(on_slurm) == sorted(here) == [0, 1, 2, 3]
    for rank in here:
        slurm_vars = added(on_slurm[rank], str(tmp_path / ".amldist" / "slurm" / "held"))
        local_vars = added(here[rank], str(tmp_path / ".amldist" / "runs" / "held"))
        assert slurm_vars == local_vars
        assert slurm_vars["RANK"] == str(rank) and slurm_vars["NODE_RANK"] == str(rank // 2)


def test_an_mpi_job_is_one_world_of_four_across_the_nodes(on_cluster, cli, tmp_path, monkeypatch):
    pytest.importorskip("mpi4py")
    # both slurmd run on this one host: Open MPI's shared-memory transport and its hierarchical collectives
    # would take the two nodes for one (see amldist.engine.launchers.mpirun_node_args)
    monkeypatch.setenv("OMPI_MCA_btl", "tcp,self")
    monkeypatch.setenv("OMPI_MCA_coll", "^han")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "probe.py").write_text(textwrap.dedent("""
        import json, os
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        e = os.environ
        print(json.dumps([c.Get_rank(), c.Get_size(), c.allreduce(1), e["OMPI_COMM_WORLD_LOCAL_RANK"],
                          e["AZ_BATCH_MASTER_NODE"], "RANK" in e or "SLURM_PROCID" in e]))
        """))
    (tmp_path / "job.yml").write_text(textwrap.dedent("""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        code: src
        command: python probe.py
        environment: azureml:AzureML-sklearn-1.5@latest
        distribution: {type: mpi, process_count_per_instance: 2}
        resources: {instance_count: 2}
        """))
    assert cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "mpi")[0] == 0
    assert wait_ended("mpi").status == "Completed"
    logs = tmp_path / ".amldist" / "slurm" / "mpi" / "user_logs"
    seen = [json.loads((logs / f"std_log_process_0{r}.txt").read_text().strip().splitlines()[-1]) for r in range(4)]
    assert [s[:4] for s in seen] == [[r, 4, 4, str(r % 2)] for r in range(4)]
    assert all(s[4].count(":") == 1 and s[5] is False for s in seen)


def test_a_failing_rank_fails_the_job_naming_the_rank(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="fail", nodes=2, per_node=2, fail_rank=2)
    assert cli("submit", str(job), "--slurm", "-n", "bad")[0] == 0
    record = wait_ended("bad")
    assert record.status == "Failed"
    assert "rank 2 of job bad exited with code 3" in record.error
    code, out, _err = cli("job", "show", "bad")
    assert "status: Failed" in out and "rank 2" in out
    code, out, _err = cli("job", "logs", "bad", "--rank", "2")
    assert "boom: failing on purpose" in out
    code, out, err = cli("job", "diagnose", "bad", "--slurm", "--format", "json")
    on_slurm = json.loads(out)["first_failure"]
    assert (on_slurm["rank"], on_slurm["node"], on_slurm["exit_code"]) == (2, 1, 3), err
    assert on_slurm["log"].endswith("/slurm/bad/user_logs/std_log_process_02.txt")
    assert "boom: failing on purpose" in json.dumps(on_slurm)  # its log's tail: no known cause
    code, out, _err = cli("job", "diagnose", "bad")  # found without --slurm too, in text
    assert "first failure: rank 2 on node 1, exit code 3" in out
    assert cli("submit", str(job), "--local", "-n", "bad")[0] == 1  # the same job here: the same answer
    here = json.loads(cli("job", "diagnose", "bad", "--local", "--format", "json")[1])["first_failure"]
    assert (here["rank"], here["node"], here["exit_code"]) == (2, 1, 3)
    assert survivors(recorded_pids(tmp_path / "pids"), timeout=30) == []  # srun stopped the others
    assert queue_empty()


def test_job_cancel_stops_every_task(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="hang", nodes=2, per_node=2)
    assert cli("submit", str(job), "--slurm", "-n", "long")[0] == 0
    wait_for_pid_files(tmp_path / "pids", 4, timeout=JOB_TIMEOUT)
    code, out, _err = cli("job", "cancel", "long")
    assert code == 0 and "Canceled" in out
    assert get_backend("slurm").show("long").stopped_by == "amldist job cancel"
    assert survivors(recorded_pids(tmp_path / "pids"), timeout=30) == []  # ranks and their children
    assert queue_empty()


def test_scancel_from_outside_is_canceled_in_azure_words(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="hang", nodes=1, per_node=1)
    assert cli("submit", str(job), "--slurm", "-n", "outside")[0] == 0
    wait_for_pid_files(tmp_path / "pids", 1, timeout=JOB_TIMEOUT)
    job_id = get_backend("slurm").show("outside").details["slurm_job_id"]
    subprocess.run(["scancel", job_id], check=True)
    record = wait_ended("outside", timeout=60)
    assert (record.status, record.stopped_by) == ("Canceled", "scancel")
    assert survivors(recorded_pids(tmp_path / "pids"), timeout=30) == []


def test_an_unknown_partition_is_one_line_and_leaves_no_run(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="ok", per_node=1)
    code, _out, err = cli("submit", str(job), "--slurm", "--partition", "nosuch", "-n", "nope")
    assert code == 1
    assert err.strip().splitlines()[0] == "error: Slurm refused the job: invalid partition specified: nosuch"
    assert not (tmp_path / ".amldist" / "slurm" / "nope").exists()


def test_no_sbatch_on_path_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # the interpreter is found through sys.executable
    monkeypatch.chdir(tmp_path)
    job = worker_job(tmp_path, mode="ok", per_node=1)
    code, _out, err = cli("submit", str(job), "--slurm")
    assert code == 2
    assert err.splitlines()[0] == "error: sbatch was not found on PATH: --slurm needs Slurm's client programs on this machine"
    assert not (tmp_path / ".amldist" / "slurm").exists()


def test_the_three_step_pipeline_runs_with_dependencies_and_streams_to_the_end(on_cluster, cli, tmp_path):
    code, out, err = cli("submit", str(SAMPLES / "pipeline" / "pipeline.yml"), "--slurm", "-n", "pipe", "--stream")
    assert code == 0, err
    assert "[evaluate] evaluate: y = " in out and "[train rank 3] rank 3/4" in out  # followed to the end
    assert re.search(r"^pipeline pipe: Completed in \d", err, re.M), err  # and ends with its status
    record = get_backend("slurm").show("pipe")
    assert record.status == "Completed" and [s.status for s in record.steps] == ["Completed"] * 3
    run = tmp_path / ".amldist" / "slurm" / "pipe"
    assert "--dependency" not in (run / "prep" / "job.sbatch").read_text()  # given to sbatch, per step
    assert any((run / "train" / "outputs" / "model").iterdir())


def test_a_failing_step_stops_the_steps_that_read_from_it(on_cluster, cli, tmp_path):
    (tmp_path / "pipeline.yml").write_text(textwrap.dedent("""\
        $schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
        type: pipeline
        jobs:
          first:
            type: command
            command: echo broken >&2; exit 4
            environment: azureml:AzureML-sklearn-1.5@latest
            outputs: {data: {type: uri_folder}}
          second:
            type: command
            command: ls ${{inputs.data}}
            environment: azureml:AzureML-sklearn-1.5@latest
            inputs: {data: "${{parent.jobs.first.outputs.data}}"}
            outputs: {more: {type: uri_folder}}
          third:
            type: command
            command: ls ${{inputs.more}}
            environment: azureml:AzureML-sklearn-1.5@latest
            inputs: {more: "${{parent.jobs.second.outputs.more}}"}
          apart:
            type: command
            command: echo independent
            environment: azureml:AzureML-sklearn-1.5@latest
        """))
    assert cli("submit", str(tmp_path / "pipeline.yml"), "--slurm", "-n", "broken")[0] == 0
    record = wait_ended("broken")
    steps = {s.name: s for s in record.steps}
    assert record.status == "Failed" and "step first failed" in record.error
    assert steps["first"].status == "Failed" and steps["first"].exit_code == 4
    assert steps["second"].status == steps["third"].status == "NotStarted"
    assert steps["apart"].status == "Completed"
    assert not (tmp_path / ".amldist" / "slurm" / "broken" / "second" / "state" / "started").exists()


def test_a_node_that_fails_fails_the_job_in_one_line(on_cluster, cli, tmp_path):
    job = worker_job(tmp_path, mode="hang", nodes=2, per_node=1)
    assert cli("submit", str(job), "--slurm", "-n", "nodefail")[0] == 0
    wait_for_pid_files(tmp_path / "pids", 2, timeout=JOB_TIMEOUT)
    try:  # what slurmctld does when a node stops answering, without waiting SlurmdTimeout for it
        subprocess.run(["scontrol", "update", "nodename=n2", "state=down", "reason=amldist-test"], check=True)
        record = wait_ended("nodefail", timeout=120)
    finally:
        # ReturnToService=2 returns the node by itself once its slurmd answers; resume it when it has not yet
        subprocess.run(["scontrol", "update", "nodename=n2", "state=resume"], capture_output=True)
        on_cluster.wait_idle(60)
    assert record.status == "Failed"
    assert record.error == "a node of the job failed"
    assert survivors(recorded_pids(tmp_path / "pids"), timeout=30) == []


@pytest.mark.long(covered_by="test_slurm_plan.py::test_tensorflow_asks_for_one_task_per_worker_and_parameter_server "
                  "and, on this cluster, test_a_held_out_jobs_ranks_see_the_same_variables_as_locally")
def test_tensorflow_tasks_get_the_tf_config_they_get_locally(on_cluster, cli, tmp_path):
    (tmp_path / "job.yml").write_text(textwrap.dedent("""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        command: python -c 'import os; print(os.environ["TF_CONFIG"])'
        environment: azureml:AzureML-sklearn-1.5@latest
        distribution: {type: tensorflow, worker_count: 2, parameter_server_count: 1}
        resources: {instance_count: 2}
        """))
    assert cli("submit", str(tmp_path / "job.yml"), "--slurm", "-n", "tf")[0] == 0
    assert wait_ended("tf").status == "Completed"
    assert cli("submit", str(tmp_path / "job.yml"), "--local", "-n", "tf")[0] == 0
    names = ["std_log_node_00_worker.txt", "std_log_node_01_worker.txt", "std_log_node_00_ps.txt"]

    def configs(folder: Path) -> list[dict]:
        found = [json.loads((folder / "user_logs" / n).read_text().strip().splitlines()[-1]) for n in names]
        for config in found:  # addresses and ports are the nodes' own
            config["cluster"] = {k: len(v) for k, v in config["cluster"].items()}
        return found

    on_slurm = configs(tmp_path / ".amldist" / "slurm" / "tf")
    assert on_slurm == configs(tmp_path / ".amldist" / "runs" / "tf")
    assert [c["task"] for c in on_slurm] == [{"type": "worker", "index": 0}, {"type": "worker", "index": 1},
                                            {"type": "ps", "index": 0}]


@pytest.mark.long(covered_by="test_job_cancel_stops_every_task and "
                  "test_a_failing_step_stops_the_steps_that_read_from_it")
def test_job_cancel_stops_a_pipeline_and_the_steps_waiting_for_it(on_cluster, cli, tmp_path):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    (tmp_path / "pipeline.yml").write_text(textwrap.dedent(f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
        type: pipeline
        jobs:
          slow:
            type: command
            command: echo $$ > {pid_dir}/slow.pids; sleep 300
            environment: azureml:AzureML-sklearn-1.5@latest
            outputs: {{data: {{type: uri_folder}}}}
          after:
            type: command
            command: ls ${{{{inputs.data}}}}
            environment: azureml:AzureML-sklearn-1.5@latest
            inputs: {{data: "${{{{parent.jobs.slow.outputs.data}}}}"}}
        """))
    assert cli("submit", str(tmp_path / "pipeline.yml"), "--slurm", "-n", "stopme")[0] == 0
    wait_for_pid_files(pid_dir, 1, timeout=JOB_TIMEOUT)
    code, out, _err = cli("job", "cancel", "stopme")
    assert code == 0 and "Canceled" in out
    record = get_backend("slurm").show("stopme")
    assert record.status == "Canceled" and [s.status for s in record.steps] == ["Canceled", "Canceled"]
    assert survivors(recorded_pids(pid_dir), timeout=30) == []
    assert queue_empty()
