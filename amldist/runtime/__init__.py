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
environment raises ``DistEnvError`` (a ValueError) whose message names the variables.

Detection order (first match wins), and why:

1. torchrun / torch.distributed.launch (TORCHELASTIC_RUN_ID): torchrun spawned this process
   itself, so its variables describe this worker; MPI or Slurm variables beside them were
   inherited from whatever started torchrun's agent and are ignored.
2. Open MPI (OMPI_COMM_WORLD_*), then MVAPICH (MV2_COMM_WORLD_*), then Intel MPI / MPICH
   (PMI_RANK or PMIX_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS): Open MPI first because
   Azure ML's MPI images use it (it also sets PMIX_RANK); the MPI-specific names before PMI_*,
   which several MPIs share. node_rank = rank // local size (never OMPI_COMM_WORLD_NODE_RANK,
   which is not the node index).
3. Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES,
   SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE, SLURM_NODELIST): after MPI because an mpirun
   inside a Slurm allocation is what started the ranks. Run one task per rank with ``srun``: a
   batch script itself looks like rank 0 of the whole allocation.
4. TF_CONFIG (Azure ML ``distribution: tensorflow``): rank = place among chief then workers;
   last of these, because it is the weakest sign of a torch world.
5. RANK and WORLD_SIZE alone (Azure ML ``distribution: pytorch``, Kubeflow, by hand): what
   env:// reads. LOCAL_WORLD_SIZE, which Azure ML does not set, comes from AZUREML_NODE_COUNT
   or, on later nodes, from the node rank; otherwise one node is assumed.
6. Nothing: a world of one.

When RANK, WORLD_SIZE, LOCAL_RANK or LOCAL_WORLD_SIZE are set beside a launcher of 2-4 (two
launchers stacked, or a helper that copied them), they must agree with it, or DistEnvError:
disagreeing launchers make ranks pick wrong GPUs and peers and the job hangs. When they agree,
the launcher's own view is used, since it also knows the node layout.

MASTER_ADDR (or its alias MASTER_IP) and MASTER_PORT win whenever they are set. Otherwise:

- MPI on several nodes: the address in AZ_BATCH_MASTER_NODE ("addr:port"; its port belongs to
  Azure Batch and is never used) and port 6105, Azure ML's documented value;
- MPI on one node: AZ_BATCHAI_MPI_MASTER_NODE, or 127.0.0.1 where a compute lacks it, and port
  54965, Azure ML's documented single-node value;
- Slurm: the first host of the expanded node list, port 29500;
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

from ._detect import detect
from ._env import DistEnv, DistEnvError
from ._init import destroy, init_distributed

RUNTIME_DIR = Path(__file__).resolve().parent

__all__ = ["RUNTIME_DIR", "DistEnv", "DistEnvError", "bundle_files", "destroy", "detect", "init_distributed"]


def bundle_files() -> dict[str, Path]:
    """Files to copy into a job snapshot: ``{"amldist/runtime/<name>.py": source path}``.

    Copy each to ``snapshot_root / destination``. No ``amldist/__init__.py`` is needed (the
    package imports only relatively); a parent package that imports nothing else works too.
    """
    return {f"amldist/runtime/{path.name}": path for path in sorted(RUNTIME_DIR.glob("*.py"))}
