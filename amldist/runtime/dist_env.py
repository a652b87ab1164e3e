"""DistEnv, what one process learns about its place in the world, and DistEnvError, the one
error every missing, malformed or contradictory environment ends in."""

from __future__ import annotations

import dataclasses


class DistEnvError(ValueError):
    """The environment is missing, malformed or contradictory; the message (one line) names the variables."""


@dataclasses.dataclass(frozen=True)
class DistEnv:
    """One process's place in a distributed world, as a launcher described it."""

    launcher: str
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    num_nodes: int
    master_addr: str
    master_port: int

    def as_dict(self) -> dict:
        """Every field by name, in declaration order (the JSON that ``--print`` shows)."""
        return dataclasses.asdict(self)

    def to_env(self) -> dict[str, str]:
        """The variables ``init_process_group(init_method="env://")`` and most scripts read."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "NODE_RANK": str(self.node_rank),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }
