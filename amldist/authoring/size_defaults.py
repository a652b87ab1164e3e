"""What the VM size decides: processes per node, InfiniBand settings, warnings.

InfiniBand settings added on InfiniBand sizes when a job has more than one node (each only
when the user has not set that variable; ``infiniband_env=False`` turns them all off).
Source: the settings Azure's own large-scale training examples use on these sizes
(azureml-examples ``best-practices/largescale-deep-learning``, ``cli/jobs/single-step/gpu_perf``,
``cli/jobs/pipelines/tensorflow-image-segmentation``):

- ``NCCL_IB_PCI_RELAXED_ORDERING=1``: lets NCCL's InfiniBand transfers use PCIe relaxed
  ordering; the examples note it "can greatly help" InfiniBand in virtualized machines,
  and every Azure size is one. NCCL and AMD's RCCL both read it. GPU sizes only.
- ``UCX_IB_PCI_RELAXED_ORDERING=on``: the same for UCX, the transport Open MPI / HPC-X
  use for MPI traffic on InfiniBand. GPU and CPU (HB/HC/HX) sizes.
- ``NCCL_SOCKET_IFNAME=eth0``: NCCL prefers ``ib*`` interfaces (IPoIB) for its bootstrap
  sockets; Azure ML gives MASTER_ADDR on the VM's Ethernet interface, eth0, which is
  the one every node reaches. GPU sizes only.
- ``CUDA_DEVICE_ORDER=PCI_BUS_ID``: CUDA numbers GPUs fastest-first by default;
  PCI order is the order of nvidia-smi and of the topology files the Azure HPC images
  ship, so LOCAL_RANK k drives the GPU next to the k-th InfiniBand card. NVIDIA only.

Deliberately not set, although the examples show them: ``UCX_TLS=tcp`` and
``UCX_NET_DEVICES=eth0`` (they move UCX off InfiniBand; the examples use them to get past
a "failed to resolve UCX endpoint" error, not for speed), ``NCCL_DEBUG`` (a logging choice),
``NCCL_TOPO_FILE`` (a path inside one image).
"""

from __future__ import annotations

from amldist.rules import vm_sizes
from amldist.rules.size_findings import size_findings
from amldist.authoring.arguments import BuilderError

GPU_INFINIBAND_ENV = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
    "NCCL_SOCKET_IFNAME": "eth0",
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}
CPU_INFINIBAND_ENV = {"UCX_IB_PCI_RELAXED_ORDERING": "on"}


class BuilderWarning(UserWarning):
    """Something the builder can build but a user would want to know before paying for nodes."""


class NoInfiniBandWarning(BuilderWarning):
    """More than one node of a size without InfiniBand: gradients cross Ethernet."""


class UnknownGpuCountWarning(BuilderWarning):
    """process_count_per_instance fell back to 1 on nodes that may have several GPUs."""


def default_process_warning(size, instance_type, vm_size) -> tuple[type, str] | None:
    """A warning when the default of 1 process per node is a guess, not the size's GPU count.

    One process per node on an 8-GPU node is a common, silent mistake (7 GPUs idle), so the
    builder says so unless it knows the size has no GPUs.
    """
    if size is not None and size.gpus is not None:
        return None
    named = vm_size or instance_type
    what = f"the GPU count of {named!r} is unknown" if named else "no VM size was given"
    return (
        UnknownGpuCountWarning,
        f"process_count_per_instance defaults to 1 because {what}; on GPU nodes pass "
        "process_count_per_instance=<GPUs per node> (or vm_size=... for a compute cluster)",
    )


def resolve_size(instance_type, vm_size):
    """The VmSize the defaults come from (None when unknown), and the instance_type to write.

    An instance_type that is a VM size name is written in Azure's spelling
    (``nd96isr_h100_v5`` -> ``Standard_ND96isr_H100_v5``); any other text (a Kubernetes
    instance type) is written as given.
    """
    named = vm_sizes.lookup(instance_type) if instance_type is not None else None
    written = named.name if named is not None else instance_type
    if vm_size is None:
        return named, written
    size = vm_sizes.lookup(vm_size)
    if size is None:
        raise BuilderError("vm_size", f"{vm_size!r} is not an Azure VM size name", hint="see 'amldist vm-sizes'")
    # A Kubernetes instance type (not a VM size name) may well run on nodes of vm_size; two sizes must agree.
    if named is not None and named.name != size.name:
        raise BuilderError(
            "vm_size", f"{vm_size!r} differs from instance_type {instance_type!r}",
            hint="give one of them: instance_type for serverless or Kubernetes compute, "
            "vm_size for the nodes of a compute cluster",
        )
    return size, written


def processes_per_node(size, given, distribution_type: str):
    """``given``, checked against the size's GPUs (:mod:`amldist.rules.size_findings`), or the
    default: one process per GPU; 1 on CPU sizes, on sizes whose GPU count is unknown and without a size.
    """
    if given is None:
        return size.gpus if size is not None and size.gpus else 1
    for found in size_findings(size, distribution_type=distribution_type, instance_count=None, process_count=given):
        if found.code == "too-many-processes":
            raise BuilderError("process_count_per_instance", found.message, hint=found.hint)
    return given


def infiniband_env(size, instance_count, user_env: dict) -> dict:
    """The settings to add (only those the user has not set), or {} when none apply."""
    if size is None or not size.infiniband or (instance_count or 1) <= 1:
        return {}
    if size.gpus == 0:
        wanted = dict(CPU_INFINIBAND_ENV)
    else:  # GPU sizes and guesses with an unknown GPU count
        wanted = dict(GPU_INFINIBAND_ENV)
        if (size.gpu_model or "").upper().startswith("MI"):  # AMD: CUDA variables mean nothing
            wanted.pop("CUDA_DEVICE_ORDER")
    return {k: v for k, v in wanted.items() if k not in user_env}


# the Python warning category of each size finding a builder reports
WARNING_CATEGORIES = {"no-infiniband": NoInfiniBandWarning, "infiniband-disabled": BuilderWarning}


def warnings_for(size, distribution_type: str, instance_count, env: dict) -> list[tuple[type, str]]:
    """(category, message) pairs for the size and node count: the validator's own findings."""
    found = size_findings(size, distribution_type=distribution_type, instance_count=instance_count,
                          process_count=None, environment_variables=env)
    return [(WARNING_CATEGORIES[f.code], f"{f.message}. {f.hint[:1].upper()}{f.hint[1:]}")
            for f in found if f.code in WARNING_CATEGORIES]
