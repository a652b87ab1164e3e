"""detect(): every launcher's variables map to the right DistEnv, in the documented order."""

from __future__ import annotations

import json

import pytest

from amldist.runtime import DistEnv, detect


def openmpi(rank: int, size: int, local_rank: int, local_size: int, **extra: str) -> dict[str, str]:
    return dict(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(size),
                OMPI_COMM_WORLD_LOCAL_RANK=str(local_rank), OMPI_COMM_WORLD_LOCAL_SIZE=str(local_size), **extra)


def fields(env: DistEnv, *names: str) -> tuple:
    return tuple(getattr(env, name) for name in names)


LAYOUT = ("rank", "local_rank", "world_size", "local_world_size", "node_rank", "num_nodes")
MASTER = ("master_addr", "master_port")


def test_nothing_set_is_a_world_of_one_on_loopback():
    env = detect({})
    assert env == DistEnv("none", 0, 0, 1, 1, 0, 1, "127.0.0.1", 29500)


def test_world_of_one_keeps_a_given_master_port():
    assert detect({"MASTER_PORT": "1234"}).master_port == 1234


def test_detect_reads_os_environ_by_default(clean_os_environ, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "10.1.1.1")
    assert fields(detect(), "launcher", "rank", "world_size") == ("pytorch", 1, 2)


def test_torchrun_variables():
    env = detect(dict(TORCHELASTIC_RUN_ID="abc", RANK="5", LOCAL_RANK="1", WORLD_SIZE="8", LOCAL_WORLD_SIZE="4",
                      GROUP_RANK="1", GROUP_WORLD_SIZE="2", MASTER_ADDR="node0", MASTER_PORT="29400"))
    assert env.launcher == "torchrun"
    assert fields(env, *LAYOUT, *MASTER) == (5, 1, 8, 4, 1, 2, "node0", 29400)


def test_torchrun_inside_mpirun_follows_torchrun():
    # mpirun started one torchrun agent per node; the agent spawned this worker.
    env = detect(dict(openmpi(1, 2, 0, 1), TORCHELASTIC_RUN_ID="x", RANK="6", LOCAL_RANK="2", WORLD_SIZE="8",
                      LOCAL_WORLD_SIZE="4", GROUP_RANK="1", GROUP_WORLD_SIZE="2", MASTER_ADDR="n0", MASTER_PORT="1"))
    assert fields(env, "launcher", "rank", "local_rank", "node_rank") == ("torchrun", 6, 2, 1)


def test_torchrun_without_group_variables_derives_the_node():
    env = detect(dict(TORCHELASTIC_RUN_ID="x", RANK="5", LOCAL_RANK="1", WORLD_SIZE="8", LOCAL_WORLD_SIZE="4",
                      MASTER_ADDR="n0", MASTER_PORT="1"))
    assert fields(env, "node_rank", "num_nodes") == (1, 2)


def test_azureml_pytorch_variables_with_node_count():
    env = detect(dict(RANK="6", LOCAL_RANK="2", WORLD_SIZE="8", NODE_RANK="1", MASTER_ADDR="10.0.0.4",
                      MASTER_PORT="6105", AZUREML_NODE_COUNT="2"))
    assert env.launcher == "pytorch"
    assert fields(env, *LAYOUT, *MASTER) == (6, 2, 8, 4, 1, 2, "10.0.0.4", 6105)


@pytest.mark.parametrize("extra, expected_local_world_size", [
    ({"LOCAL_WORLD_SIZE": "4"}, 4),                           # given
    ({"AZUREML_NODE_COUNT": "2"}, 4),                         # world / nodes
    ({}, 4),                                                  # (rank - local_rank) / node_rank on node 1
])
def test_pytorch_local_world_size_on_a_later_node(extra, expected_local_world_size):
    env = detect(dict(RANK="5", LOCAL_RANK="1", WORLD_SIZE="8", NODE_RANK="1", MASTER_ADDR="a", **extra))
    assert env.local_world_size == expected_local_world_size
    assert env.num_nodes == 8 // expected_local_world_size


def test_pytorch_on_first_node_without_hints_assumes_one_node():
    env = detect(dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="4", NODE_RANK="0", MASTER_ADDR="a"))
    assert fields(env, "local_world_size", "num_nodes") == (4, 1)


def test_pytorch_without_local_rank_or_node_rank_derives_them():
    env = detect(dict(RANK="6", WORLD_SIZE="8", LOCAL_WORLD_SIZE="4", MASTER_ADDR="a"))
    assert fields(env, "local_rank", "node_rank", "num_nodes") == (2, 1, 2)


def test_master_ip_is_an_alias_of_master_addr():
    env = detect(dict(RANK="0", LOCAL_RANK="0", WORLD_SIZE="2", MASTER_IP="10.9.9.9"))
    assert fields(env, *MASTER) == ("10.9.9.9", 29500)


def test_equal_master_addr_and_master_ip_are_fine():
    assert detect(dict(MASTER_ADDR="h", MASTER_IP="h")).master_addr == "h"


def test_pytorch_world_of_one_needs_no_master_addr():
    assert detect(dict(RANK="0", WORLD_SIZE="1")).master_addr == "127.0.0.1"


