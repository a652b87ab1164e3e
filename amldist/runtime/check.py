"""The fabric check: a few seconds of all-reduce over the job's group, reported by rank 0.

``python -m amldist.runtime --check`` (its own group, then exit 0 or 1) or
``init_distributed(check=True)`` (in the script's group, right after it is formed; a failed check
raises :class:`FabricCheckFailed` on every rank). Nothing runs when it is not asked for.

What it measures and prints (lines starting ``amldist.runtime: check:``):

- the backend, the world (nodes x processes per node) and the device;
- the bus bandwidth of an all-reduce over the whole world, as nccl-tests define it:
  ``busbw = algbw * 2(n-1)/n`` with ``algbw = bytes / time`` (comparable across world sizes: it
  is what each link carries);
- with several nodes of several processes, each node's own bus bandwidth (an all-reduce within
  every node at once), so that a node far below the rest shows;
- the transport NCCL chose (``IB`` or ``Socket``), read from NCCL's own INFO log, which the check
  sends to a temporary file when NCCL_DEBUG is not set already; gloo always uses TCP;
- when amldist passed the VM size into the job (``AMLDIST_VM_SIZE``, ``AMLDIST_VM_INFINIBAND``,
  ``AMLDIST_EXPECTED_BUSBW_GBS``, from amldist's size catalog) the bandwidth expected across nodes.

It fails (naming the node and the likely cause) when a node's bandwidth is below half the others'
median, when NCCL used sockets on an InfiniBand size, or when the world's bandwidth across nodes is
below half of what the size should give. On CPU (gloo) there is nothing to compare against (a local
run's "nodes" share one machine's cores): it reports the numbers, says so and passes. Every rank
raises the same :class:`FabricCheckFailed`; ``--check`` prints its message on every rank's log.
"""

from __future__ import annotations

import glob
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, MutableMapping

PREFIX = "amldist.runtime: check:"
SIZE_VAR, IB_VAR, EXPECTED_VAR = "AMLDIST_VM_SIZE", "AMLDIST_VM_INFINIBAND", "AMLDIST_EXPECTED_BUSBW_GBS"
NCCL_LOG_VAR = "AMLDIST_CHECK_NCCL_LOG"  # where the NCCL INFO log of the check goes (a glob pattern)
SLOW = 0.5  # below half the others (or the expectation) fails


class FabricCheckFailed(RuntimeError):
    """The fabric check found a slow node or the wrong transport (the message says which and why)."""


def bus_bandwidth(nbytes: int, seconds: float, ranks: int) -> tuple[float, float]:
    """(busbw, algbw) in GB/s of one all-reduce of ``nbytes`` taking ``seconds`` over ``ranks``."""
    algbw = nbytes / seconds / 1e9
    return algbw * 2 * (ranks - 1) / ranks, algbw


def probe_transport(environ: MutableMapping[str, str]) -> str | None:
    """Before NCCL starts: send its INFO lines about the network to a temporary file (unless the user
    set NCCL_DEBUG already); returns the file pattern, or None."""
    if environ.get("NCCL_DEBUG"):
        return None
    pattern = os.path.join(tempfile.gettempdir(), f"amldist-nccl-{os.getpid()}.%h.%p.log")
    environ.update({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_DEBUG_FILE": pattern,
                    NCCL_LOG_VAR: pattern.replace("%h", "*").replace("%p", "*")})
    return pattern


def forget_probe(environ: MutableMapping[str, str]) -> None:
    """After the check: the variables probe_transport() set leave the environment (child processes do not
    inherit them; NCCL read them when it started and keeps its log file)."""
    if environ.get(NCCL_LOG_VAR):
        for name in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", NCCL_LOG_VAR):
            environ.pop(name, None)


def transport_from_log(text: str) -> str | None:
    """``IB`` or ``Socket``, as NCCL's INFO log says it chose ("Using network IB", "NET/IB : Using")."""
    match = re.search(r"Using network (\w+)", text)
    if match:
        return "IB" if match.group(1).startswith("IB") else match.group(1)
    if re.search(r"NET/IB ?: Using", text):
        return "IB"
    if re.search(r"NET/Socket ?: Using", text):
        return "Socket"
    return None


