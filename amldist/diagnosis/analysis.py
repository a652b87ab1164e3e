"""From every rank's log, exit code and end time to one :class:`Diagnosis`: which rank failed
first, why, and what to change.

"First" is by time: the rank whose failure came earliest (its recorded end time locally, the
last timestamp of its log on Azure ML), never the lowest number. Ranks that only suffered
another's failure (``Finding.consequence``: a peer that left, a collective timeout, a stop by
the launcher) come after every rank with a cause of its own. When only such ranks failed, the
cause is a rank that left: one that exited while the others still waited for it (``left-early``),
or, after a collective timeout, the ranks that never reached it (``never-joined``). The stall
watchdog's own line names the stuck rank outright.

Before all of that, what the ranks' collectives say (:mod:`amldist.diagnosis.collectives`: the Flight
Recorder's dumps, or NCCL's watchdog lines) names the rank that called a different collective, is behind or
ahead; the rule above decides only when that evidence is missing or the ranks agree. ``Diagnosis.evidence``
says which evidence the answer rests on.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

from amldist.diagnosis import collectives
from amldist.diagnosis.nodes import blame_node
from amldist.diagnosis.signatures import (STALL_RE, Context, Finding, RankLog, classify, lines_of, nccl_sockets,
                                          signal_text, user_frame)

TAIL_LINES = 20


@dataclass
class Diagnosis:
    job: str
    status: str | None
    backend: str
    rank: RankLog | None = None  # the first failing rank
    finding: Finding | None = None
    notes: list = field(default_factory=list)  # findings about the job besides the cause (e.g. NCCL on sockets)
    step: str | None = None  # for a pipeline: the failed step
    ranks: list = field(default_factory=list)  # every RankLog, in rank order
    evidence: str | None = None  # what the answer rests on: "flight recorder of 4 ranks", ...

    @property
    def exit_code(self) -> int:
        """0 when a cause was found (or nothing failed), 1 when the job failed for a reason not named."""
        if self.rank is None:  # no rank to blame; the service may still have named the cause (a preemption)
            return 1 if self.status == "Failed" and self.finding is None else 0
        return 1 if self.finding is None else 0

    def tail(self, lines: int = TAIL_LINES) -> str:
        return "\n".join(self.rank.text.splitlines()[-lines:]) if self.rank is not None else ""


def failed(log: RankLog, finding: Finding | None) -> bool:
    return log.exit_code not in (None, 0) or (finding is not None and finding.signature != "nccl-sockets")


def by_time(item: tuple[RankLog, Finding | None]) -> tuple:
    log, finding = item
    return (math.inf if log.ended is None else log.ended, finding is None, -1 if log.rank is None else log.rank)


def diagnose(logs: list[RankLog], ctx: Context, *, job: str, status: str | None, backend: str,
             evidence: collectives.Evidence | None = None) -> Diagnosis:
    found = [(log, classify(log, ctx)) for log in logs]
    for log, finding in found:
        log.signature = finding.signature if finding is not None else None
    result = Diagnosis(job, status, backend, ranks=logs)
    result.notes = sockets_notes(logs, ctx)
    stuck = stalled(found)
    # what every rank's collectives say comes first; then the watchdog; then the first failure by time
    blamed = collectives.blame(found, evidence or collectives.Evidence(), ctx.world or len(logs), stuck)
    if blamed is not None:
        result.rank, result.finding, result.evidence = blamed
        return result
    if stuck is not None:
        result.rank, result.finding = stuck
        result.evidence = "amldist's stall watchdog"
        return result
    result.evidence = f"exit codes, end times and log lines of {len(logs)} ranks (the first failure by time)"
    failing = [(log, f) for log, f in found if failed(log, f)]
    causes = sorted(((log, f) for log, f in failing if f is None or not f.consequence), key=by_time)
    if causes:
        result.rank, result.finding = blame_node(found, causes[0])  # a node fault: the node most involved
        return result
    waiting = sorted(failing, key=by_time)
    if not waiting:
        if status == "Failed" and logs:  # no exit code, no known line (Azure ML): the log that went quiet first
            result.rank = sorted(logs, key=lambda log: by_time((log, None)))[0]
        return result
    left = left_early(found, waiting)
    result.rank, result.finding = left if left is not None else (
        never_joined(found, waiting) or all_stopped(waiting, status) or waiting[0])
    return result


def all_stopped(waiting: list, status: str | None) -> tuple[RankLog, Finding] | None:
    """Every failing rank was stopped by the launcher and none failed by itself: the job was canceled, or
    it hung until limits.timeout."""
    if not all(f is not None and f.signature == "stopped" for _log, f in waiting):
        return None
    log = waiting[0][0]
    if status == "Canceled":
        return log, Finding("canceled", f"every rank was stopped ({signal_text(log.exit_code)}): the job was "
                            "canceled", "nothing failed: it was stopped by its user (amldist job cancel, Ctrl-C)")
    return log, Finding("hung", f"every rank was stopped by the launcher ({signal_text(log.exit_code)}); none "
                        "failed by itself", "the job hung until limits.timeout (or a cancel): set "
                        "AMLDIST_STALL_TIMEOUT in environment_variables (and call init_distributed()) so the "
                        "stuck rank is named with every rank's stack next time",
                        field="environment_variables.AMLDIST_STALL_TIMEOUT")


def stalled(found: list) -> tuple[RankLog, Finding] | None:
    """The rank the watchdog named, with its stack's innermost user frame."""
    for log, finding in found:
        if finding is not None and finding.signature == "stall":
            stuck = finding.ranks[0]
            own = next((item for item in found if item[0].rank == stuck), None)
            if own is None:
                return log, finding
            frame = stack_frame(own[0].text)
            return own[0], dataclasses.replace(finding, consequence=False, frame=frame)
    return None


