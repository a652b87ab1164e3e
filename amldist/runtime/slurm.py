"""Slurm: each task started by ``srun`` carries its place in SLURM_* variables; the master is
the first host of the node list (read by ``slurm_lists``, without expanding it)."""

from __future__ import annotations

from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import DEFAULT_PORT, EnvReader, quote
from .launcher import Launcher
from .slurm_lists import HostList, TaskCounts


class Slurm(Launcher):
    """Run one task per rank with ``srun``: a batch script itself looks like rank 0 of the whole allocation."""

    name = "slurm"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        r = EnvReader(environ)
        return r.has("SLURM_PROCID") and r.has("SLURM_NTASKS")

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        why = " when SLURM_PROCID is (srun sets both)"
        rank = r.require_int("rank", "SLURM_PROCID")
        world_size = r.require_int("world_size", "SLURM_NTASKS", minimum=1)
        local_rank = r.require_int("local_rank", "SLURM_LOCALID", context=why)
        node_rank = r.require_int("node_rank", "SLURM_NODEID", context=why)
        # srun sets SLURM_NODELIST to the step's nodes; SLURM_JOB_NODELIST is the whole job's.
        # Rank 0 runs on the step's first node, so the step's list comes first.
        list_var = r.first("SLURM_NODELIST", "SLURM_JOB_NODELIST")
        hosts = HostList(r.environ[list_var], list_var) if list_var else None
        num_nodes = r.get_int("num_nodes", "SLURM_NNODES", minimum=1)
        if num_nodes is None:
            if not hosts or not hosts.count:
                raise DistEnvError(f"SLURM_NNODES or SLURM_NODELIST must be set{why}")
            num_nodes = r.derived("num_nodes", hosts.count, list_var)
        local_world_size = tasks_on_node(r, node_rank)
        first_host = hosts.first if hosts else None
        default_addr = first_host or ("127.0.0.1" if num_nodes == 1 else None)
        return r.build(
            Slurm.name, rank=rank, local_rank=local_rank, world_size=world_size,
            local_world_size=local_world_size, node_rank=node_rank, num_nodes=num_nodes,
            master_addr=r.master_addr(
                default_addr, list_var if first_host else "default",
                missing=f"MASTER_ADDR, MASTER_IP or SLURM_NODELIST must be set when SLURM_NNODES={num_nodes}"),
            master_port=r.master_port(DEFAULT_PORT),
        )


def tasks_on_node(r: EnvReader, node_rank: int) -> int:
    # SLURM_TASKS_PER_NODE first: it is per node, so it is right for uneven layouts too.
    if r.has("SLURM_TASKS_PER_NODE"):
        text = r.environ["SLURM_TASKS_PER_NODE"]
        tasks = TaskCounts(text, "SLURM_TASKS_PER_NODE").for_node(node_rank)
        if tasks is None:
            raise DistEnvError(f"SLURM_NODEID={node_rank} has no entry in SLURM_TASKS_PER_NODE={quote(text)}")
        return r.derived("local_world_size", tasks, f"SLURM_TASKS_PER_NODE[{node_rank}]")
    per_node = r.get_int("local_world_size", "SLURM_NTASKS_PER_NODE", minimum=1)
    if per_node is None:
        raise DistEnvError("SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE must be set when SLURM_PROCID is")
    return per_node