def read_transport(environ: Mapping[str, str]) -> str | None:
    pattern = environ.get(NCCL_LOG_VAR)
    for path in sorted(glob.glob(pattern)) if pattern else []:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                found = transport_from_log(fh.read(1 << 20))
        except OSError:
            continue
        if found:
            return found
    return None


def time_all_reduce(dist, tensor, group, budget: float) -> float:
    """Seconds per all-reduce of ``tensor`` over ``group``: two warm-up calls, then as many as fit in
    ``budget`` (the same count on every rank: the largest any rank asks for)."""
    import torch

    sync = torch.cuda.synchronize if tensor.is_cuda else (lambda: None)
    for _ in range(2):
        dist.all_reduce(tensor, group=group)
    sync()
    started = time.perf_counter()
    dist.all_reduce(tensor, group=group)
    sync()
    once = max(time.perf_counter() - started, 1e-6)
    count = torch.tensor([min(200.0, max(3.0, budget / once))], device=tensor.device)
    dist.all_reduce(count, op=dist.ReduceOp.MAX, group=group)
    dist.barrier(group=group) if not tensor.is_cuda else sync()
    started = time.perf_counter()
    for _ in range(int(count.item())):
        dist.all_reduce(tensor, group=group)
    sync()
    return (time.perf_counter() - started) / int(count.item())


def node_groups(dist, node_rank: int) -> list[list[int]]:
    """The ranks of each node, as the ranks themselves report their node."""
    nodes = [None] * dist.get_world_size()
    dist.all_gather_object(nodes, node_rank)
    return [[rank for rank, node in enumerate(nodes) if node == n] for n in sorted(set(nodes))]


def measure(env, *, seconds: float = 2.0, nbytes: int | None = None) -> dict:
    """Every rank: time the world's all-reduce, then each node's; returns what rank 0 reports."""
    import torch
    import torch.distributed as dist

    began = time.perf_counter()
    backend = str(dist.get_backend())
    cuda = "nccl" in backend and torch.cuda.is_available()
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    nbytes = nbytes or (256 << 20 if cuda else 4 << 20)
    tensor = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    world = dist.get_world_size()
    groups = node_groups(dist, env.node_rank)
    per_world = time_all_reduce(dist, tensor, None, seconds / 2)
    node_bw = {}
    if len(groups) > 1 and all(len(g) > 1 for g in groups):
        mine, _all = dist.new_subgroups_by_enumeration(groups)
        seconds_node = time_all_reduce(dist, tensor, mine, seconds / 2)
        pairs = [None] * world
        dist.all_gather_object(pairs, (env.node_rank, bus_bandwidth(nbytes, seconds_node, len(groups[0]))[0]))
        node_bw = {node: bw for node, bw in pairs}
    busbw, algbw = bus_bandwidth(nbytes, per_world, world)
    seen = [None] * world
    dist.all_gather_object(seen, (env.node_rank, read_transport(os.environ) if cuda else "TCP (gloo)"))
    transports = {}
    for node, transport in seen:
        transports[node] = transports.get(node) or transport
    return {"backend": backend, "world": world, "nodes": len(groups), "per_node": max(len(g) for g in groups),
            "device": str(device), "nbytes": nbytes, "seconds": per_world, "busbw": busbw, "algbw": algbw,
            "node_busbw": node_bw, "transports": transports,
            "elapsed": time.perf_counter() - began}


