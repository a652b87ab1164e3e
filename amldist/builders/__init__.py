"""Python builders for distributed training specs.

- ``pytorch_job``, ``mpi_job``, ``tensorflow_job``: ML v2 command jobs, with defaults from
  the VM size (see ``amldist.builders.jobs``);
- ``distributed_component``: a legacy ``DistributedComponent`` (``amldist.legacy_builder``).

No azure-ai-ml import here: ``spec.to_azure()`` imports it when asked.
"""

from __future__ import annotations

from amldist.builders._args import BuilderError
from amldist.builders._size import BuilderWarning, NoInfiniBandWarning, UnknownGpuCountWarning
from amldist.builders.jobs import mpi_job, pytorch_job, tensorflow_job
from amldist.legacy_builder import distributed_component

__all__ = [
    "BuilderError", "BuilderWarning", "NoInfiniBandWarning", "UnknownGpuCountWarning",
    "distributed_component", "mpi_job", "pytorch_job", "tensorflow_job",
]

