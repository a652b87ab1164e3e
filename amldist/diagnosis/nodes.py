"""Which node a node-level fault is on (an InfiniBand link, an ECC error, a lost GPU), and the rank to name.

A GPU fault is on the node of the rank that logged it. An InfiniBand completion error is logged by *both*
ends of a failed link, each naming the other as ``peer``, and the first line by time may well be the healthy
end's. So every node-level line of the job is counted against the nodes it involves: the node that logged it,
and the peer it names (the peer's address is mapped to a node through NCCL's own ``OOB eth0:10.0.0.5<0>`` /
``Bootstrap : Using eth0:10.0.0.5<0>`` lines). The node involved in most is the culprit (on a tie, the node of
the earliest line), and the rank named is that node's earliest rank with such a line.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter

from amldist.diagnosis.scan import last_line
from amldist.diagnosis.signatures import RankLog

PEER = re.compile(r"from peer ([0-9A-Fa-f.:]+?)(?:<\d+>)?\s+with")
OWN_ADDRESS = r"(OOB|Bootstrap ?: Using) [A-Za-z0-9_.-]+:[0-9A-Fa-f.:]+<"
ADDRESS = re.compile(r"(?:OOB|Bootstrap ?: Using) [A-Za-z0-9_.-]+:([0-9A-Fa-f.:]+)<")


def when(log: RankLog) -> float:
    return math.inf if log.ended is None else log.ended


def blame_node(found: list, first: tuple) -> tuple:
    """``first`` (a rank and its finding), moved to the node at fault when its finding is a node's."""
    log, finding = first
    if finding is None or finding.scope != "node":
        return first
    faults = sorted(((l, f) for l, f in found if f is not None and f.scope == "node"), key=lambda item: when(item[0]))
    count: Counter = Counter()
    nodes_by_address = addresses(found) if any(f.signature == "ib-completion-error" for _l, f in faults) else {}
    for fault_log, fault in faults:
        count[fault_log.node] += 1
        peer = PEER.search(fault.line)
        if peer and peer.group(1) in nodes_by_address:
            count[nodes_by_address[peer.group(1)]] += 1
    if count and None not in count:
        top = max(count.values())
        culprit = next(l.node for l, _f in faults if count[l.node] == top)  # the earliest of the most involved
        log, finding = next((l, f) for l, f in faults if l.node == culprit)
    return log, dataclasses.replace(finding, hint=f"{where(log)}: {finding.hint}", ranks=[log.rank])


def addresses(found: list) -> dict:
    """{IP address: node} from each rank's NCCL address line."""
    known = {}
    for log, _finding in found:
        line = last_line(log.text, OWN_ADDRESS, 0) if log.node is not None else None
        match = ADDRESS.search(line or "")
        if match:
            known.setdefault(match.group(1), log.node)
    return known


def where(log: RankLog) -> str:
    if log.node is None:
        return f"the node of {log.label}" + (f" (host {log.host})" if log.host else "")
    return f"node {log.node}" + (f" (host {log.host})" if log.host else "")

