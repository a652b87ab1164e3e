"""detect(): which launcher started this process. ``LAUNCHERS`` below is the one place that
says in which order they are tried, and why."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import EnvReader
from .launcher import Launcher, torch_var_disagreeing
from .mpi import IntelMpi, Mvapich, OpenMpi
from .slurm import Slurm
from .tfconfig import TfConfig
from .torch_vars import TorchVars
from .torchelastic import TorchElastic
from .world_of_one import WorldOfOne

# The detection order: the first launcher whose variables are there wins.
LAUNCHERS: tuple[type[Launcher], ...] = (
    # torchrun spawned this process itself, so its variables describe this worker; MPI or Slurm
    # variables beside them were inherited from whatever started torchrun's agent.
    TorchElastic,
    # The MPIs, most specific names first: Open MPI first because Azure ML's MPI images use it
    # (and it also sets PMIX_RANK), then MVAPICH, then the PMI_* names several MPIs share.
    OpenMpi,
    Mvapich,
    IntelMpi,
    # After MPI because an mpirun inside a Slurm allocation is what started the ranks (the
    # SLURM_* variables then describe the allocation).
    Slurm,
    # Azure ML's ``distribution: tensorflow``; last of the launchers, because it is the weakest
    # sign that this process belongs to a torch world.
    TfConfig,
    # RANK and WORLD_SIZE alone (Azure ML ``distribution: pytorch``, Kubeflow, by hand): after
    # the launchers above, which may have them too (stacked, or copied by a helper script).
    TorchVars,
    # Nothing: a world of one (its detect() is always true).
    WorldOfOne,
)


def detect(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The DistEnv that ``environ`` (default: ``os.environ``) describes. Reads only; writes nothing.

    Raises DistEnvError, naming the variables, for malformed or contradictory environments.
    """
    environ = os.environ if environ is None else environ
    launcher = next(candidate for candidate in LAUNCHERS if candidate.detect(environ))
    reader = EnvReader(environ)
    env = launcher.read(reader)
    if not launcher.checks_torch_vars:
        # RANK & co. beside it (stacked launchers, a helper script): they must say the same; then
        # the launcher's own view wins, as it also knows the node layout.
        stray = torch_var_disagreeing(environ, env)
        if stray:
            var, field, value = stray
            raise DistEnvError(
                f"launchers disagree: {var}={value} but {reader.describe(field, getattr(env, field))}; "
                "start the script with one launcher, or unset the other one's variables")
    return env
