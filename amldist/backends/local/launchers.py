"""The environment each local process gets: what Azure ML's launchers set, and nothing more.

Pure functions (no processes, no files): ``launcher_layout`` lists, for one job, every process
the local backend emulates with the variables Azure ML would give it.

What Azure ML sets, per ``distribution.type`` (see the project's facts on launchers):

- ``pytorch``: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and NODE_RANK per node; RANK and LOCAL_RANK
  per process. Locally MASTER_ADDR is 127.0.0.1 and MASTER_PORT a free port (Azure uses 6105,
  which is often taken on a workstation).
- ``mpi``: Open MPI's OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, plus
  AZ_BATCHAI_MPI_MASTER_NODE on one node or AZ_BATCH_MASTER_NODE ("addr:port") on several.
  On one node the real ``mpirun`` sets the OMPI_* variables (and its own PMIX_*/OMPI_MCA_* ones);
  the emulation of several nodes sets the five OMPI_COMM_WORLD_* variables itself, with
  OMPI_COMM_WORLD_NODE_RANK equal to the local rank as Open MPI defines it (it is *not* the node
  index). The port inside AZ_BATCH_MASTER_NODE belongs to Azure Batch; locally it is a port the
  backend keeps bound while the job runs, so a script that wrongly listens on it fails here as
  it would on Azure.
- ``tensorflow``: TF_CONFIG per task (one process per worker and per parameter server), with
  ``"environment": "cloud"``; locally every task is on 127.0.0.1 with its own free port.

Run information amldist adds, as Azure ML's containers carry it: AZUREML_RUN_ID (the job name)
and AZUREML_NODE_COUNT (instance_count; amldist.runtime uses it to work out LOCAL_WORLD_SIZE,
which Azure's PyTorch launcher does not set).

Every launcher variable inherited from the shell that runs ``amldist submit`` (RANK from an
outer torchrun, SLURM_* from an allocation, OMPI_COMM_WORLD_* from an outer mpirun...) is
removed first, so a local process sees exactly what it would see on Azure.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"

# Inherited variables that describe *another* launcher's world; removed before a rank starts.
LAUNCHER_NAMES = frozenset({
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "MASTER_IP", "TF_CONFIG",
    "AZ_BATCH_MASTER_NODE", "AZ_BATCHAI_MPI_MASTER_NODE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "OMPI_UNIVERSE_SIZE", "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_APP_CTX_NUM_PROCS",
})
LAUNCHER_PREFIXES = (
    "TORCHELASTIC_", "OMPI_COMM_WORLD_", "OMPI_MCA_ess_", "OMPI_MCA_pmix", "OMPI_MCA_orte_", "OMPI_MCA_prte_",
    "PMIX_", "PMI_", "PRTE_", "MV2_COMM_WORLD_", "SLURM_", "AZUREML_",
)


def is_launcher_variable(name: str) -> bool:
    return name in LAUNCHER_NAMES or name.startswith(LAUNCHER_PREFIXES)


def clean_environ(environ) -> dict[str, str]:
    """``environ`` without the variables of any launcher (see the module docstring)."""
    return {k: v for k, v in environ.items() if not is_launcher_variable(k)}


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct TCP ports that were free a moment ago (bound together, then released)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class Slot:
    """One process of the emulated cluster and the variables its launcher gives it."""

    label: str  # "rank 3", "worker 0", "ps 1": how messages name it
    node: int  # emulated node index
    rank: int | None  # global rank (None for TensorFlow tasks: they have types and indices)
    log_name: str  # file name under user_logs/, Azure ML's names
    variables: dict[str, str] = field(default_factory=dict)


@dataclass
class Layout:
    """Every process of a job, plus what the backend must hold while it runs."""

    kind: str  # "pytorch", "mpi", "tensorflow" or "single"
    nodes: int
    slots: list[Slot]
    busy_port: int | None = None  # AZ_BATCH_MASTER_NODE's port, kept bound during the run
    notes: list[str] = field(default_factory=list)


def rank_digits(world: int) -> int:
    """How many digits Azure ML's per-process log names give a rank: 1 alone, else at least 2."""
    return 1 if world == 1 else max(2, len(str(world - 1)))


def process_log_name(rank: int, world: int) -> str:
    """Azure ML's per-process log: ``std_log_process_0.txt`` alone, ``_00``, ``_01``... in a world
    of several (at least two digits, more when the world needs them)."""
    return f"std_log_process_{rank:0{rank_digits(world)}d}.txt"


def pytorch_layout(nodes: int, per_node: int, port: int | None = None) -> Layout:
    world = nodes * per_node
    port = port or free_ports(1)[0]
    slots = []
    for node in range(nodes):
        for local in range(per_node):
            rank = node * per_node + local
            slots.append(Slot(f"rank {rank}", node, rank, process_log_name(rank, world), {
                "MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(port), "WORLD_SIZE": str(world),
                "NODE_RANK": str(node), "RANK": str(rank), "LOCAL_RANK": str(local),
            }))
    return Layout("pytorch", nodes, slots)


def mpi_layout(nodes: int, per_node: int, *, busy_port: int | None = None) -> Layout:
    """Every rank with the OMPI_* variables it would see on its own node (see the docstring)."""
    world = nodes * per_node
    layout = Layout("mpi", nodes, [])
    if nodes == 1:
        master = {"AZ_BATCHAI_MPI_MASTER_NODE": LOOPBACK}
    else:
        layout.busy_port = busy_port or free_ports(1)[0]
        master = {"AZ_BATCH_MASTER_NODE": f"{LOOPBACK}:{layout.busy_port}"}
    for node in range(nodes):
        for local in range(per_node):
            rank = node * per_node + local
            layout.slots.append(Slot(f"rank {rank}", node, rank, process_log_name(rank, world), {
                "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(local), "OMPI_COMM_WORLD_LOCAL_SIZE": str(per_node),
                "OMPI_COMM_WORLD_NODE_RANK": str(local), **master,
            }))
    return layout


def tensorflow_layout(workers: int, parameter_servers: int, ports: list[int] | None = None) -> Layout:
    """One process per task; TF_CONFIG as Azure ML writes it. Log names follow Azure's
    ``std_log_node_<NN>_<type>.txt`` for TensorFlow jobs."""
    ports = ports or free_ports(workers + parameter_servers)
    addresses = [f"{LOOPBACK}:{p}" for p in ports]
    cluster = {"worker": addresses[:workers]}
    if parameter_servers:
        cluster["ps"] = addresses[workers:]
    slots = []
    for task_type, count in (("worker", workers), ("ps", parameter_servers)):
        for index in range(count):
            config = {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}
            slots.append(Slot(f"{task_type} {index}", index, None, f"std_log_node_{index:02d}_{task_type}.txt",
                              {"TF_CONFIG": json.dumps(config, separators=(",", ":"))}))
    return Layout("tensorflow", max(workers, parameter_servers), slots)


def single_layout(nodes: int) -> Layout:
    """No distribution: the command runs once per node with no launcher variables."""
    if nodes == 1:
        return Layout("single", 1, [Slot("process", 0, None, "std_log.txt")])
    return Layout("single", nodes, [Slot(f"node {n}", n, None, f"std_log_node_{n:02d}.txt") for n in range(nodes)])


def run_info(job_name: str, nodes: int) -> dict[str, str]:
    """The AZUREML_* run information every local process gets (see the module docstring)."""
    return {"AZUREML_RUN_ID": job_name, "AZUREML_NODE_COUNT": str(nodes)}
