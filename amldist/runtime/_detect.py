"""detect(): which launcher started this process, in the order the package docstring explains."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ._env import DEFAULT_PORT, DistEnv, DistEnvError, EnvReader, parse_int
from .mpi import MVAPICH, OPEN_MPI, PMI
from .slurm import Slurm
from .tfconfig import TfConfig
from .torch_env import PytorchEnv, TorchElastic

# After torchrun, most specific first: mpirun before Slurm because an mpirun inside a Slurm
# allocation is the one that started the ranks (the SLURM_* variables then describe the
# allocation), TF_CONFIG last because it is the weakest sign that this process belongs to a
# torch world.
LAUNCHERS = (OPEN_MPI, MVAPICH, PMI, Slurm, TfConfig)

# torch's variables and the DistEnv fields they must agree with when one of LAUNCHERS is there.
_TORCH_VARS = (("RANK", "rank"), ("WORLD_SIZE", "world_size"), ("LOCAL_RANK", "local_rank"),
               ("LOCAL_WORLD_SIZE", "local_world_size"))

NO_LAUNCHER = "none"


def detect(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The DistEnv that ``environ`` (default: ``os.environ``) describes. Reads only; writes nothing.

    Raises DistEnvError, naming the variables, for malformed or contradictory environments.
    """
    environ = os.environ if environ is None else environ
    if TorchElastic.detect(environ):
        # torchrun spawned this process itself; any MPI or Slurm variables were inherited from
        # whatever started torchrun and describe that agent, not this worker.
        return TorchElastic.read(EnvReader(environ))
    launcher = next((candidate for candidate in LAUNCHERS if candidate.detect(environ)), None)
    if launcher is not None:
        reader = EnvReader(environ)
        env = launcher.read(reader)
        # RANK & co. beside it (stacked launchers, a helper script): they must say the same; then
        # the launcher's own view wins, as it also knows the node layout.
        _check_torch_vars(environ, env, lambda var, field: (
            f"launchers disagree: {var}={environ[var].strip()} but {reader.describe(field, getattr(env, field))}; "
            "start the script with one launcher, or unset the other one's variables"))
        return env
    if PytorchEnv.detect(environ):
        return PytorchEnv.read(EnvReader(environ))
    return _world_of_one(environ)


def _world_of_one(environ: Mapping[str, str]) -> DistEnv:
    r = EnvReader(environ)
    if r.has("RANK") != r.has("WORLD_SIZE"):
        given, missing = ("RANK", "WORLD_SIZE") if r.has("RANK") else ("WORLD_SIZE", "RANK")
        raise DistEnvError(f"{given} is set but {missing} is not; set both, or neither for a single process")
    env = r.build(
        NO_LAUNCHER, rank=0, local_rank=0, world_size=1, local_world_size=1, node_rank=0, num_nodes=1,
        master_addr=r.master_addr("127.0.0.1"), master_port=r.master_port(DEFAULT_PORT),
    )
    _check_torch_vars(environ, env, lambda var, field: (
        f"{var}={environ[var].strip()} is set but no launcher variables were found, and in a world of one "
        f"{field.replace('_', ' ')} is {getattr(env, field)}; unset {var} or start the script with a launcher"))
    return env


def _check_torch_vars(environ: Mapping[str, str], env: DistEnv, message) -> None:
    """Stacked launchers (torch variables left over from another launcher, or set by hand, on top
    of mpirun's) must agree, or ranks pick wrong GPUs and peers, and the job hangs."""
    r = EnvReader(environ)
    for var, field in _TORCH_VARS:
        if r.has(var) and parse_int(var, environ[var]) != getattr(env, field):
            raise DistEnvError(message(var, field))
