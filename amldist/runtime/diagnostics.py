"""What a person needs to see when a GPU job is slow or hangs: printed once, by rank 0, when
AMLDIST_DEBUG=1 (or a flag) asks. ``diagnose`` is pure; ``report`` gathers the facts and prints."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TextIO

from .dist_env import DistEnv

DEBUG_VAR = "AMLDIST_DEBUG"
SHOWN_VARS = ("NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "UCX_TLS")
PREFIX = "amldist.runtime:"
# Set by ``python -m amldist.runtime -- CMD`` to its own pid after reporting: exec keeps the pid,
# so a script that then calls init_distributed() does not print the same report again.
REPORTED_VAR = "AMLDIST_DEBUG_REPORTED_PID"

_reported = False


def reset() -> None:
    """Forget that this process printed the report (for tests, and a process that forms a second world)."""
    global _reported
    _reported = False


def shown(value: str | None) -> str:
    """A variable's value as one line: non-printable characters escaped, long values cut."""
    if value is None:
        return "<unset>"
    text = value if value.isprintable() else ascii(value)[1:-1]
    return text if len(text) <= 200 else f"{text[:200]}... ({len(value)} characters)"


def wanted(environ: Mapping[str, str], flag: bool | None = None) -> bool:
    if flag is not None:
        return flag
    return environ.get(DEBUG_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def diagnose(env: DistEnv, environ: Mapping[str, str], gpu_count: int, infiniband: bool) -> list[str]:
    """The report's lines, warnings (known traps) last, each starting with "WARNING"."""
    lines = [
        (f"launcher={env.launcher} rank={env.rank}/{env.world_size} local_rank={env.local_rank}/"
         f"{env.local_world_size} node={env.node_rank}/{env.num_nodes} master={env.master_addr}:{env.master_port}"),
        f"visible GPUs: {gpu_count} (CUDA_VISIBLE_DEVICES={shown(environ.get('CUDA_VISIBLE_DEVICES'))})",
        f"/dev/infiniband: {'present' if infiniband else 'absent'}",
    ]
    lines += [f"{var}={shown(environ.get(var))}" for var in SHOWN_VARS]
    if infiniband and environ.get("NCCL_IB_DISABLE", "").strip() not in ("", "0"):
        lines.append("WARNING NCCL_IB_DISABLE is set while InfiniBand is present: NCCL falls back to TCP "
                     "sockets; unset it unless that is intended")
    if environ.get("NCCL_GRAPH_FILE") and gpu_count < 4:
        lines.append(f"WARNING NCCL_GRAPH_FILE is set with {gpu_count} GPU(s) per node: the graph files some HPC "
                     "images set break runs with fewer than 4 GPUs ('XML Import Channel : dev N not found'); unset it")
    if gpu_count > 1 and env.local_world_size == 1:
        lines.append(f"WARNING one process on a node with {gpu_count} GPUs: the rest sit idle; launch one "
                     "process per GPU (process_count_per_instance)")
    if gpu_count > 1 and env.local_world_size > gpu_count:
        lines.append(f"WARNING {env.local_world_size} processes share {gpu_count} GPUs on this node; NCCL "
                     "refuses two ranks on one GPU ('Duplicate GPU detected')")
    return lines


def visible_gpu_count(environ: Mapping[str, str], dev: str = "/dev") -> int:
    """GPUs this process may use: torch's count when torch is loaded, else CUDA_VISIBLE_DEVICES,
    else the /dev/nvidiaN device files (no torch import just for a report)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.cuda.device_count()
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [item for item in visible.split(",") if item.strip()]
        return 0 if ids[:1] in (["-1"], ["NoDevFiles"]) else len(ids)
    try:
        return sum(bool(re.fullmatch(r"nvidia\d+", name)) for name in os.listdir(dev))
    except OSError:
        return 0


def report(env: DistEnv, environ: Mapping[str, str], *, flag: bool | None = None, stream: TextIO | None = None) -> bool:
    """Print the diagnostics once per process, on rank 0, when asked. Returns whether it printed."""
    global _reported
    if _reported or environ.get(REPORTED_VAR) == str(os.getpid()):
        return False
    if env.rank != 0 or not wanted(environ, flag):
        return False
    _reported = True
    lines = diagnose(env, environ, visible_gpu_count(environ), os.path.isdir("/dev/infiniband"))
    print("\n".join(f"{PREFIX} {line}" for line in lines), file=stream or sys.stderr, flush=True)
    return True