def stack_frame(text: str) -> str | None:
    """The user's innermost frame in the main thread's stack, from the last faulthandler dump in the log
    (the main thread's block is the one that starts at ``<module>``; the others start in threading)."""
    blocks, current = [], None
    for line in lines_of(text):
        if re.match(r"(Current thread|Thread) 0x[0-9a-fA-F]+", line):
            current = []
            blocks.append(current)
        elif current is not None and line.strip().startswith("File "):
            current.append(line.strip())
        else:
            current = None
    mains = [b for b in blocks if b and "in <module>" in b[-1]]
    if not mains:
        return None
    return user_frame(list(reversed(mains[-1])))  # faulthandler lists the most recent call first


def left_early(found: list, waiting: list) -> tuple[RankLog, Finding] | None:
    """A rank that ended (by itself, code 0 or not) before the first waiting rank failed."""
    first = waiting[0][0].ended
    for log, finding in sorted(found, key=by_time):
        if log.ended is None or first is None or log.ended > first:
            break
        if finding is None or not finding.consequence:
            others = ", ".join(str(w.rank) for w, _ in waiting if w.rank is not None)
            line = f"{log.label} ended ({signal_text(log.exit_code)}) while ranks {others} still waited for it"
            return log, Finding("left-early", line, f"{log.label} left the job while the others waited in a "
                                "collective: every rank must reach the same collectives (and call "
                                "amldist.runtime.destroy() at the end); see why it left in its log",
                                field="command", ranks=[log.rank])
    return None


def never_joined(found: list, waiting: list) -> tuple[RankLog, Finding] | None:
    """After a collective timeout: the ranks that did not time out are the ones that never came."""
    timed_out = {log.rank for log, f in found if f is not None and f.signature == "collective-timeout"}
    if not timed_out:
        return None
    absent = [log for log, f in found if log.rank not in timed_out]
    if not absent:
        return None
    names = ", ".join(str(log.rank) for log in absent)
    waited = next(f for log, f in found if f is not None and f.signature == "collective-timeout")
    line = f"ranks {', '.join(str(r) for r in sorted(timed_out))} timed out in a collective; rank(s) {names} never joined it"
    finding = Finding("never-joined", line, f"rank(s) {names} never reached the collective the others waited in "
                      f"({waited.line[:200]}): look at where their logs end; every rank must call the same "
                      "collectives", field="command", ranks=[log.rank for log in absent])
    return absent[0], finding


def sockets_notes(logs: list[RankLog], ctx: Context) -> list[Finding]:
    """NCCL on sockets where InfiniBand is expected: said once for the job, whatever the cause."""
    if not (ctx.vm_size is not None and ctx.vm_size.infiniband) and not ctx.environment.get("NCCL_IB_DISABLE"):
        return []  # nccl_sockets() says nothing then: no need to read every log again
    for log in logs:
        finding = nccl_sockets(log, ctx)
        if finding is not None:
            return [finding]
    return []
