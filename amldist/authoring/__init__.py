"""Python builders for distributed training specs.

- ``pytorch_job``, ``mpi_job``, ``tensorflow_job``: ML v2 command jobs, with defaults from
  the VM size (see ``amldist.authoring.builders``);
- ``distributed_component``: a legacy ``DistributedComponent`` (``amldist.authoring.legacy_builder``).

No azure-ai-ml import here: ``amldist.to_azure(spec)`` imports it when asked.
"""

from __future__ import annotations

from amldist.authoring.arguments import BuilderError
from amldist.authoring.size_defaults import BuilderWarning, NoInfiniBandWarning, UnknownGpuCountWarning
from amldist.authoring.builders import mpi_job, pytorch_job, tensorflow_job
from amldist.authoring.legacy_builder import distributed_component

__all__ = [
    "BuilderError", "BuilderWarning", "NoInfiniBandWarning", "UnknownGpuCountWarning",
    "distributed_component", "mpi_job", "pytorch_job", "tensorflow_job",
]

