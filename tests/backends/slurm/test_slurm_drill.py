"""The fault drill and retries on Slurm without a cluster: the task script's watchers run in real bash on real
processes, the record reads what they wrote as data, a retry's --exclude, and Slurm's own end states as causes.
(On the real two-node cluster: tests/backends/slurm/test_slurm_retry.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from amldist.backends.base import ProcessLog, RunLogs
from amldist.backends.slurm import attempts, records, script
from amldist.diagnosis.backend import diagnose_logs
from amldist.diagnosis.retry import RetryPolicy, cause_class
from amldist.errors import UserError
from amldist.rules.faults import parse_faults

from tests.backends.local.helpers import process_state
from tests.backends.slurm.test_slurm_plan import make_plan
from tests.conftest import wait_until

TWO_BY_TWO = "command: python train.py\ndistribution: {type: pytorch, process_count_per_instance: 2}\n" \
             "resources: {instance_count: 2}\n"


def run_task(tmp_path, faults: str, command: str, *, rank: int, node: int, timeout: float = 30, kind="pytorch"):
    """One task of a 2 x 2 job as srun (or, ``kind`` mpi, mpirun: no Slurm node index) would start it, in real
    bash: (exit code, seconds)."""
    text = script.task_script(kind, command, 2, 4, faults=parse_faults(faults.split()), tasks_per_node=2)
    for sub in ("code", "user_logs", "state"):
        (tmp_path / sub).mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "AMLDIST_RUN_DIR": str(tmp_path), "SLURM_PROCID": str(rank),
           "SLURM_LOCALID": str(rank % 2), "SLURM_NODEID": str(node), "SLURM_NTASKS": "4"}
    if kind == "mpi":
        env = {"PATH": env["PATH"], "AMLDIST_RUN_DIR": env["AMLDIST_RUN_DIR"], "OMPI_COMM_WORLD_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", text], env=env, timeout=timeout)
    return done.returncode, time.monotonic() - started


def processes_with(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -ww -eo" not in line]


def test_a_preempted_nodes_task_gets_sigterm_saves_and_its_watcher_records_when(tmp_path):
    marker = f"amldist-drill-{os.getpid()}"
    # the "training": on SIGTERM it writes a checkpoint and exits 143, as the drill sample's GraceHook does
    command = f"trap 'echo saved > {tmp_path}/ckpt; exit 143' TERM; for i in $(seq 300); do sleep 0.1; done; : {marker}"
    code, took = run_task(tmp_path, "preempt:node=1,after=1,grace=5", command, rank=2, node=1)
    assert code == 143 and took < 5  # it ended on SIGTERM, well before the grace period's SIGKILL
    assert (tmp_path / "ckpt").read_text() == "saved\n"
    fired, started = map(float, (tmp_path / "state" / "fault_0_rank_2").read_text().split())
    assert 0.9 < fired - started < 4
    assert (tmp_path / "state" / "rank_2.exit").read_text() == "143\n"
    assert processes_with(marker) == []  # the watcher's sleep went with it


def test_a_task_on_another_node_is_not_struck_and_leaves_no_watcher(tmp_path):
    code, took = run_task(tmp_path, "preempt:node=1,after=1 kill:rank=3,after=1", "sleep 1.5", rank=0, node=0)
    assert code == 0 and took >= 1.5
    assert not list((tmp_path / "state").glob("fault_*"))


def test_under_mpirun_a_ranks_node_is_its_block_of_ranks(tmp_path):
    code, _ = run_task(tmp_path, "preempt:node=1,after=0.5,grace=1", "sleep 30", rank=3, node=0, kind="mpi")
    assert code == 128 + 15 and (tmp_path / "state" / "fault_0_rank_3").is_file()  # rank 3 of 2 per node: node 1


def test_kill_is_a_sigkill_and_a_fault_after_the_command_ended_never_fires(tmp_path):
    code, _ = run_task(tmp_path, "kill:rank=1,after=1", "sleep 30", rank=1, node=0)
    assert code == 128 + 9
    assert (tmp_path / "state" / "fault_0_rank_1").is_file()
    (tmp_path / "x").mkdir()
    code, took = run_task(tmp_path / "x", "kill:rank=1,after=3", "true", rank=1, node=0)
    assert code == 0 and took < 3  # the pending watcher was ended with the task, not waited for
    assert not (tmp_path / "x" / "state" / "fault_0_rank_1").exists()


def test_hang_stops_the_rank_so_it_makes_no_progress(tmp_path):
    counter = tmp_path / "count"
    command = f"for i in $(seq 100); do echo $i >> {counter}; sleep 0.1; done"
    try:
        with pytest.raises(subprocess.TimeoutExpired):  # it never ends by itself (the time limit would end it)
            run_task(tmp_path, "hang:rank=0,after=1", command, rank=0, node=0, timeout=3)
        seen = len(counter.read_text().splitlines())
        time.sleep(1)
        assert len(counter.read_text().splitlines()) == seen and seen < 30  # frozen about 1 s in
    finally:  # the stopped command's group (its own session): ended as Slurm's time limit would
        for line in processes_with(str(counter)):
            try:
                os.killpg(int(line.split()[0]), 9)
            except (ProcessLookupError, PermissionError):
                pass


def _stopped_share(pids: dict[int, int], until: float) -> dict[int, float]:
    """How often each rank's process was seen stopped (state T in /proc), sampled until ``until``."""
    seen = {rank: [] for rank in pids}
    while time.monotonic() < until:
        for rank, pid in pids.items():
            state = process_state(pid)
            if state is not None:
                seen[rank].append(state == "T")
        time.sleep(0.005)
    return {rank: sum(states) / max(len(states), 1) for rank, states in seen.items()}


