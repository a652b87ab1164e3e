"""Which rank broke the job, from the collectives every rank ran: attribution across ranks.

A collective needs every rank. When one rank calls a different collective, skips one, calls one more, or
never gets to the next, all ranks end up failing or timing out together, and the first log to end is as
often a victim's as the culprit's. What each rank *called*, in order, tells them apart. The evidence, per rank
(:class:`Trail`), is the best of:

- the Flight Recorder's dump the runtime shim writes when a rank fails (``user_logs/amldist/rank_NN.fr.json``,
  :mod:`amldist.runtime.evidence`): every collective of the default process group with its sequence number,
  operation and sizes;
- on Azure ML without those dumps, ProcessGroupNCCL's watchdog lines in the rank's log:
  ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, ...)`` and
  ``last enqueued NCCL work: 1234, last completed NCCL work: 1233`` (its periodic update and its dump notice
  say the same, ``Last enqueued``).

:func:`attribute` then names, in this order:

1. ``collective-mismatch``: at the first sequence number where the ranks' calls differ (operation or sizes),
   the ranks in the minority (a rank that skipped or added a collective earlier shows up here too, since
   its next calls are out of step);
2. ``collective-behind`` / ``collective-ahead``: the ranks whose last collective is not the others' (behind:
   they never entered the collective the others waited in; ahead: they called one the others never did).

A tie (two ranks, or two halves) names the group that is behind, or at a mismatch the group without the
lowest rank. Ranks that left no evidence (killed by a signal) are not judged by their absence: when the
ranks that did leave evidence agree, there is no attribution, and the first failure by time decides
(:mod:`amldist.diagnosis.analysis`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from amldist.diagnosis.signatures import Finding, signal_text
from amldist.model.files import FileProblem, read_bytes
from amldist.runtime.evidence import EVIDENCE_FOLDER

EVIDENCE_DIR_NAME = EVIDENCE_FOLDER  # user_logs/amldist/ of a local run, logs/amldist/ on Azure ML
MAX_EVIDENCE_BYTES = 16 * 2**20  # a dump of TORCH_FR_BUFFER_SIZE=2000 entries is under 1 MiB
EVIDENCE_FILE = re.compile(r"^rank_(\d{1,7})\.(fr|error)\.json$")
NCCL_WORK = re.compile(r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)")
NCCL_ENQUEUED = re.compile(r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Call:
    """One collective as one rank called it."""

    op: str  # all_reduce, broadcast, barrier... (lower case, without the backend's prefix)
    sizes: str = ""  # the input sizes, when the evidence has them

    def text(self) -> str:
        return self.op + (f" {self.sizes}" if self.sizes else "")


@dataclass
class Trail:
    """What one rank left about its collectives."""

    rank: int
    calls: dict = field(default_factory=dict)  # sequence number -> Call
    last: int | None = None  # the last sequence number it enqueued
    source: str = "flight recorder"


@dataclass
class Evidence:
    """Every rank's trail and error file (see :mod:`amldist.runtime.evidence`)."""

    trails: dict = field(default_factory=dict)  # rank -> Trail
    errors: dict = field(default_factory=dict)  # rank -> the error file's object


@dataclass(frozen=True)
class Attribution:
    signature: str  # collective-mismatch | collective-behind | collective-ahead
    ranks: list  # the culprits
    line: str  # what was observed
    evidence: str  # e.g. "flight recorder of 4 ranks"


def read_folder(folder: str) -> Evidence:
    """The evidence files in ``folder`` (regular files only, each at most :data:`MAX_EVIDENCE_BYTES`)."""
    found = Evidence()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        match = EVIDENCE_FILE.match(name)
        if not match:
            continue
        try:
            data = json.loads(read_bytes(os.path.join(folder, name), max_bytes=MAX_EVIDENCE_BYTES))
        except (FileProblem, ValueError, RecursionError):
            continue  # a file cut short or not ours: the other ranks' evidence still counts
        rank = int(match.group(1))
        if match.group(2) == "error" and isinstance(data, dict):
            found.errors[rank] = data
        elif match.group(2) == "fr":
            trail = fr_trail(rank, data)
            if trail is not None:
                found.trails[rank] = trail
    return found


