"""torchrun (and torch.distributed.launch, which is torchrun underneath): it spawned this
process itself and says so with TORCHELASTIC_RUN_ID; its variables are torch's own."""

from __future__ import annotations

from collections.abc import Mapping

from .dist_env import DistEnv
from .env_reader import DEFAULT_PORT, EnvReader
from .launcher import Launcher


class TorchElastic(Launcher):
    name = "torchrun"
    checks_torch_vars = True  # they are what it reads

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return EnvReader(environ).has("TORCHELASTIC_RUN_ID")

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        why = " (torchrun sets it; is TORCHELASTIC_RUN_ID left over from another job?)"
        rank = r.require_int("rank", "RANK", context=why)
        world_size = r.require_int("world_size", "WORLD_SIZE", minimum=1, context=why)
        local_rank = r.require_int("local_rank", "LOCAL_RANK", context=why)
        local_world_size = r.require_int("local_world_size", "LOCAL_WORLD_SIZE", minimum=1, context=why)
        # GROUP_* are torchrun's names for the node (agent) rank and count.
        node_rank = r.get_int("node_rank", "GROUP_RANK")
        num_nodes = r.get_int("num_nodes", "GROUP_WORLD_SIZE", minimum=1)
        if node_rank is None:
            node_rank = r.derived("node_rank", rank // local_world_size, "RANK // LOCAL_WORLD_SIZE")
        if num_nodes is None:
            num_nodes = r.derived("num_nodes", -(-world_size // local_world_size), "WORLD_SIZE / LOCAL_WORLD_SIZE")
        return r.build(
            TorchElastic.name, rank=rank, local_rank=local_rank, world_size=world_size,
            local_world_size=local_world_size, node_rank=node_rank, num_nodes=num_nodes,
            master_addr=r.master_addr(None, missing=f"MASTER_ADDR must be set{why}"),
            master_port=r.master_port(DEFAULT_PORT),
        )