def test_slow_gives_the_rank_a_fraction_of_the_time(tmp_path):
    """Two tasks side by side, rank 1 slowed 4 times: its process is seen stopped most of the time, rank 0's
    never. (Watched from outside, not by comparing how far each counts: on a machine busy with other work, a
    task that runs a quarter of the time may get no less CPU than one that competes for it all the time.)"""
    count = ("echo $$ > {pid}; exec python3 -c 'import time; end, n = time.monotonic() + 3, 0\n"
             "while time.monotonic() < end: n += 1\nprint(n)' > {out}")  # exec: the pid written is the counter's
    text = script.task_script("pytorch", count.format(pid=tmp_path / "$RANK.pid", out=tmp_path / "$RANK.count"), 1, 2,
                              faults=parse_faults(["slow:rank=1,factor=4"]), tasks_per_node=2)
    for sub in ("code", "user_logs", "state"):
        (tmp_path / sub).mkdir()
    tasks = [subprocess.Popen(["bash", "-c", text], env={"PATH": os.environ["PATH"], "AMLDIST_RUN_DIR": str(tmp_path),
                                                         "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r),
                                                         "SLURM_NODEID": "0", "SLURM_NTASKS": "2"}) for r in (0, 1)]
    assert wait_until(lambda: all((tmp_path / f"{r}.pid").is_file() and (tmp_path / f"{r}.pid").read_text()
                                  for r in (0, 1)), 30), "the counting tasks did not start"
    pids = {r: int((tmp_path / f"{r}.pid").read_text()) for r in (0, 1)}
    stopped = _stopped_share(pids, time.monotonic() + 2)
    assert [t.wait(timeout=60) for t in tasks] == [0, 0]
    assert stopped[0] == 0 and stopped[1] > 0.3, stopped  # stopped 3/4 of each 0.1 s by the watcher


def test_the_plan_checks_the_faults_against_the_job_and_records_them(tmp_path):
    with pytest.raises(UserError, match="the job has 2 node"):
        make_plan(tmp_path, TWO_BY_TWO, inject=("preempt:node=2,after=5",))
    with pytest.raises(UserError, match="ranks 0 to 3"):
        make_plan(tmp_path, TWO_BY_TWO, inject=("kill:rank=4,after=5",))
    p = make_plan(tmp_path, TWO_BY_TWO, inject=("preempt:node=1,after=5",), attempt_of="first", attempt=2,
                  exclude="n2")
    assert [f.text() for f in p.faults] == ["preempt:node=1,after=5,grace=10"]
    assert p.attempt == {"number": 2, "of": "first"} and "--exclude=n2" in p.sbatch_options
    assert '[ "$node" = 1 ]' in p.script and "fault_0_rank_" in p.script
    assert "fault_" not in make_plan(tmp_path, TWO_BY_TWO).script  # no drill, no watcher
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" > "$AMLDIST_RUN_DIR"/state/nodes' in p.script


