"""What a VM size says about a job: the one rule for the builders, ``amldist validate`` and submit.

For a job (or component, or pipeline node) on ``instance_type`` with a distribution:

- ``too-many-processes`` (error): ``process_count_per_instance`` above the size's GPUs, for
  ``pytorch`` and ``mpi`` on a size whose GPU count is known and not 0 (MPI with many ranks on a
  CPU node is normal; an unknown GPU count cannot be checked);
- ``no-infiniband`` (warning): more than one node of a size without InfiniBand (catalog entries,
  and sizes guessed from the name: no ``r`` feature letter means no InfiniBand), GPU or CPU: the
  traffic between nodes then crosses Ethernet;
- ``infiniband-disabled`` (warning): ``NCCL_IB_DISABLE`` set to something other than ``0`` on
  several nodes of an InfiniBand size.

The builders turn the warnings into Python warnings and the error into a BuilderError; the
validator turns each into a diagnostic at the field it names. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from amldist.model.kinds import distribution_kind

ERROR = "error"
WARNING = "warning"
_GPU_PER_PROCESS = ("pytorch", "mpi")


@dataclass(frozen=True)
class SizeFinding:
    code: str
    severity: str  # ERROR or WARNING
    field: str  # dotted path inside the job: "resources.instance_count", ...
    message: str
    hint: str


def _whole(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def size_findings(size, *, distribution_type, instance_count, process_count, environment_variables=None
                  ) -> list[SizeFinding]:
    """The findings for one job on ``size`` (a :class:`~amldist.rules.vm_sizes.VmSize`, or None)."""
    kind = distribution_kind(distribution_type)
    if size is None or kind is None:
        return []
    found = []
    processes, nodes = _whole(process_count), _whole(instance_count) or 1
    if kind in _GPU_PER_PROCESS and processes and size.gpus and processes > size.gpus:
        plural = "s" if size.gpus != 1 else ""
        found.append(SizeFinding(
            "too-many-processes", ERROR, "distribution.process_count_per_instance",
            f"{processes} processes per node is more than the {size.gpus} GPU{plural} of {size.name}",
            f"use at most {size.gpus} (one process per GPU), or a size with more GPUs"))
    if nodes > 1 and size.infiniband is False:
        why = next((c for c in size.caveats if "SR-IOV" in c), None) or (
            f"{size.name} has no InfiniBand" + (" (guessed from its name)" if size.guess else ""))
        found.append(SizeFinding(
            "no-infiniband", WARNING, "resources.instance_count",
            f"{nodes} nodes of {size.name}: {why}; traffic between nodes goes over Ethernet, which is often "
            "slower than training on one node",
            "for multi-node training pick a size with 'r' (InfiniBand), e.g. Standard_ND96isr_H100_v5, "
            "or train on one node"))
    disabled = (environment_variables or {}).get("NCCL_IB_DISABLE") if isinstance(environment_variables, dict) else None
    if nodes > 1 and size.infiniband and disabled is not None and str(disabled).strip() not in ("", "0"):
        found.append(SizeFinding(
            "infiniband-disabled", WARNING, "environment_variables.NCCL_IB_DISABLE",
            f"NCCL_IB_DISABLE={disabled} turns InfiniBand off on {size.name}; NCCL will use Ethernet between nodes",
            "remove NCCL_IB_DISABLE (or set it to 0) to use the InfiniBand the size has"))
    return found
