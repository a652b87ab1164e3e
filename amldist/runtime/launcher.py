"""The launcher protocol: one small class per launcher (as Lightning fabric's
``plugins/environments/`` has), used as the class itself, never instantiated.

- ``name``: what ``DistEnv.launcher`` and ``--print`` say;
- ``detect(environ)``: whether this launcher's variables are there (cheap, reads only, never
  raises: a malformed value is found by ``read``);
- ``read(reader)``: the checked DistEnv, or DistEnvError naming the variables;
- ``checks_torch_vars``: False when ``read`` ignores RANK, WORLD_SIZE, LOCAL_RANK and
  LOCAL_WORLD_SIZE; ``detection.detect`` then requires any of them that are set to agree.

``detection.LAUNCHERS`` is the order they are tried in.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping

from .dist_env import DistEnv
from .env_reader import EnvReader, parse_int

# torch's variables and the DistEnv fields they describe.
TORCH_VARS = (("RANK", "rank"), ("WORLD_SIZE", "world_size"), ("LOCAL_RANK", "local_rank"),
              ("LOCAL_WORLD_SIZE", "local_world_size"))


class Launcher(abc.ABC):
    name: str = ""
    checks_torch_vars: bool = False

    @staticmethod
    @abc.abstractmethod
    def detect(environ: Mapping[str, str]) -> bool:
        """Whether this launcher started the process (its variables are set)."""

    @staticmethod
    @abc.abstractmethod
    def read(r: EnvReader) -> DistEnv:
        """The DistEnv its variables describe; DistEnvError when they are malformed."""


def torch_var_disagreeing(environ: Mapping[str, str], env: DistEnv) -> tuple[str, str, int] | None:
    """The first ``(variable, field, its value)`` of TORCH_VARS that is set and differs from ``env``.

    Stacked launchers (torch variables left over from another launcher, or set by hand, on top
    of mpirun's) must agree, or ranks pick wrong GPUs and peers, and the job hangs. A value that
    is not a number is a DistEnvError of its own.
    """
    r = EnvReader(environ)
    for var, field in TORCH_VARS:
        if r.has(var):
            value = parse_int(var, environ[var])
            if value != getattr(env, field):
                return var, field, value
    return None
