"""The fault drill's faults: ``amldist submit FILE --local --inject FAULT`` (and ``--slurm``), one rule for
every backend that starts processes.

    preempt:node=N,after=SECONDS[,grace=SECONDS]   SIGTERM to every process of node N, SIGKILL after the
                                                    grace period (default 10 s), as a preempted VM and
                                                    Slurm's preemption do
    kill:rank=R,after=SECONDS                       SIGKILL to rank R (a process killed from outside)
    hang:rank=R,after=SECONDS                       SIGSTOP to rank R: it stays, and does nothing more
    slow:rank=R,factor=F[,after=SECONDS]            rank R gets 1/F of the wall-clock time from then on
                                                    (stopped and continued in turn, 100 ms a period)

``slow`` is honest about what it is: the rank runs at full speed for a slice and is stopped for the
rest of each period, so its throughput is 1/F of what it was, measured over periods, not slower
instructions. Numbers are plain decimal ASCII (``²`` or ``1e9`` are not numbers here), bounded: a node or
rank below 100,000, seconds up to a week, a factor from 1 to 100. A bad FAULT is one line naming the
part that is wrong; a node or rank the job does not have is one line at plan time (:func:`check_targets`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amldist.errors import UserError

KINDS = {  # kind -> (its target key, the keys it takes, the keys it needs)
    "preempt": ("node", {"node", "after", "grace"}, {"node", "after"}),
    "kill": ("rank", {"rank", "after"}, {"rank", "after"}),
    "hang": ("rank", {"rank", "after"}, {"rank", "after"}),
    "slow": ("rank", {"rank", "factor", "after"}, {"rank", "factor"}),
}
MAX_TARGET = 100_000
MAX_SECONDS = 7 * 24 * 3600
DEFAULT_GRACE = 10.0
SYNTAX = "FAULT is preempt:node=N,after=S | kill:rank=R,after=S | hang:rank=R,after=S | slow:rank=R,factor=F"
_NUMBER = re.compile(r"[0-9]{1,9}(\.[0-9]{1,6})?")


@dataclass(frozen=True)
class Fault:
    kind: str  # preempt | kill | hang | slow
    target: int  # the node (preempt) or the rank (the others)
    after: float = 0.0  # seconds after the processes started
    grace: float = DEFAULT_GRACE  # preempt: SIGTERM -> SIGKILL
    factor: float = 1.0  # slow

    @property
    def target_key(self) -> str:
        return KINDS[self.kind][0]

    def text(self) -> str:
        """The fault as it is written on the command line (what records and diagnoses show)."""
        parts = [f"{self.target_key}={self.target}", f"after={self.after:g}"]
        if self.kind == "preempt":
            parts.append(f"grace={self.grace:g}")
        if self.kind == "slow":
            parts.append(f"factor={self.factor:g}")
        return f"{self.kind}:{','.join(parts)}"

    def to_json(self) -> dict:
        return {"kind": self.kind, self.target_key: self.target, "after": self.after, "grace": self.grace,
                "factor": self.factor, "text": self.text()}


def parse_fault(text: str) -> Fault:
    """One ``--inject`` value (see the module docstring); UserError naming what is wrong."""
    kind, sep, rest = str(text).partition(":")
    if kind not in KINDS or not sep:
        raise UserError(f"--inject {text!r}: unknown fault {kind!r}", hint=SYNTAX)
    target_key, allowed, needed = KINDS[kind]
    values: dict[str, str] = {}
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if not eq or key not in allowed or key in values:
            raise UserError(f"--inject {text!r}: {part!r} is not one of {', '.join(sorted(allowed))} (key=value, "
                            "each once)", hint=SYNTAX)
        if not _NUMBER.fullmatch(value):
            raise UserError(f"--inject {text!r}: {key}={value!r} is not a plain decimal number", hint=SYNTAX)
        values[key] = value
    missing = sorted(needed - values.keys())
    if missing:
        raise UserError(f"--inject {text!r}: {', '.join(missing)} missing", hint=SYNTAX)
    return _bounded(text, kind, target_key, values)


def _bounded(text: str, kind: str, target_key: str, values: dict[str, str]) -> Fault:
    target = float(values[target_key])
    after, grace = float(values.get("after", 0)), float(values.get("grace", DEFAULT_GRACE))
    factor = float(values.get("factor", 1))
    if target != int(target) or target >= MAX_TARGET:
        raise UserError(f"--inject {text!r}: {target_key} must be a whole number below {MAX_TARGET}")
    if after > MAX_SECONDS or grace > MAX_SECONDS:
        raise UserError(f"--inject {text!r}: seconds are at most {MAX_SECONDS} (a week)")
    if kind == "slow" and not 1 <= factor <= 100:
        raise UserError(f"--inject {text!r}: factor is from 1 to 100 (how many times slower)")
    return Fault(kind, int(target), after, grace, factor)


def parse_faults(texts) -> tuple[Fault, ...]:
    return tuple(parse_fault(t) for t in texts or ())


def check_targets(faults, *, nodes: int, ranks: list[int | None], where: str) -> None:
    """Every fault names a node or a rank the job has (``ranks``: each process's rank, None for processes
    without one, such as TensorFlow's tasks): one line otherwise."""
    known = {r for r in ranks if r is not None}
    for fault in faults:
        if fault.target_key == "node" and fault.target >= nodes:
            raise UserError(f"{where}: --inject {fault.text()}: the job has {nodes} node(s), 0 to {nodes - 1}")
        if fault.target_key == "rank" and fault.target not in known:
            have = f"ranks 0 to {max(known)}" if known else "no numbered ranks (target a node with preempt:)"
            raise UserError(f"{where}: --inject {fault.text()}: the job has {have}")