def judge(r: dict, environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The report's lines and the failures (empty when the check passes). Pure."""
    lines = [f"backend {r['backend']}, world {r['world']} ({r['nodes']} node(s) x {r['per_node']}), "
             f"device {r['device']}",
             f"all-reduce of {r['nbytes'] / 2**20:.0f} MiB over the world: bus bandwidth {r['busbw']:.2f} GB/s "
             f"(algbw {r['algbw']:.2f} GB/s, {r['seconds'] * 1000:.2f} ms each; busbw = algbw * 2(n-1)/n)"]
    if r["world"] == 1:
        lines[1] = "a world of one: an all-reduce crosses no link, there is no bandwidth to measure"
    if r["node_busbw"]:
        lines.append("per node (all-reduce within each node): "
                     + ", ".join(f"node {n} {bw:.2f} GB/s" for n, bw in sorted(r["node_busbw"].items())))
    lines.append(transport_line(r["transports"]))
    gpu = "nccl" in r["backend"]
    failures = slow_nodes(r["node_busbw"]) if gpu else []  # CPU "nodes" of a local run share one machine
    failures += sockets_on_infiniband(r["transports"], environ)
    size, expected = environ.get(SIZE_VAR), environ.get(EXPECTED_VAR)
    if not gpu:
        lines.append("on CPU (gloo) there is nothing to compare against: expected bandwidths are known for NCCL "
                     "between GPUs")
    elif expected and r["nodes"] > 1:
        lines.append(f"expected across nodes on {size}: about {float(expected):.0f} GB/s bus bandwidth")
        if r["busbw"] < SLOW * float(expected):
            slowest = min(r["node_busbw"], key=r["node_busbw"].get) if r["node_busbw"] else None
            failures.append(f"bus bandwidth {r['busbw']:.1f} GB/s is under half of the {float(expected):.0f} GB/s "
                            f"{size} should give" + (f" (slowest node: {slowest})" if slowest is not None else "")
                            + ": NCCL may not be using InfiniBand (run with NCCL_DEBUG=INFO), or a node's link is "
                            "degraded")
    elif size:
        lines.append(f"size {size}: no expectation for one node (the GPUs' own links)")
    return lines, failures


def transport_line(transports: dict) -> str:
    unknown = "not known (NCCL_DEBUG was set by the job: its own log says)"
    kinds = set(transports.values())
    if len(kinds) <= 1:
        return f"transport: {next(iter(kinds), None) or unknown}"
    return "transport: " + ", ".join(f"node {n} {t or unknown}" for n, t in sorted(transports.items()))


def sockets_on_infiniband(transports: dict, environ: Mapping[str, str]) -> list[str]:
    nodes = [str(n) for n, t in sorted(transports.items()) if t == "Socket"]
    if not nodes or environ.get(IB_VAR) != "1":
        return []
    return [f"node {', '.join(nodes)}: NCCL used TCP sockets on {environ.get(SIZE_VAR)}, an InfiniBand size "
            f"(NCCL_IB_DISABLE={environ.get('NCCL_IB_DISABLE', '<unset>')}, NCCL_NET="
            f"{environ.get('NCCL_NET', '<unset>')}): unset them in environment_variables, or use an image with "
            "the InfiniBand libraries"]


def slow_nodes(node_bw: dict) -> list[str]:
    failures = []
    for node, bw in sorted(node_bw.items()):
        others = [v for n, v in node_bw.items() if n != node]
        median = statistics.median(others) if others else None
        if median and bw < SLOW * median:
            failures.append(f"node {node}: {bw:.2f} GB/s within the node, under half of the other nodes' "
                            f"(median {median:.2f} GB/s): a degraded node (GPU links: nvidia-smi topo -m, "
                            "nvidia-smi -q for errors and clocks) or another process on it")
    return failures


def run_check(env, *, seconds: float = 2.0, out=None, environ: Mapping[str, str] | None = None) -> list[str]:
    """Measure on every rank, print from rank 0, return the failures (the same list on every rank)."""
    import torch.distributed as dist

    result = measure(env, seconds=seconds)
    verdict = [None]
    if env.rank == 0:
        lines, failures = judge(result, os.environ if environ is None else environ)
        lines += [f"FAILED: {failure}" for failure in failures] or [f"ok (measured in {result['elapsed']:.1f} s)"]
        print("\n".join(f"{PREFIX} {line}" for line in lines), file=out or sys.stdout, flush=True)
        verdict = [failures]
    dist.broadcast_object_list(verdict, src=0)
    forget_probe(os.environ)
    return verdict[0]
