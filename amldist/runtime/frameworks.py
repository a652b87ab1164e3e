"""amldist.runtime under the frameworks people train with: Lightning, Hugging Face Accelerate, DeepSpeed.

Each framework detects launchers on its own, and each misses a case Azure ML produces (Lightning has
no Azure ML environment, Accelerate stops multi-node under MPI without MASTER_ADDR, DeepSpeed
rewrites MASTER_PORT there). The runtime's detection already reads every launcher; these helpers hand
its answer to the framework, so the world is the launcher's whatever it was:

- **Lightning** (``lightning`` or ``pytorch_lightning``): :func:`lightning_environment` is a Lightning
  ``ClusterEnvironment`` built from :func:`amldist.runtime.detect`::

      env = lightning_environment()
      trainer = Trainer(plugins=[env], num_nodes=env.dist.num_nodes, devices=env.dist.local_world_size, ...)

  Lightning forms the group itself (``creates_processes_externally`` is True: it starts no processes).
  A Trainer whose ``num_nodes`` x ``devices`` is not the launcher's world is refused at start-up by
  ``validate_settings``, and the rank setters refuse a value other than the launcher's: they never
  silently ignore one.
- **Accelerate**: call :func:`amldist.runtime.init_distributed` before ``Accelerator()``. Accelerate
  uses a process group that is already formed (and the RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
  MASTER_PORT the runtime exported), instead of reading the MPI variables itself.
- **DeepSpeed**: ``deepspeed.init_distributed()`` (also called by ``deepspeed.initialize``) uses the
  variables in :data:`DEEPSPEED_READS` as they are when all five are set; when one is missing and
  ``AZUREML_EXPERIMENT_ID`` is set it fills them from Open MPI's, sets MASTER_PORT to 54965 on one
  node and NCCL_SOCKET_IFNAME to ``^docker0,lo`` (deepspeed/comm/comm.py,
  ``patch_aml_env_for_torch_nccl_backend``). Call :func:`export_env` (or ``init_distributed()``, whose
  group DeepSpeed then finds) first: DeepSpeed reads the runtime's values and patches nothing.

Standard library only at import (the runtime is copied alone into job snapshots): Lightning is
imported inside :func:`lightning_environment`.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from .detection import detect
from .dist_env import DistEnv, DistEnvError
from .process_group import export_env as _export_into

# What deepspeed.init_distributed() reads when all are set (its required_env); otherwise it discovers them.
DEEPSPEED_READS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")


def export_env(environ: MutableMapping[str, str] | None = None) -> DistEnv:
    """Detect the launcher and export RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
    MASTER_ADDR and MASTER_PORT into ``environ`` (default ``os.environ``) without forming a group,
    for a framework that forms it itself (DeepSpeed, Accelerate, Lightning)."""
    environ = os.environ if environ is None else environ
    env = detect(environ)
    _export_into(env, environ)
    return env


def _cluster_environment_base():
    """Lightning's ``ClusterEnvironment`` base, from the ``lightning`` package or the older split ones."""
    try:
        from lightning.fabric.plugins.environments import ClusterEnvironment
    except ImportError:
        try:
            from lightning_fabric.plugins.environments import ClusterEnvironment
        except ImportError:
            raise ImportError("lightning_environment() needs Lightning: pip install lightning") from None
    return ClusterEnvironment


def lightning_environment(environ=None):
    """A Lightning ``ClusterEnvironment`` for the world ``environ`` (default ``os.environ``) describes;
    ``.dist`` is the :class:`DistEnv`. DistEnvError for a malformed or contradictory environment."""
    dist = detect(os.environ if environ is None else environ)
    return _environment_class()(dist)


def _environment_class():
    base = _cluster_environment_base()

    class AmldistEnvironment(base):
        """Every value from amldist's launcher detection (torchrun, Azure ML, MPI, Slurm, TF_CONFIG)."""

        def __init__(self, dist: DistEnv):
            super().__init__()
            self.dist = dist

        @property
        def creates_processes_externally(self) -> bool:
            return True  # the launcher started every rank

        @property
        def main_address(self) -> str:
            return self.dist.master_addr

        @property
        def main_port(self) -> int:
            return self.dist.master_port

        @staticmethod
        def detect() -> bool:
            return detect().world_size > 1

        def world_size(self) -> int:
            return self.dist.world_size

        def set_world_size(self, size: int) -> None:
            _same("world size", size, self.dist.world_size)

        def global_rank(self) -> int:
            return self.dist.rank

        def set_global_rank(self, rank: int) -> None:
            _same("global rank", rank, self.dist.rank)

        def local_rank(self) -> int:
            return self.dist.local_rank

        def node_rank(self) -> int:
            return self.dist.node_rank

        def validate_settings(self, num_devices: int, num_nodes: int) -> None:
            if (num_devices, num_nodes) != (self.dist.local_world_size, self.dist.num_nodes):
                raise DistEnvError(
                    f"Trainer(devices={num_devices}, num_nodes={num_nodes}) does not match the launcher "
                    f"({self.dist.launcher}: {self.dist.num_nodes} node(s) x {self.dist.local_world_size} "
                    "process(es)); pass devices=env.dist.local_world_size, num_nodes=env.dist.num_nodes")

    return AmldistEnvironment


def _same(what: str, asked: int, launcher: int) -> None:
    if asked != launcher:
        raise DistEnvError(f"Lightning set the {what} to {asked}, but the launcher says {launcher}: "
                           "the Trainer's devices and num_nodes must match the launcher's world")
