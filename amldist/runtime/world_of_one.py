"""No launcher at all: a world of one process (a script run by hand, a notebook)."""

from __future__ import annotations

from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import DEFAULT_PORT, EnvReader
from .launcher import Launcher, torch_var_disagreeing


class WorldOfOne(Launcher):
    name = "none"
    checks_torch_vars = True  # with its own message: no launcher is there to disagree with

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return True  # the last resort

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        if r.has("RANK") != r.has("WORLD_SIZE"):
            given, missing = ("RANK", "WORLD_SIZE") if r.has("RANK") else ("WORLD_SIZE", "RANK")
            raise DistEnvError(f"{given} is set but {missing} is not; set both, or neither for a single process")
        env = r.build(
            WorldOfOne.name, rank=0, local_rank=0, world_size=1, local_world_size=1, node_rank=0, num_nodes=1,
            master_addr=r.master_addr("127.0.0.1"), master_port=r.master_port(DEFAULT_PORT),
        )
        stray = torch_var_disagreeing(r.environ, env)
        if stray:
            var, field, value = stray
            raise DistEnvError(
                f"{var}={value} is set but no launcher variables were found, and in a world of one "
                f"{field.replace('_', ' ')} is {getattr(env, field)}; unset {var} or start the script with a launcher")
        return env
