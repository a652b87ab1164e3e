"""RANK and WORLD_SIZE alone, as a per-process launcher sets them (Azure ML ``distribution:
pytorch``, Kubeflow's PyTorchJob, or a person by hand): what env:// reads."""

from __future__ import annotations

from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import DEFAULT_PORT, EnvReader
from .launcher import Launcher


class TorchVars(Launcher):
    """Azure ML sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and NODE_RANK per node and RANK and
    LOCAL_RANK per process, but no LOCAL_WORLD_SIZE, so that one is worked out (see
    ``local_world_size``)."""

    name = "pytorch"
    checks_torch_vars = True  # they are what it reads

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        r = EnvReader(environ)
        return r.has("RANK") and r.has("WORLD_SIZE")

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        rank = r.require_int("rank", "RANK")
        world_size = r.require_int("world_size", "WORLD_SIZE", minimum=1)
        local_rank = r.get_int("local_rank", "LOCAL_RANK")
        node_rank = r.get_int("node_rank", "NODE_RANK")
        local_size = local_world_size(r, rank, local_rank, world_size, node_rank)
        if local_rank is None:
            local_rank = r.derived("local_rank", rank % local_size, "RANK % local world size")
        if node_rank is None:
            node_rank = r.derived("node_rank", rank // local_size, "RANK // local world size")
        num_nodes = r.derived("num_nodes", -(-world_size // local_size), "WORLD_SIZE / local world size")
        # With more than one process only the launcher knows where rank 0 listens; torch would
        # refuse too, so say so first, and by name.
        default_addr = "127.0.0.1" if world_size == 1 else None
        return r.build(
            TorchVars.name, rank=rank, local_rank=local_rank, world_size=world_size,
            local_world_size=local_size, node_rank=node_rank, num_nodes=num_nodes,
            master_addr=r.master_addr(
                default_addr, missing=f"MASTER_ADDR (or MASTER_IP) must be set when WORLD_SIZE={world_size}"),
            master_port=r.master_port(DEFAULT_PORT),
        )


def local_world_size(r: EnvReader, rank: int, local_rank: int | None, world_size: int, node_rank: int | None) -> int:
    """Processes per node, from the most to the least direct evidence:

    1. LOCAL_WORLD_SIZE, when a launcher set it;
    2. WORLD_SIZE / AZUREML_NODE_COUNT (Azure ML containers carry the node count);
    3. on a node after the first, (RANK - LOCAL_RANK) / NODE_RANK, exact for the even layout
       Azure ML and torchrun use;
    4. otherwise one node is assumed (the first node cannot tell); set LOCAL_WORLD_SIZE to be exact.
    """
    size = r.get_int("local_world_size", "LOCAL_WORLD_SIZE", minimum=1)
    if size is not None:
        return size
    nodes = r.get_int("num_nodes", "AZUREML_NODE_COUNT", minimum=1)
    if nodes:
        if world_size % nodes:
            raise DistEnvError(f"WORLD_SIZE={world_size} is not a multiple of AZUREML_NODE_COUNT={nodes}")
        return r.derived("local_world_size", world_size // nodes, "WORLD_SIZE / AZUREML_NODE_COUNT")
    if node_rank and local_rank is not None:
        before, leftover = divmod(rank - local_rank, node_rank)
        if leftover or before < 1:
            raise DistEnvError(
                f"RANK={rank}, LOCAL_RANK={local_rank} and NODE_RANK={node_rank} do not describe an even "
                "layout of processes over nodes; set LOCAL_WORLD_SIZE"
            )
        return r.derived("local_world_size", before, "(RANK - LOCAL_RANK) / NODE_RANK")
    return r.derived("local_world_size", world_size, "WORLD_SIZE (one node assumed; set LOCAL_WORLD_SIZE)")
