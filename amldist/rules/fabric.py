"""What amldist tells a job about its nodes' network, for the runtime's fabric check.

The runtime (:mod:`amldist.runtime.check`) stands alone and cannot read the size catalog, so the
backends pass the size's facts in as variables (the job's own values win):

- ``AMLDIST_VM_SIZE``: the size's canonical name;
- ``AMLDIST_VM_INFINIBAND``: ``1`` when NCCL can use InfiniBand between nodes of this size, else ``0``;
- ``AMLDIST_EXPECTED_BUSBW_GBS``: the all-reduce bus bandwidth across nodes (GB/s, as nccl-tests
  report it) the size should reach: 90 % of its InfiniBand line rate per node (per GPU rate x GPUs on
  sizes with one link per GPU; FDR 56, EDR 100, HDR 200, NDR 400 Gb/s for one link per node). nccl-tests
  runs on ND A100 v4 report about 180 GB/s, on ND H100 v5 about 360-400 GB/s. Absent for Ethernet sizes.
"""

from __future__ import annotations

import re

from amldist.rules import vm_sizes
from amldist.rules.vm_sizes import VmSize

EFFICIENCY = 0.9  # what NCCL reaches of the line rate on a healthy fabric
PER_GPU = re.compile(r"(\d+) Gb/s per GPU")
PER_NODE = {"FDR": 56, "EDR": 100, "HDR": 200, "NDR": 400}  # Gb/s of one InfiniBand link


def expected_busbw_gbs(size: VmSize | None) -> float | None:
    """GB/s of all-reduce bus bandwidth across nodes of ``size`` (None: no InfiniBand, or not known)."""
    if size is None or not size.infiniband or not size.interconnect:
        return None
    per_gpu = PER_GPU.search(size.interconnect)
    if per_gpu and size.gpus:
        return size.gpus * int(per_gpu.group(1)) / 8 * EFFICIENCY
    generation = next((rate for name, rate in PER_NODE.items() if size.interconnect.startswith(name)), None)
    return generation / 8 * EFFICIENCY if generation else None


def size_variables(instance_type) -> dict[str, str]:
    """The variables above for a job whose nodes are ``instance_type`` ({} when that is no known size)."""
    size = vm_sizes.lookup(instance_type) if isinstance(instance_type, str) else None
    if size is None or size.guess:
        return {}
    found = {"AMLDIST_VM_SIZE": size.name, "AMLDIST_VM_INFINIBAND": "1" if size.infiniband else "0"}
    expected = expected_busbw_gbs(size)
    if expected:
        found["AMLDIST_EXPECTED_BUSBW_GBS"] = f"{expected:.0f}"
    return found