def test_openmpi_several_nodes_uses_batch_master_address_but_not_its_port():
    env = detect(openmpi(5, 8, 1, 4, AZ_BATCH_MASTER_NODE="10.0.0.4:6000", OMPI_COMM_WORLD_NODE_RANK="1"))
    assert env.launcher == "openmpi"
    # node_rank = 5 // 4 = 1 regardless of OMPI_COMM_WORLD_NODE_RANK
    assert fields(env, *LAYOUT, *MASTER) == (5, 1, 8, 4, 1, 2, "10.0.0.4", 6105)


def test_openmpi_node_rank_never_comes_from_ompi_node_rank():
    env = detect(openmpi(6, 8, 2, 4, AZ_BATCH_MASTER_NODE="m:1", OMPI_COMM_WORLD_NODE_RANK="2"))
    assert env.node_rank == 1


def test_openmpi_several_nodes_master_port_from_environment_wins():
    env = detect(openmpi(0, 8, 0, 4, AZ_BATCH_MASTER_NODE="10.0.0.4:6000", MASTER_PORT="7000"))
    assert env.master_port == 7000


def test_openmpi_one_node_uses_azureml_mpi_master_node_and_54965():
    env = detect(openmpi(2, 4, 2, 4, AZ_BATCHAI_MPI_MASTER_NODE="10.0.0.7", AZ_BATCH_MASTER_NODE="10.0.0.4:6000"))
    assert fields(env, *LAYOUT, *MASTER) == (2, 2, 4, 4, 0, 1, "10.0.0.7", 54965)


def test_openmpi_one_node_without_any_master_variable_uses_loopback():
    env = detect(openmpi(1, 2, 1, 2))
    assert fields(env, *MASTER) == ("127.0.0.1", 54965)


def test_openmpi_master_addr_from_environment_wins():
    env = detect(openmpi(0, 8, 0, 4, MASTER_ADDR="10.1.2.3", AZ_BATCH_MASTER_NODE="10.0.0.4:6000"))
    assert env.master_addr == "10.1.2.3"


def test_openmpi_per_node_launch_makes_rank_the_node_rank():
    env = detect(openmpi(3, 4, 0, 1, AZ_BATCH_MASTER_NODE="m:1"))
    assert fields(env, "node_rank", "num_nodes", "local_world_size") == (3, 4, 1)


def test_agreeing_torch_variables_beside_mpirun_keep_mpis_node_layout():
    # e.g. a helper copied OMPI_* into RANK & co. and took a wrong NODE_RANK; the export fixes it
    env = detect(openmpi(5, 8, 1, 4, AZ_BATCH_MASTER_NODE="m:1", RANK="5", WORLD_SIZE="8", LOCAL_RANK="1",
                         NODE_RANK="3", MASTER_ADDR="m", MASTER_PORT="6105"))
    assert fields(env, "launcher", "node_rank", "num_nodes", "local_world_size") == ("openmpi", 1, 2, 4)


def test_mvapich_variables():
    env = detect(dict(MV2_COMM_WORLD_RANK="3", MV2_COMM_WORLD_SIZE="4", MV2_COMM_WORLD_LOCAL_RANK="1",
                      MV2_COMM_WORLD_LOCAL_SIZE="2", MASTER_ADDR="m"))
    assert env.launcher == "mvapich"
    assert fields(env, *LAYOUT, *MASTER) == (3, 1, 4, 2, 1, 2, "m", 6105)


