"""Slurm's compressed lists, read without expanding them: host lists (``gpu[001-004,007],cpu05``)
and task counts per node (``4(x2),2``).

Hand-written because ``scontrol show hostnames`` is not in a training image and no standard
library module reads them. Bounded: the runtime needs only a list's first host and its length
(and one node's task count), so ``HostList`` and ``TaskCounts`` compute those arithmetically,
never building the list; a list that names more than ``MAX_HOSTS`` nodes (``n[0-99][0-99][0-99]
[0-99]`` names 10**8) is refused, as are numbers over ``MAX_INT`` and numbers in a range with
more than ``MAX_DIGITS`` digits. Work and memory stay linear in the text's length.
``expand_hostlist`` and ``expand_counts`` build the full lists, up to ``limit`` entries.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from .dist_env import DistEnvError
from .env_reader import MAX_INT, quote, small_int

# More nodes than any Slurm cluster has (the largest have under 200,000).
MAX_HOSTS = 1_000_000
MAX_DIGITS = 18  # a host number with more digits is no host name; also keeps the arithmetic small

# A piece of a host pattern: literal text, then an optional bracket group.
_PIECE = re.compile(r"([^\[\]]*)(?:\[([^\[\]]*)\])?")
_COUNT = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")


class HostList:
    """A parsed host list: ``first`` host (None when empty), ``count`` of hosts, and iteration
    (lazy) in Slurm's order. Zero padding follows the width of a range's start; several bracket
    groups in one name (``a[1-2]b[3-4]``) give every combination, the leftmost varying slowest."""

    def __init__(self, text: str, var: str = "SLURM_NODELIST", limit: int = MAX_HOSTS):
        try:
            # Each pattern: its pieces, each a list of (low, high, width) ranges or a literal str.
            self._patterns = [_parse_pattern(p) for p in _split_outside_brackets(text)]
            self.count = 0
            for pieces in self._patterns:
                self.count += _combinations(pieces, limit - self.count + 1)
                if self.count > limit:
                    raise ValueError(f"it names more than {limit} hosts")
        except ValueError as err:
            raise DistEnvError(f"{var}={quote(text)} is not a Slurm host list: {err}") from None

    @property
    def first(self) -> str | None:
        if not self._patterns:
            return None
        return "".join(p if isinstance(p, str) else str(p[0][0]).zfill(p[0][2]) for p in self._patterns[0])

    def __iter__(self) -> Iterator[str]:
        for pieces in self._patterns:
            choices = [[p] if isinstance(p, str) else _numbers(p) for p in pieces]
            for combination in itertools.product(*choices):
                yield "".join(combination)


def expand_hostlist(text: str, var: str = "SLURM_NODELIST", limit: int = MAX_HOSTS) -> list[str]:
    """``"gpu[001-004,007],cpu05"`` -> gpu001 … gpu004, gpu007, cpu05, in order (see HostList);
    DistEnvError when malformed or longer than ``limit``."""
    return list(HostList(text, var, limit))


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


def _parse_pattern(pattern: str) -> list:
    pieces: list = []
    pos = 0
    while pos < len(pattern):
        match = _PIECE.match(pattern, pos)
        if match.end() == pos:  # a bracket that opens no group or closes none
            raise ValueError(f"stray bracket in {quote(pattern)}")
        if match[1]:
            pieces.append(match[1])
        if match[2] is not None:
            pieces.append(_parse_ranges(match[2]))
        pos = match.end()
    return pieces


def _parse_ranges(body: str) -> list[tuple[int, int, int]]:
    ranges = []
    for part in body.split(","):
        low, dash, high = part.strip().partition("-")
        if not (low.isascii() and low.isdigit()) or (dash and not (high.isascii() and high.isdigit())):
            raise ValueError(f"bad range {quote(part)}")
        if len(low) > MAX_DIGITS or len(high) > MAX_DIGITS:
            raise ValueError(f"number in {quote(part)} has more than {MAX_DIGITS} digits")
        start, end = int(low), int(high or low)
        if end < start:
            raise ValueError(f"range {quote(part)} runs backwards")
        ranges.append((start, end, len(low)))
    return ranges


def _combinations(pieces: list, cap: int) -> int:
    """How many hosts a pattern names, stopping at ``cap`` (the product of its groups' sizes)."""
    total = 1
    for piece in pieces:
        if not isinstance(piece, str):
            total *= sum(end - start + 1 for start, end, _ in piece)
            if total >= cap:
                return cap
    return total


def _numbers(ranges: list[tuple[int, int, int]]) -> Iterator[str]:
    for start, end, width in ranges:
        for n in range(start, end + 1):
            yield str(n).zfill(width)


class TaskCounts:
    """SLURM_TASKS_PER_NODE (``"4(x2),2"``: one count per node, in node order), kept as runs of
    ``(tasks, nodes)``; ``for_node`` finds a node's count without expanding the runs."""

    def __init__(self, text: str, var: str = "SLURM_TASKS_PER_NODE", limit: int = MAX_HOSTS):
        self.runs: list[tuple[int, int]] = []
        nodes = 0
        for item in text.split(","):
            match = _COUNT.fullmatch(item.strip())
            tasks = small_int(match[1]) if match else None
            repeat = small_int(match[2] or "1") if match else None
            if tasks is None or repeat is None:
                raise DistEnvError(f"{var}={quote(text)} is not a Slurm task count list like '4(x2),2' "
                                   f"(numbers up to {MAX_INT})")
            nodes += repeat
            if nodes > limit:
                raise DistEnvError(f"{var}={quote(text)} describes more than {limit} nodes")
            self.runs.append((tasks, repeat))
        self.nodes = nodes

    def for_node(self, node: int) -> int | None:
        """Tasks on node ``node`` (0-based), or None when the list has no entry for it."""
        for tasks, repeat in self.runs:
            if node < repeat:
                return tasks
            node -= repeat
        return None


def expand_counts(text: str, var: str = "SLURM_TASKS_PER_NODE", limit: int = MAX_HOSTS) -> list[int]:
    """``"4(x2),2"`` -> ``[4, 4, 2]``; DistEnvError when malformed or longer than ``limit``."""
    return [tasks for tasks, repeat in TaskCounts(text, var, limit).runs for _ in range(repeat)]