def find_folder(root: str, max_depth: int = 4) -> str | None:
    """An Azure ML job's evidence folder in its downloaded artifacts: ``logs/amldist/`` at most ``max_depth``
    folders down (``az ml job download`` and ``MLClient.jobs.download`` nest it under ``artifacts/``); never
    under ``outputs/`` (what a job writes there is its own) and never through a link."""
    for here, folders, _files in os.walk(root):
        depth = os.path.relpath(here, root).count(os.sep) + (here != root)
        folders[:] = [] if depth >= max_depth else sorted(f for f in folders if f != "outputs"
                                                          and not os.path.islink(os.path.join(here, f)))
        if os.path.basename(here) == "logs" and EVIDENCE_DIR_NAME in folders:
            return os.path.join(here, EVIDENCE_DIR_NAME)
    return None


def fr_trail(rank: int, dump) -> Trail | None:
    """A rank's trail from its Flight Recorder dump: the default process group's collectives."""
    entries = dump.get("entries") if isinstance(dump, dict) else None
    if not isinstance(entries, list):
        return None
    trail = Trail(rank)
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("is_p2p") or not default_group(entry.get("process_group")):
            continue
        seq = entry.get("collective_seq_id")
        if isinstance(seq, int) and seq > 0:
            name = str(entry.get("profiling_name") or "?").rsplit(":", 1)[-1]
            trail.calls[seq] = Call(name.lower(), shapes(entry.get("input_sizes")))
    trail.last = max(trail.calls, default=None)
    return trail


def shapes(sizes) -> str:
    """``[[4], [2, 3]]`` as ``[4] [2x3]``: the tensors' shapes, which must match across ranks."""
    if not isinstance(sizes, list):
        return ""
    return " ".join("[" + "x".join(str(n) for n in shape) + "]" if isinstance(shape, list) else "[?]"
                    for shape in sizes[:8])


def default_group(group) -> bool:
    """The default process group, whose sequence numbers every rank shares (subgroups count apart)."""
    return isinstance(group, list) and len(group) == 2 and group[1] == "default_pg"


def nccl_trail(rank: int, text: str) -> Trail | None:
    """A rank's trail from ProcessGroupNCCL's watchdog lines in its log (no sizes: the op alone)."""
    trail = Trail(rank, source="NCCL watchdog lines")
    for line in text.splitlines()[-2000:]:
        work = NCCL_WORK.search(line)
        if work:
            trail.calls[int(work.group(1))] = Call(work.group(2).lower())
        enqueued = NCCL_ENQUEUED.search(line)
        if enqueued:
            trail.last = int(enqueued.group(1))
    if trail.last is None:
        trail.last = max(trail.calls, default=None)
    return trail if trail.last is not None else None


def minority(groups: dict, keep) -> tuple[object, list]:
    """(the largest group's key, the ranks outside it); on a tie the largest is the one ``keep`` says True of."""
    ranked = sorted(groups, key=lambda key: (-len(groups[key]), not keep(key)))
    return ranked[0], sorted(rank for key in ranked[1:] for rank in groups[key])


def mismatch(trails: dict) -> tuple[int, list, dict] | None:
    """(sequence number, culprits, calls by rank) at the first sequence where the ranks' calls differ."""
    for seq in sorted({seq for trail in trails.values() for seq in trail.calls}):
        calls = {rank: trail.calls[seq] for rank, trail in trails.items() if seq in trail.calls}
        groups: dict = {}
        for rank, call in sorted(calls.items()):
            groups.setdefault(call, []).append(rank)
        if len(groups) > 1:
            lowest = min(calls)
            return seq, minority(groups, lambda call: lowest in groups[call])[1], calls
    return None