@pytest.mark.parametrize("rank_var", ["PMI_RANK", "PMIX_RANK"])
def test_intel_mpi_and_mpich_variables(rank_var):
    env = detect({rank_var: "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "2", "MPI_LOCALNRANKS": "4"})
    assert env.launcher == "pmi"
    assert fields(env, *LAYOUT, *MASTER) == (2, 2, 4, 4, 0, 1, "127.0.0.1", 54965)


def test_mvapich_comes_before_the_pmi_names_its_hydra_also_sets():
    env = detect(dict(MV2_COMM_WORLD_RANK="3", MV2_COMM_WORLD_SIZE="4", MV2_COMM_WORLD_LOCAL_RANK="1",
                      MV2_COMM_WORLD_LOCAL_SIZE="2", PMI_RANK="3", PMI_SIZE="4", MASTER_ADDR="m"))
    assert fields(env, "launcher", "rank", "local_rank") == ("mvapich", 3, 1)


def test_openmpi_several_nodes_batch_master_without_a_port_is_the_address():
    assert detect(openmpi(5, 8, 1, 4, AZ_BATCH_MASTER_NODE=" 10.0.0.4 ")).master_addr == "10.0.0.4"


def test_openmpi_comes_before_pmix_that_open_mpi_also_sets():
    assert detect(openmpi(1, 2, 1, 2, PMIX_RANK="1", PMI_SIZE="2")).launcher == "openmpi"


def test_mpirun_inside_slurm_allocation_follows_mpirun():
    env = detect(dict(openmpi(3, 4, 1, 2, AZ_BATCH_MASTER_NODE="n1:5"), SLURM_PROCID="1", SLURM_NTASKS="2",
                      SLURM_LOCALID="0", SLURM_NODEID="1", SLURM_NNODES="2", SLURM_TASKS_PER_NODE="1(x2)"))
    assert fields(env, "launcher", "rank") == ("openmpi", 3)


def slurm(**extra: str) -> dict[str, str]:
    base = dict(SLURM_JOB_ID="77", SLURM_PROCID="5", SLURM_LOCALID="1", SLURM_NTASKS="10", SLURM_NODEID="1",
                SLURM_NNODES="3", SLURM_TASKS_PER_NODE="4(x2),2", SLURM_NODELIST="gpu[001-002],cpu05")
    base.update(extra)
    return {name: value for name, value in base.items() if value}


def test_slurm_variables():
    env = detect(slurm())
    assert env.launcher == "slurm"
    assert fields(env, *LAYOUT, *MASTER) == (5, 1, 10, 4, 1, 3, "gpu001", 29500)


def test_slurm_uneven_tasks_per_node_reads_this_nodes_count():
    env = detect(slurm(SLURM_PROCID="9", SLURM_LOCALID="1", SLURM_NODEID="2"))
    assert fields(env, "local_world_size", "node_rank") == (2, 2)


def test_slurm_ntasks_per_node_when_tasks_per_node_is_absent():
    env = detect(slurm(SLURM_TASKS_PER_NODE="", SLURM_NTASKS_PER_NODE="4"))
    assert env.local_world_size == 4


def test_slurm_step_node_list_before_job_node_list():
    env = detect(slurm(SLURM_NODELIST="b[07-09]", SLURM_JOB_NODELIST="a[01-09]"))
    assert env.master_addr == "b07"


def test_slurm_job_node_list_and_node_count_from_it():
    env = detect(slurm(SLURM_NODELIST="", SLURM_NNODES="", SLURM_JOB_NODELIST="x[1-2],y"))
    assert fields(env, "master_addr", "num_nodes") == ("x1", 3)


def test_slurm_master_variables_win():
    env = detect(slurm(MASTER_ADDR="10.0.0.1", MASTER_PORT="1111"))
    assert fields(env, *MASTER) == ("10.0.0.1", 1111)


def test_slurm_single_node_without_node_list_uses_loopback():
    env = detect(dict(SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_LOCALID="1", SLURM_NODEID="0", SLURM_NNODES="1",
                      SLURM_NTASKS_PER_NODE="2"))
    assert env.master_addr == "127.0.0.1"


def tf_config(task_type: str, index: int, cluster: dict) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index},
                                     "environment": "cloud"})}


def test_tf_config_workers_only():
    cluster = {"worker": ["host0:2222", "host1:2222"]}
    env = detect(tf_config("worker", 1, cluster))
    assert env.launcher == "tf_config"
    assert fields(env, *LAYOUT, *MASTER) == (1, 0, 2, 1, 1, 2, "host0", 2222)


def test_tf_config_chief_first_then_workers_and_parameter_servers_left_out():
    cluster = {"chief": ["c:2000"], "worker": ["w0:2001", "w1:2002"], "ps": ["p:2003"]}
    ranks = [detect(tf_config(kind, i, cluster)).rank for kind, i in (("chief", 0), ("worker", 0), ("worker", 1))]
    assert ranks == [0, 1, 2]
    env = detect(tf_config("worker", 1, cluster))
    assert fields(env, "world_size", "master_addr", "master_port") == (3, "c", 2000)


def test_tf_config_tasks_on_one_host_share_a_node():
    cluster = {"worker": ["127.0.0.1:4000", "127.0.0.1:4001", "10.0.0.2:4000"]}
    env = detect(tf_config("worker", 1, cluster))
    assert fields(env, *LAYOUT) == (1, 1, 3, 2, 0, 2)


def test_tf_config_first_task_without_a_port_gives_torchs_default_port():
    env = detect(tf_config("worker", 1, {"worker": ["host0", "host1:2222"]}))
    assert fields(env, *MASTER) == ("host0", 29500)


def test_slurm_comes_before_tf_config():
    assert detect({**slurm(), **tf_config("worker", 0, {"worker": ["h:1"]})}).launcher == "slurm"


def test_tf_config_master_port_from_environment_wins():
    assert detect({**tf_config("worker", 0, {"worker": ["h:1"]}), "MASTER_PORT": "5"}).master_port == 5


def test_to_env_and_as_dict():
    env = DistEnv("openmpi", 5, 1, 8, 4, 1, 2, "10.0.0.4", 6105)
    assert env.to_env() == {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
                            "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105"}
    assert list(env.as_dict()) == ["launcher", "rank", "local_rank", "world_size", "local_world_size",
                                   "node_rank", "num_nodes", "master_addr", "master_port"]
    assert env.as_dict()["master_port"] == 6105


def test_dist_env_is_frozen():
    env = detect({})
    with pytest.raises(AttributeError):
        env.rank = 3


def test_detect_writes_nothing():
    environ = openmpi(1, 2, 1, 2, TORCHELASTIC_USE_AGENT_STORE="True")
    before = dict(environ)
    detect(environ)
    assert environ == before
