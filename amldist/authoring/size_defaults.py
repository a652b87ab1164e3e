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

from amldist.spec import vm_sizes
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
        raise BuilderError("vm_size", f"{vm_size!r} is not an Azure VM size name", hint="see 'amldist skus'")
    # A Kubernetes instance type (not a VM size name) may well run on nodes of vm_size; two sizes must agree.
    if named is not None and named.name != size.name:
        raise BuilderError(
            "vm_size", f"{vm_size!r} differs from instance_type {instance_type!r}",
            hint="give one of them: instance_type for serverless or Kubernetes compute, "
            "vm_size for the nodes of a compute cluster",
        )
    return size, written


def processes_per_node(size, given):
    """``given``, checked against the size's GPUs, or the default: one process per GPU.

    Default 1 on CPU sizes, on sizes whose GPU count is unknown and without a size.
    """
    gpus = size.gpus if size is not None else None
    if given is None:
        return gpus if gpus else 1
    if gpus and given > gpus:
        raise BuilderError(
            "process_count_per_instance", f"{given} processes per node is more than the {gpus} GPUs of {size.name}",
            hint=f"use at most {gpus} (one process per GPU), or a size with more GPUs",
        )
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


def warnings_for(size, instance_count, env: dict) -> list[tuple[type, str]]:
    """(category, message) pairs for the size and node count."""
    out: list[tuple[type, str]] = []
    nodes = instance_count or 1
    if size is None or nodes <= 1:
        return out
    if not size.infiniband:
        why = next((c for c in size.caveats if "SR-IOV" in c), None) or f"{size.name} has no InfiniBand"
        out.append((
            NoInfiniBandWarning,
            f"{nodes} nodes of {size.name}: {why}; traffic between nodes goes over Ethernet, "
            "which is often slower than training on one node. Use a size with 'r' "
            "(e.g. Standard_ND96isr_H100_v5) for multi-node training",
        ))
    elif str(env.get("NCCL_IB_DISABLE", "")).strip() not in ("", "0"):
        out.append((
            BuilderWarning,
            f"NCCL_IB_DISABLE={env['NCCL_IB_DISABLE']} turns InfiniBand off on {size.name}; "
            "NCCL will use Ethernet between nodes",
        ))
    return out
