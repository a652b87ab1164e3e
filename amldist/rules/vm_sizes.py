"""Azure VM size catalog: GPUs, GPU model, GPU memory and InfiniBand per size.

``lookup(name)`` answers for the sizes below and, for a size it does not know,
guesses from the name (``guess=True``). Standard library only: the validator
imports this module on every run.

What ``infiniband`` means here: NCCL (and MPI over UCX) can use an InfiniBand
network between nodes of this size. RDMA sizes without SR-IOV (NC24r, H16r,
H16mr) are ``False`` with a caveat that says why.

Sources: Azure VM size pages (MicrosoftDocs/azure-compute-docs) and the Azure ML
distributed GPU training guide; see ../shared/facts.md of the project notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["VmSize", "lookup", "all_sizes", "canonical_name", "parse_name"]


@dataclass(frozen=True)
class VmSize:
    name: str  # canonical, e.g. "Standard_ND96isr_H100_v5"
    gpus: int | None  # None = unknown (a guess for a size not in the catalog)
    gpu_model: str | None
    gpu_memory_gb: int | None  # per GPU
    infiniband: bool  # True only when NCCL can use InfiniBand
    vcpus: int | None
    caveats: tuple[str, ...] = ()
    guess: bool = False  # True when inferred from the name, not from the catalog
    series: str | None = None  # e.g. "ND H100 v5"
    interconnect: str | None = None  # e.g. "NDR 400 Gb/s per GPU"

    @property
    def is_gpu(self) -> bool | None:
        """True/False when known, None for a guess that cannot tell."""
        return None if self.gpus is None else self.gpus > 0

    def to_dict(self) -> dict:
        return {
            "name": self.name, "series": self.series, "gpus": self.gpus, "gpu_model": self.gpu_model,
            "gpu_memory_gb": self.gpu_memory_gb, "infiniband": self.infiniband,
            "interconnect": self.interconnect, "vcpus": self.vcpus,
            "caveats": list(self.caveats), "guess": self.guess,
        }


_NO_SRIOV = (
    "RDMA without SR-IOV: NCCL cannot use its InfiniBand network (only Intel MPI can); "
    "multi-node NCCL traffic goes over Ethernet"
)
_RETIRED = "retired size: new clusters of it cannot be created"
_ROCM = (
    "AMD GPUs (ROCm): torch's 'nccl' backend is RCCL here; use a ROCm build of torch; "
    "CUDA_* variables do not apply"
)


def _constrained(short: str, active: int) -> str:
    full = re.sub(r"-\d+", "", short)
    total = re.match(r"[A-Z]+(\d+)", full).group(1)
    return f"constrained-core {full}: {active} of {total} cores active, same memory and InfiniBand"


# (series, gpu model, GPU memory GB per GPU, interconnect or None, caveats of the series,
#  [(size without "Standard_", vcpus, gpus, extra caveats)], infiniband of the series)
_SERIES = [
    ("NC v3", "V100", 16, None, (), [("NC6s_v3", 6, 1), ("NC12s_v3", 12, 2), ("NC24s_v3", 24, 4)]),
    ("NC v3", "V100", 16, "FDR InfiniBand", (), [("NC24rs_v3", 24, 4)]),
    ("NC v1", "K80", 12, None, (_NO_SRIOV, _RETIRED), [("NC24r", 24, 4)]),
    ("NCasT4 v3", "T4", 16, None, (),
     [("NC4as_T4_v3", 4, 1), ("NC8as_T4_v3", 8, 1), ("NC16as_T4_v3", 16, 1), ("NC64as_T4_v3", 64, 4)]),
    ("NC A100 v4", "A100 PCIe", 80, None, (),
     [("NC24ads_A100_v4", 24, 1), ("NC48ads_A100_v4", 48, 2), ("NC96ads_A100_v4", 96, 4)]),
    ("NC H100 v5", "H100 NVL", 94, None, (), [("NC40ads_H100_v5", 40, 1), ("NC80adis_H100_v5", 80, 2)]),
    ("ND v2", "V100 NVLink", 32, "EDR InfiniBand", (), [("ND40rs_v2", 40, 8)]),
    ("ND A100 v4", "A100 SXM", 40, "HDR InfiniBand, 200 Gb/s per GPU", (), [("ND96asr_v4", 96, 8)]),
    ("NDm A100 v4", "A100 SXM", 80, "HDR InfiniBand, 200 Gb/s per GPU", (), [("ND96amsr_A100_v4", 96, 8)]),
    ("ND H100 v5", "H100 SXM", 80, "NDR InfiniBand, 400 Gb/s per GPU", (), [("ND96isr_H100_v5", 96, 8)]),
    ("ND H100 v5", "H100 SXM", 80, None,
     ("no InfiniBand (no 'r' in the name): nodes talk over Ethernet; "
      "use Standard_ND96isr_H100_v5 for multi-node training",),
     [("ND96is_H100_v5", 96, 8)]),
    ("ND H200 v5", "H200", 141, "InfiniBand, 400 Gb/s per GPU", (), [("ND96isr_H200_v5", 96, 8)]),
    ("ND MI300X v5", "MI300X", 192, "InfiniBand, 400 Gb/s per GPU", (_ROCM,), [("ND96isr_MI300X_v5", 96, 8)]),
    ("H", None, None, None, (_NO_SRIOV,), [("H16r", 16, 0), ("H16mr", 16, 0)]),
    ("HC", None, None, "EDR InfiniBand, 100 Gb/s", (),
     [("HC44rs", 44, 0), ("HC44-16rs", 16, 0), ("HC44-32rs", 32, 0)]),
    ("HB v1", None, None, "EDR InfiniBand, 100 Gb/s", (_RETIRED,), [("HB60rs", 60, 0)]),
    ("HB v2", None, None, "HDR InfiniBand, 200 Gb/s", (),
     [("HB120rs_v2", 120, 0), ("HB120-16rs_v2", 16, 0), ("HB120-32rs_v2", 32, 0),
      ("HB120-64rs_v2", 64, 0), ("HB120-96rs_v2", 96, 0)]),
    ("HB v3", None, None, "HDR InfiniBand, 200 Gb/s", (),
     [("HB120rs_v3", 120, 0), ("HB120-16rs_v3", 16, 0), ("HB120-32rs_v3", 32, 0),
      ("HB120-64rs_v3", 64, 0), ("HB120-96rs_v3", 96, 0)]),
    ("HB v4", None, None, "NDR InfiniBand, 400 Gb/s", (),
     [("HB176rs_v4", 176, 0), ("HB176-24rs_v4", 24, 0), ("HB176-48rs_v4", 48, 0),
      ("HB176-96rs_v4", 96, 0), ("HB176-144rs_v4", 144, 0)]),
    ("HX", None, None, "NDR InfiniBand, 400 Gb/s", (),
     [("HX176rs", 176, 0), ("HX176-24rs", 24, 0), ("HX176-48rs", 48, 0),
      ("HX176-96rs", 96, 0), ("HX176-144rs", 144, 0)]),
]


def _build_catalog() -> dict[str, VmSize]:
    catalog: dict[str, VmSize] = {}
    for series, model, memory, interconnect, caveats, sizes in _SERIES:
        for short, vcpus, gpus in sizes:
            extra = ()
            if "-" in short:  # HB176-96rs_v4 -> HB176rs_v4
                extra = (_constrained(short, vcpus),)
            size = VmSize(
                name="Standard_" + short, gpus=gpus, gpu_model=model if gpus else None,
                gpu_memory_gb=memory if gpus else None, infiniband=interconnect is not None,
                vcpus=vcpus, caveats=tuple(caveats) + extra, series=series, interconnect=interconnect,
            )
            catalog[short.lower()] = size
    return catalog


_CATALOG = _build_catalog()

# Families of Azure VM sizes; a name without "Standard_" must start with one of them,
# so that Kubernetes instance types such as "cpu4" or "gpu-small" are not taken for sizes.
_FAMILIES = frozenset(
    "a b d dc ds e ec f fx g gs h hb hc hx l lc ls m mc nc nd ng np nv".split()
)
# family, vcpus, -active vcpus, feature letters, _accelerator, _vN, _promo
_NAME = re.compile(
    r"^(?P<family>[a-z]{1,3}?)(?P<vcpus>\d{1,5})(?:-(?P<active>\d{1,5}))?(?P<features>[a-z]*)"
    r"(?:_(?P<accel>(?!v\d+(?:_|$))[a-z][a-z0-9]*))?(?:_v(?P<version>\d{1,4}))?(?P<promo>_promo)?$"
)


def _strip(name: str) -> tuple[str, bool]:
    text = name.strip().lower()
    if text.startswith("standard_"):
        return text[len("standard_"):], True
    return text, False


def parse_name(name: str) -> dict | None:
    """Split a VM size name into its parts, or None when it is not one.

    ``Standard_<family><vcpus>(-<active>)?<feature letters>(_<accelerator>)?(_v<N>)?``;
    a name without ``Standard_`` must start with a known family letter group.
    Returned values are lower case.
    """
    if not isinstance(name, str):
        return None
    text, prefixed = _strip(name)
    match = _NAME.match(text)
    if match is None:
        return None
    parts = match.groupdict()
    if not prefixed and parts["family"] not in _FAMILIES:
        return None
    return parts


def canonical_name(name: str) -> str:
    """``nd96isr_h100_v5`` -> ``Standard_ND96isr_H100_v5`` (Azure's own spelling).

    Family and GPU accelerator upper case, feature letters and the version lower case.
    """
    parts = parse_name(name)
    if parts is None:
        raise ValueError(f"not an Azure VM size name: {name!r}")
    text = parts["family"].upper() + parts["vcpus"]
    if parts["active"]:
        text += "-" + parts["active"]
    text += parts["features"]
    if parts["accel"]:  # GPU names are upper case (A100, T4); others such as "cc" are not
        text += "_" + (parts["accel"].upper() if parts["family"].startswith("n") else parts["accel"])
    if parts["version"]:
        text += "_v" + parts["version"]
    if parts["promo"]:
        text += "_Promo"
    return "Standard_" + text


def lookup(name: str) -> VmSize | None:
    """The catalog entry for ``name``, a guess from the name, or None.

    Case-insensitive; ``Standard_`` is optional. For a size not in the catalog
    the answer has ``guess=True``: InfiniBand when the feature letters contain
    "r", GPUs 0 for families outside the N series (those have no GPUs) and None
    (unknown) for N-series sizes. None when ``name`` is not a VM size name at
    all (for example a Kubernetes instance type such as ``defaultinstancetype``).
    """
    if not isinstance(name, str):
        return None
    text, _ = _strip(name)
    known = _CATALOG.get(text)
    if known is not None:
        return known
    parts = parse_name(name)
    if parts is None:
        return None
    family = parts["family"]
    infiniband = "r" in parts["features"]
    gpus = None if family.startswith("n") else 0
    caveats = ["not in amldist's catalog: GPUs and InfiniBand are guessed from the name"]
    if infiniband:
        caveats.append("'r' in the name usually means RDMA/InfiniBand; old sizes without SR-IOV are exceptions")
    vcpus = int(parts["active"] or parts["vcpus"])
    gpu_model = parts["accel"].upper() if family.startswith("n") and parts["accel"] else None
    return VmSize(
        name=canonical_name(name), gpus=gpus, gpu_model=gpu_model, gpu_memory_gb=None,
        infiniband=infiniband, vcpus=vcpus, caveats=tuple(caveats), guess=True,
    )


def all_sizes() -> list[VmSize]:
    """Every catalog entry, in catalog order (GPU series first, then CPU HPC sizes)."""
    return list(_CATALOG.values())
