"""amldist.runtime: inside the job, turn whatever launcher started this process into a torch
process group.

    from amldist.runtime import init_distributed
    env = init_distributed()          # DistEnv(launcher="openmpi", rank=3, world_size=8, ...)

or, for a script that already calls ``init_process_group()`` with env://::

    python -m amldist.runtime -- python train.py ...
    python -m amldist.runtime --print     # what was detected, as JSON; exit 2 on a bad environment

Standard library only; torch is imported when a group is formed. ``detect()`` reads a mapping
and writes nothing; ``init_distributed()`` exports RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT (never NCCL_* or UCX_*), sets the CUDA
device from the local rank, and calls ``init_process_group(init_method="env://")`` once.
AMLDIST_DEBUG=1 prints GPU/NCCL diagnostics on rank 0. Every malformed or contradictory
environment raises ``DistEnvError`` (a ValueError) whose one-line message names the variables,
and nothing else: no other exception, no hang, bounded memory, whatever the values (numbers
are at most 2**31-1, Slurm lists are read without expanding them and name at most
``slurm_lists.MAX_HOSTS`` nodes, TF_CONFIG nested too deep is refused, quoted values are cut).

Modules (all public; none imports another's private name):

- ``dist_env``: DistEnv and DistEnvError;
- ``env_reader``: EnvReader and the bounded parsers for numbers, hosts and "host:port";
- ``launcher``: the launcher protocol, a small abstract base (``name``, static ``detect(environ)``,
  ``read(reader)``), as Lightning fabric's ``plugins/environments/`` have;
- one module per launcher: ``torchelastic`` (torchrun), ``mpi`` (Open MPI, MVAPICH, Intel MPI /
  MPICH), ``slurm`` (with ``slurm_lists`` for its compressed host and task lists), ``tfconfig``,
  ``torch_vars`` (RANK and WORLD_SIZE alone), ``world_of_one``;
- ``detection``: ``LAUNCHERS``, the detection order in one commented list (torchrun, the MPIs,
  Slurm, TF_CONFIG, RANK/WORLD_SIZE, a world of one; first match wins), and ``detect()``;
- ``process_group``: ``init_distributed()`` and ``destroy()``; ``diagnostics``: AMLDIST_DEBUG;
  ``check``: the fabric check (``init_distributed(check=True)``, ``python -m amldist.runtime --check``);
  ``watchdog``: the stall watchdog (``stall_timeout=``/AMLDIST_STALL_TIMEOUT, ``progress()``);
  ``__main__``: ``python -m amldist.runtime``.

Details by launcher: node_rank under MPI is rank // local size (never OMPI_COMM_WORLD_NODE_RANK,
which is not the node index); under Slurm run one task per rank with ``srun`` (a batch script
itself looks like rank 0 of the whole allocation); under TF_CONFIG the rank is the place among
chief then workers; with RANK and WORLD_SIZE alone, LOCAL_WORLD_SIZE, which Azure ML does not
set, comes from AZUREML_NODE_COUNT or, on later nodes, from the node rank; otherwise one node
is assumed.

When RANK, WORLD_SIZE, LOCAL_RANK or LOCAL_WORLD_SIZE are set beside MPI, Slurm or TF_CONFIG
(two launchers stacked, or a helper that copied them), they must agree with it, or DistEnvError:
disagreeing launchers make ranks pick wrong GPUs and peers and the job hangs. When they agree,
the launcher's own view is used, since it also knows the node layout.

MASTER_ADDR (or its alias MASTER_IP) and MASTER_PORT win whenever they are set. Otherwise:

- MPI on several nodes: the address in AZ_BATCH_MASTER_NODE ("addr:port"; its port belongs to
  Azure Batch and is never used) and port 6105, Azure ML's documented value;
- MPI on one node: AZ_BATCHAI_MPI_MASTER_NODE, or 127.0.0.1 where a compute lacks it, and port
  54965, Azure ML's documented single-node value;
- Slurm: the first host of the node list, port 29500;
- TF_CONFIG: the first chief/worker's host and port (the port TF_CONFIG gives that task for
  its own server, and that task is rank 0, the one that listens), 29500 if it has none;
- torchrun: its own values; RANK/WORLD_SIZE alone: port 29500 (torch's default), and
  MASTER_ADDR is required when the world has more than one process;
- a world of one: 127.0.0.1 and port 29500.

Bundling into a job's code snapshot: the package uses only relative imports and the standard
library, so copying it to ``<snapshot>/amldist/runtime/`` is enough for ``import amldist.runtime``
and ``python -m amldist.runtime`` in a container without amldist installed (``amldist`` is then a
namespace package). ``amldist submit`` also writes a minimal ``amldist/__init__.py`` beside it: a
regular package in the working directory wins over an amldist installed in the image, whereas a
namespace portion would lose to it. ``bundle_files()`` maps
each destination path (relative to the snapshot root) to its source file; ``RUNTIME_DIR`` is the
package directory.
"""

from __future__ import annotations

from pathlib import Path

from .detection import detect
from .dist_env import DistEnv, DistEnvError
from .process_group import destroy, init_distributed

RUNTIME_DIR = Path(__file__).resolve().parent

__all__ = ["RUNTIME_DIR", "DistEnv", "DistEnvError", "bundle_files", "destroy", "detect", "init_distributed",
           "progress"]


def __getattr__(name: str):
    """``progress`` comes from :mod:`.watchdog`, imported on first use: a bare import stays small."""
    if name == "progress":
        from .watchdog import progress

        globals()["progress"] = progress
        return progress
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundle_files() -> dict[str, Path]:
    """Files to copy into a job snapshot: ``{"amldist/runtime/<name>.py": source path}``.

    Copy each to ``snapshot_root / destination``. No ``amldist/__init__.py`` is needed (the
    package imports only relatively); a parent package that imports nothing else works too.
    """
    return {f"amldist/runtime/{path.name}": path for path in sorted(RUNTIME_DIR.glob("*.py"))}