def write_run(tmp_path, **meta) -> str:
    run = tmp_path / "run"
    (run / "state").mkdir(parents=True)
    tasks = [[f"rank {r}", f"std_log_process_0{r}.txt", r // 2] for r in range(4)]
    (run / "slurm.json").write_text(json.dumps({"name": "run", "job_id": None, "tasks": tasks, **meta}))
    return str(run)


def test_what_the_watchers_wrote_is_read_as_data(tmp_path):
    run = write_run(tmp_path, faults=[{"text": "preempt:node=1,after=20,grace=10"}], attempt={"number": 2, "of": "a"})
    state = os.path.join(run, "state")
    for name, text in (("fault_0_rank_3", "1000.5 980.0"), ("fault_0_rank_2", "1000.25 980.0"),
                       ("fault_0_rank_9", "1.0 0.0"),  # no such task
                       ("fault_1_rank_0", "1.0 0.0"),  # no such fault
                       ("fault_0_rank_1", "soon")):  # not two numbers
        with open(os.path.join(state, name), "w") as fh:
            fh.write(text)
    os.symlink("/dev/zero", os.path.join(state, "fault_0_rank_0"))  # a link is never read
    meta = records.job_meta(run)
    (fired,) = attempts.fired_faults(meta)
    assert fired == {"text": "preempt:node=1,after=20,grace=10", "kind": "preempt", "fired_at": 1000.25,
                     "seconds": 20.25, "processes": ("rank 2", "rank 3")}
    assert meta.attempt == {"number": 2, "of": "a"}
    assert "struck rank 2, rank 3 20.2 s after it started" in records.failure(meta, "143")


@pytest.mark.parametrize("field, value, says", [
    ("faults", [{"text": "rm -rf /"}], "not a fault amldist injects"),
    ("attempt", {"number": 2, "of": "../other"}, "not a plain name"),
    ("exclude", "n1 n2\n#SBATCH --x", "not one sbatch word"),
])
def test_a_slurm_json_whose_drill_or_attempt_is_not_amldists_is_one_line(tmp_path, field, value, says):
    with pytest.raises(records.SlurmStateError, match=says):
        records.job_meta(write_run(tmp_path, **{field: value}))


def test_the_nodes_file_gives_host_names_and_nothing_else(tmp_path):
    run = write_run(tmp_path)
    (tmp_path / "run" / "state" / "nodes").write_text("n1\nn2\n")
    assert attempts.hosts(run) == ["n1", "n2"]
    (tmp_path / "run" / "state" / "nodes").write_text("n1\n--wrap=x;rm\n")
    assert attempts.hosts(run) == []


def test_a_retry_excludes_the_struck_node_only_when_another_can_run_the_job():
    assert attempts.next_exclude(None, "n2", ["n1", "n2", "n3"], 2, "the cluster") == (
        "n2", "the retry keeps off node n2 (sbatch --exclude=n2)")
    assert attempts.next_exclude("n3", "n2", ["n1", "n2", "n3", "n4"], 2, "partition gpu")[0] == "n3,n2"
    exclude, line = attempts.next_exclude(None, "n2", ["n1", "n2"], 2, "the cluster")
    assert exclude is None and line == ("not excluding node n2: the job needs 2 node(s) and the cluster has 1 "
                                        "other(s) left; the retry may run on it again")
    assert attempts.next_exclude("n3", None, ["n1"], 1, "the cluster") == ("n3", None)  # no node named: kept as is


@pytest.mark.parametrize("ended_by, signature, cls", [("preempted", "preempted", "preemption"),
                                                      ("node-failure", "node-failure", "node")])
def test_slurms_preempted_and_node_fail_are_the_cause_and_are_retried(tmp_path, ended_by, signature, cls):
    log = tmp_path / "std_log_process_00.txt"
    log.write_text("step 5\n")
    found = RunLogs("job", "Failed", "slurm", ranks=(ProcessLog("rank 0", 0, 0, str(log), None),), ended_by=ended_by,
                    spec={"distribution": {"type": "pytorch"}})
    finding = diagnose_logs(found).finding
    assert finding.signature == signature and cause_class(finding.signature, finding.scope) == cls
    assert RetryPolicy(1).decide(finding.signature, finding.scope)[0] is True
    struck = RunLogs(found.name, "Failed", "slurm", ranks=found.ranks, ended_by=ended_by, spec=found.spec,
                     faults=({"text": "kill:rank=0,after=1", "kind": "kill", "fired_at": 5.0, "seconds": 1.0,
                              "processes": ("rank 0",)},))
    assert diagnose_logs(struck).finding.signature == "injected-kill"  # the drill struck first: the drill


def test_a_retried_job_with_a_time_limit_is_warned_before_it(tmp_path):
    job = TWO_BY_TWO + "limits: {timeout: 3600}\n"
    p = make_plan(tmp_path, job, retry=1)
    assert "--signal=B:TERM@360" in p.sbatch_options  # a tenth of the hour
    assert 'scancel --signal=TERM "$SLURM_JOB_ID"' in p.script
    assert 'srun --kill-on-bad-exit=1 bash -c "$task" &' in p.script  # in the background: the trap runs at once
    assert make_plan(tmp_path, job, retry=1, time="1-00:00:00").sbatch_options.count("--signal=B:TERM@600") == 1
    assert not any(o.startswith("--signal") for o in make_plan(tmp_path, job).sbatch_options)  # no --retry
    assert not any(o.startswith("--signal") for o in make_plan(tmp_path, TWO_BY_TWO, retry=1).sbatch_options)
    assert "scancel" not in make_plan(tmp_path, job).script


@pytest.mark.parametrize("text, seconds", [("90", 5400), ("5:30", 330), ("2:00:00", 7200), ("1-2", 93600),
                                           ("1-2:30", 95400), ("1-12:00:00", 129600), ("unlimited", None)])
def test_slurm_time_limits_are_read_in_every_form_sbatch_takes(text, seconds):
    assert script.limit_seconds(text) == seconds


@pytest.mark.parametrize("given", [{"inject": ("kill:rank=0,after=1",)}, {"retry": 1}])
def test_a_pipeline_takes_neither_the_drill_nor_retries_on_slurm(tmp_path, given):
    from amldist.backends import get_backend
    from amldist.submit.prepare import prepare
    from tests.backends.local.helpers import SAMPLES

    backend = get_backend("slurm")
    with pytest.raises(UserError, match="drill and retry a job on Slurm, not a pipeline's steps"):
        backend.plan(prepare(str(SAMPLES / "pipeline" / "pipeline.yml")),
                     backend.options(run_root=str(tmp_path / "runs"), **given))