def ranks_text(ranks) -> str:
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def attribute(trails: dict, world: int) -> Attribution | None:
    """The rank(s) the trails single out (see the module docstring), or None when they agree."""
    if len(trails) < 2:
        return None
    sources = sorted({trail.source for trail in trails.values()})
    missing = sorted(set(range(world)) - set(trails)) if world else []
    evidence = f"{' and '.join(sources)} of {len(trails)} ranks" + (
        f" ({ranks_text(missing)} left none)" if missing else "")
    found = mismatch(trails)
    if found is not None:
        seq, culprits, calls = found
        others = sorted(set(calls) - set(culprits))
        theirs = calls[others[0]].text() if others else "?"
        line = (f"{ranks_text(culprits)} called {calls[culprits[0]].text()} as collective #{seq} where "
                f"{ranks_text(others)} called {theirs}")
        return Attribution("collective-mismatch", culprits, line, evidence)
    lasts: dict = {}
    for rank, trail in sorted(trails.items()):
        lasts.setdefault(trail.last, []).append(rank)
    if len(lasts) < 2:
        return None
    theirs, culprits = minority(lasts, lambda last: last != min(lasts))  # on a tie the ranks behind are named
    mine, others = trails[culprits[0]].last, lasts[theirs]
    if mine < theirs:
        waited = next((t.calls[theirs].text() for t in trails.values() if theirs in t.calls), "a collective")
        line = (f"{ranks_text(culprits)} never entered collective #{theirs} ({waited}) that {ranks_text(others)} "
                f"waited in; its last was #{mine}")
        return Attribution("collective-behind", culprits, line, evidence)
    extra = trails[culprits[0]].calls.get(mine)
    line = (f"{ranks_text(culprits)} called collective #{mine} ({extra.text() if extra else 'a collective'}) that "
            f"{ranks_text(others)} never called (their last was #{theirs})")
    return Attribution("collective-ahead", culprits, line, evidence)


def job_trails(evidence: Evidence, logs) -> dict:
    """The trails to judge: the Flight Recorder's when any rank left one, else the NCCL watchdog's lines."""
    if evidence.trails:
        return dict(evidence.trails)
    trails = {}
    for log in logs:
        if log.rank is not None:
            trail = nccl_trail(log.rank, log.text)
            if trail is not None:
                trails[log.rank] = trail
    return trails


HINTS = {
    "collective-mismatch": "every rank must call the same collectives in the same order with the same sizes: look "
                           "for a collective in a branch that depends on the rank or the data, or one skipped on "
                           "some step (where: above is where this rank was)",
    "collective-behind": "this rank never reached the collective the others waited in: see where it was (where: "
                         "above) and why its log stops there (a hang, a skipped collective, fewer steps)",
    "collective-ahead": "this rank called a collective the others never called: a collective under `if rank == "
                        "0:` (logging, a metric), or a loop that ran more steps on this rank",
}


def blame(found: list, evidence: Evidence, world: int, stuck=None):
    """(RankLog, Finding, evidence text) for the rank the collectives single out, or None.

    ``found`` is every (RankLog, Finding) of the job; ``stuck`` what the stall watchdog named. The culprit keeps a
    cause of its own (an exception, a kill, the watchdog naming the rank that is behind, with its stack);
    otherwise the attribution is the cause (a mismatch says more than "no progress", whoever the watchdog named).
    """
    att = attribute(job_trails(evidence, [log for log, _f in found]), world)
    culprit = next(((log, f) for log, f in found if att is not None and log.rank == att.ranks[0]), None)
    if culprit is None:
        return None
    log, own = culprit
    if stuck is not None and stuck[0].rank == log.rank and att.signature == "collective-behind":
        return stuck[0], stuck[1], f"{att.evidence} and the stall watchdog"
    if own is not None and not own.consequence and own.signature != "stall":
        return log, own, f"{att.evidence}: {att.line}"
    frame = error_frame(evidence.errors.get(log.rank))
    if att.signature == "collective-behind" and log.exit_code == 0:  # it left, content, while the others waited
        line = f"{att.line}; it ended by itself ({signal_text(log.exit_code)})"
        return log, Finding("left-early", line, f"{log.label} left the job while the others waited in a collective: "
                            "every rank must reach the same collectives (and call amldist.runtime.destroy() at the "
                            "end); see why it left in its log", field="command", frame=frame, ranks=att.ranks), \
            att.evidence
    return log, Finding(att.signature, att.line, HINTS[att.signature], field="command", frame=frame,
                        ranks=att.ranks), att.evidence


def error_frame(error) -> str | None:
    """The error file's user frame, written as a traceback writes it (so ``where:`` reads the same)."""
    frame = error.get("frame") if isinstance(error, dict) else None
    if not isinstance(frame, dict) or not isinstance(frame.get("file"), str):
        return None
    return f'File "{frame["file"][:500]}", line {frame.get("line")}, in {str(frame.get("function"))[:100]}'
