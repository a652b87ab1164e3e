"""Slurm: each task started by ``srun`` carries its place in SLURM_* variables; the master is
the first host of the node list, which is compressed (``gpu[001-004,007],cpu05``) and has to
be expanded here because ``scontrol`` is not in a training image."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._env import DEFAULT_PORT, DistEnv, DistEnvError, EnvReader

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_COUNT = re.compile(r"(\d+)(?:\(x(\d+)\))?")


class Slurm:
    name = "slurm"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        r = EnvReader(environ)
        return r.has("SLURM_PROCID") and r.has("SLURM_NTASKS")

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        why = " when SLURM_PROCID is (srun sets both)"
        rank = r.require_int("rank", "SLURM_PROCID")
        world_size = r.require_int("world_size", "SLURM_NTASKS", minimum=1)
        local_rank = r.require_int("local_rank", "SLURM_LOCALID", context=why)
        node_rank = r.require_int("node_rank", "SLURM_NODEID", context=why)
        # srun sets SLURM_NODELIST to the step's nodes; SLURM_JOB_NODELIST is the whole job's.
        # Rank 0 runs on the step's first node, so the step's list comes first.
        list_var = r.first("SLURM_NODELIST", "SLURM_JOB_NODELIST")
        hosts = expand_hostlist(r.environ[list_var], list_var) if list_var else []
        num_nodes = r.get_int("num_nodes", "SLURM_NNODES", minimum=1)
        if num_nodes is None:
            if not hosts:
                raise DistEnvError(f"SLURM_NNODES or SLURM_NODELIST must be set{why}")
            num_nodes = r.derived("num_nodes", len(hosts), list_var)
        local_world_size = _tasks_on_node(r, node_rank)
        default_addr = hosts[0] if hosts else ("127.0.0.1" if num_nodes == 1 else None)
        return r.build(
            Slurm.name, rank=rank, local_rank=local_rank, world_size=world_size,
            local_world_size=local_world_size, node_rank=node_rank, num_nodes=num_nodes,
            master_addr=r.master_addr(
                default_addr, list_var or "default",
                missing=f"MASTER_ADDR, MASTER_IP or SLURM_NODELIST must be set when SLURM_NNODES={num_nodes}"),
            master_port=r.master_port(DEFAULT_PORT),
        )


def _tasks_on_node(r: EnvReader, node_rank: int) -> int:
    # SLURM_TASKS_PER_NODE first: it is per node, so it is right for uneven layouts too.
    if r.has("SLURM_TASKS_PER_NODE"):
        counts = expand_counts(r.environ["SLURM_TASKS_PER_NODE"], "SLURM_TASKS_PER_NODE")
        if node_rank >= len(counts):
            raise DistEnvError(
                f"SLURM_NODEID={node_rank} has no entry in SLURM_TASKS_PER_NODE={r.environ['SLURM_TASKS_PER_NODE']!r}"
            )
        return r.derived("local_world_size", counts[node_rank], f"SLURM_TASKS_PER_NODE[{node_rank}]")
    per_node = r.get_int("local_world_size", "SLURM_NTASKS_PER_NODE", minimum=1)
    if per_node is None:
        raise DistEnvError("SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE must be set when SLURM_PROCID is")
    return per_node


def expand_counts(text: str, var: str = "SLURM_TASKS_PER_NODE") -> list[int]:
    """``"4(x2),2"`` -> ``[4, 4, 2]``: one count per node, in node order."""
    counts: list[int] = []
    for item in text.split(","):
        match = _COUNT.fullmatch(item.strip())
        if not match:
            raise DistEnvError(f"{var}={text!r} is not a Slurm task count list like '4(x2),2'")
        counts += [int(match[1])] * int(match[2] or 1)
    return counts


def expand_hostlist(text: str, var: str = "SLURM_NODELIST") -> list[str]:
    """``"gpu[001-004,007],cpu05"`` -> gpu001 … gpu004, gpu007, cpu05, in order.

    Zero padding follows the width of the range's start; several bracket groups in one name
    (``a[1-2]b[3-4]``) give every combination, the leftmost group varying slowest.
    """
    try:
        return [host for pattern in _split_outside_brackets(text) for host in _expand_pattern(pattern)]
    except ValueError as err:
        raise DistEnvError(f"{var}={text!r} is not a Slurm host list: {err}") from None


def _split_outside_brackets(text: str) -> list[str]:
    patterns, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError("unbalanced brackets")
        if char == "," and depth == 0:
            patterns.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError("unbalanced brackets")
    patterns.append(text[start:])
    return [p.strip() for p in patterns if p.strip()]


def _expand_pattern(pattern: str) -> list[str]:
    match = _BRACKET.search(pattern)
    if not match:
        if "[" in pattern or "]" in pattern:
            raise ValueError(f"stray bracket in {pattern!r}")
        return [pattern]
    prefix, tails = pattern[: match.start()], _expand_pattern(pattern[match.end():])
    if "[" in prefix or "]" in prefix:
        raise ValueError(f"stray bracket in {pattern!r}")
    return [prefix + number + tail for number in _expand_ranges(match[1]) for tail in tails]


def _expand_ranges(body: str) -> list[str]:
    numbers: list[str] = []
    for part in body.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"bad range {part!r}")
        if not dash:
            numbers.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"range {part!r} runs backwards")
        numbers += [str(n).zfill(len(low)) for n in range(int(low), int(high) + 1)]
    return numbers
