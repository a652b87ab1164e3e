"""Every bad or contradictory environment raises DistEnvError naming the variables involved."""

from __future__ import annotations

import json

import pytest

from amldist.runtime import DistEnvError, detect

OMPI = dict(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="1",
            OMPI_COMM_WORLD_LOCAL_SIZE="2")
PYTORCH = dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", MASTER_ADDR="h", MASTER_PORT="5000")
TORCHRUN = dict(PYTORCH, TORCHELASTIC_RUN_ID="r", LOCAL_WORLD_SIZE="2")


def tf_config(cluster: dict, task: dict) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})}


SLURM = dict(SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_LOCALID="1", SLURM_NODEID="0", SLURM_NNODES="1",
             SLURM_TASKS_PER_NODE="2", SLURM_NODELIST="n1")

CASES = {
    # non-integer or negative values
    "rank not a number": (dict(PYTORCH, RANK="one"), ["RANK", "'one'"]),
    "negative rank": (dict(PYTORCH, RANK="-1"), ["RANK", "'-1'"]),
    "fractional world size": (dict(PYTORCH, WORLD_SIZE="2.0"), ["WORLD_SIZE"]),
    "negative ompi local rank": (dict(OMPI, OMPI_COMM_WORLD_LOCAL_RANK="-1"), ["OMPI_COMM_WORLD_LOCAL_RANK"]),
    "bad master port": (dict(PYTORCH, MASTER_PORT="http"), ["MASTER_PORT"]),
    "master port out of range": (dict(PYTORCH, MASTER_PORT="70000"), ["MASTER_PORT=70000"]),
    "zero world size": (dict(PYTORCH, RANK="0", WORLD_SIZE="0"), ["WORLD_SIZE=0"]),
    "zero local size": (dict(OMPI, OMPI_COMM_WORLD_LOCAL_SIZE="0"), ["OMPI_COMM_WORLD_LOCAL_SIZE=0"]),
    "slurm node id not a number": (dict(SLURM, SLURM_NODEID="n"), ["SLURM_NODEID"]),
    # rank >= world size, local rank >= local world size
    "rank >= world size": (dict(PYTORCH, RANK="2"), ["RANK=2", "WORLD_SIZE=2"]),
    "ompi rank >= size": (dict(OMPI, OMPI_COMM_WORLD_RANK="2"), ["OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"]),
    "ompi local rank >= local size": (dict(OMPI, OMPI_COMM_WORLD_LOCAL_RANK="2"),
                                      ["OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2"]),
    "torchrun local rank >= local world size": (dict(TORCHRUN, LOCAL_RANK="2"), ["LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"]),
    "slurm local id >= tasks on node": (dict(SLURM, SLURM_LOCALID="2"), ["SLURM_LOCALID=2", "SLURM_TASKS_PER_NODE"]),
    "slurm node id >= nodes": (dict(SLURM, SLURM_NODEID="1", SLURM_TASKS_PER_NODE="2(x2)"),
                               ["SLURM_NODEID=1", "SLURM_NNODES=1"]),
    "slurm node id without tasks entry": (dict(SLURM, SLURM_NODEID="1", SLURM_NNODES="2"),
                                          ["SLURM_NODEID=1", "SLURM_TASKS_PER_NODE"]),
    "local size > world size": (dict(PYTORCH, LOCAL_WORLD_SIZE="4"), ["LOCAL_WORLD_SIZE=4", "WORLD_SIZE=2"]),
    "node rank >= nodes": (dict(PYTORCH, LOCAL_WORLD_SIZE="2", NODE_RANK="1"), ["NODE_RANK=1"]),
    "uneven mpi layout": (dict(OMPI, OMPI_COMM_WORLD_SIZE="3"),
                          ["OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_SIZE=2"]),
    "uneven azureml node count": (dict(PYTORCH, WORLD_SIZE="3", AZUREML_NODE_COUNT="2"),
                                  ["WORLD_SIZE=3", "AZUREML_NODE_COUNT=2"]),
    "uneven pytorch layout": (dict(PYTORCH, RANK="4", LOCAL_RANK="0", WORLD_SIZE="6", NODE_RANK="3"),
                              ["RANK=4", "LOCAL_RANK=0", "NODE_RANK=3", "LOCAL_WORLD_SIZE"]),
    # two launchers that disagree
    "RANK vs OMPI rank": (dict(OMPI, RANK="0", WORLD_SIZE="2", MASTER_ADDR="h"), ["RANK=0", "OMPI_COMM_WORLD_RANK=1"]),
    "LOCAL_RANK vs OMPI local rank": (dict(OMPI, LOCAL_RANK="0"), ["LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_RANK=1"]),
    "WORLD_SIZE vs SLURM_NTASKS": (dict(SLURM, RANK="1", WORLD_SIZE="4", MASTER_ADDR="h"),
                                   ["WORLD_SIZE=4", "SLURM_NTASKS=2"]),
    "LOCAL_WORLD_SIZE vs MPI_LOCALNRANKS": (dict(PMI_RANK="0", PMI_SIZE="2", MPI_LOCALRANKID="0", MPI_LOCALNRANKS="2",
                                                 LOCAL_WORLD_SIZE="1"), ["LOCAL_WORLD_SIZE=1", "MPI_LOCALNRANKS=2"]),
    "RANK vs TF_CONFIG": (dict(tf_config({"worker": ["a:1", "b:1"]}, {"type": "worker", "index": 1}),
                               RANK="0", WORLD_SIZE="2", MASTER_ADDR="a"), ["RANK=0", "TF_CONFIG"]),
    "MASTER_ADDR vs MASTER_IP": (dict(PYTORCH, MASTER_IP="other"), ["MASTER_ADDR='h'", "MASTER_IP='other'"]),
    "stray LOCAL_RANK without launcher": (dict(LOCAL_RANK="1"), ["LOCAL_RANK=1", "world of one"]),
    "RANK without WORLD_SIZE": (dict(RANK="1"), ["RANK", "WORLD_SIZE"]),
    "WORLD_SIZE without RANK": (dict(WORLD_SIZE="2"), ["WORLD_SIZE", "RANK"]),
    # missing pieces a launcher always sets
    "ompi without local size": (dict(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1"),
                                ["OMPI_COMM_WORLD_LOCAL_RANK"]),
    "mpi several nodes without master": (dict(OMPI, OMPI_COMM_WORLD_SIZE="4"),
                                         ["MASTER_ADDR", "AZ_BATCH_MASTER_NODE", "OMPI_COMM_WORLD_SIZE=4"]),
    "pytorch several ranks without master": ({"RANK": "0", "WORLD_SIZE": "2"}, ["MASTER_ADDR", "WORLD_SIZE=2"]),
    "torchrun without local world size": (dict(PYTORCH, TORCHELASTIC_RUN_ID="r"),
                                          ["LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID"]),
    "slurm without tasks per node": (dict(SLURM, SLURM_TASKS_PER_NODE=""),
                                     ["SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"]),
    "slurm several nodes without node list": (
        dict(SLURM, SLURM_NODELIST="", SLURM_NNODES="2", SLURM_TASKS_PER_NODE="1(x2)"),
        ["MASTER_ADDR", "SLURM_NODELIST", "SLURM_NNODES=2"]),
    "slurm bad tasks per node": (dict(SLURM, SLURM_TASKS_PER_NODE="4(2)"), ["SLURM_TASKS_PER_NODE='4(2)'"]),
    "slurm bad node list": (dict(SLURM, SLURM_NODELIST="gpu[1-"), ["SLURM_NODELIST='gpu[1-'"]),
    # TF_CONFIG
    "tf_config not json": (dict(TF_CONFIG="{cluster: x"), ["TF_CONFIG", "JSON"]),
    "tf_config not an object": (dict(TF_CONFIG="[1, 2]"), ["TF_CONFIG", "cluster"]),
    "tf_config bad worker list": (tf_config({"worker": "a:1"}, {"type": "worker"}), ["TF_CONFIG", "worker"]),
    "tf_config bad index": (tf_config({"worker": ["a:1"]}, {"type": "worker", "index": "0"}), ["TF_CONFIG", "index"]),
    "tf_config parameter server": (tf_config({"worker": ["a:1"], "ps": ["p:1"]}, {"type": "ps", "index": 0}),
                                   ["TF_CONFIG", "'ps'"]),
    "tf_config index out of range": (tf_config({"worker": ["a:1"]}, {"type": "worker", "index": 3}),
                                     ["TF_CONFIG", "'worker' 3"]),
}


@pytest.mark.parametrize("environ, names", CASES.values(), ids=CASES.keys())
def test_error_names_the_variables(environ, names):
    with pytest.raises(DistEnvError) as caught:
        detect(environ)
    message = str(caught.value)
    assert "\n" not in message
    for name in names:
        assert name in message, f"{name!r} missing from {message!r}"


def test_error_is_a_value_error():
    assert issubclass(DistEnvError, ValueError)
