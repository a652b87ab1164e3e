"""What a Slurm run records for the fault drill and for retries, read back as data, and what a retry keeps off.

- The drill (``--inject``, :mod:`amldist.rules.faults`): each task's watcher (:func:`amldist.backends.slurm.script.
  drill_watchers`) writes ``state/fault_<i>_rank_<r>`` when fault ``i`` of ``slurm.json`` struck task ``r``
  (``$EPOCHREALTIME`` then, and when the task started). :func:`fired_faults` gathers them per fault in the shape
  the diagnosis reads (:class:`amldist.backends.base.RunLogs` ``faults``): its text, when it first fired, how many
  seconds after its task started, and the processes it struck. Only files a fault and a task of the run could have
  written are read (the indices are checked against ``slurm.json``), each one small, regular, never through a link.
- The hosts: the batch script writes ``state/nodes``, the allocation's host names by node index, so the node a
  diagnosis names (an index) becomes the host name ``sbatch --exclude`` takes (:func:`hosts`).
- The next attempt's ``--exclude`` (:func:`next_exclude`, pure): the hosts already kept off plus the failed one,
  only when the partition still has enough other nodes to run the job; else one line says it is not excluded.
"""

from __future__ import annotations

import os
import re

from amldist.backends.slurm import script
from amldist.engine.state_files import read_small_text

FIRED = re.compile(r"^fault_([0-9]{1,2})_rank_([0-9]{1,6})\Z")
MAX_HOSTS = 100_000
MAX_STATE_ENTRIES = 1_000_000  # a run's state/ holds a few files per task: more is not what its tasks wrote


def fired_faults(meta) -> tuple[dict, ...]:
    """Each planned fault of ``meta`` (a :class:`~amldist.backends.slurm.records.JobMeta`) with when it fired and
    on which processes (``fired_at`` None when it never fired: its task had ended, or the time never came)."""
    state = os.path.join(meta.run_dir, "state")
    struck: dict[int, list[tuple[int, float, float]]] = {}
    for name in _names(state) if meta.faults else ():
        match = FIRED.match(name)
        if not match or int(match[1]) >= len(meta.faults) or int(match[2]) >= len(meta.tasks):
            continue
        times = _two_numbers(read_small_text(os.path.join(state, name), 128))
        if times is not None:
            struck.setdefault(int(match[1]), []).append((int(match[2]), *times))
    found = []
    for index, text in enumerate(meta.faults):
        hits = sorted(struck.get(index, ()))
        first = min(hits, key=lambda hit: hit[1]) if hits else None
        found.append({"text": text, "kind": text.partition(":")[0], "fired_at": first[1] if first else None,
                      "seconds": round(first[1] - first[2], 3) if first else None,
                      "processes": tuple(meta.tasks[rank][0] for rank, _, _ in hits)})
    return tuple(found)


def _names(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            names = []
            for entry in entries:
                if len(names) >= MAX_STATE_ENTRIES:
                    break
                names.append(entry.name)
            return names
    except OSError:
        return []


def _two_numbers(text: str | None) -> tuple[float, float] | None:
    """``"FIRED STARTED"`` (bash's ``$EPOCHREALTIME`` twice) as floats; None for anything else."""
    parts = (text or "").split()
    if len(parts) != 2 or not all(re.fullmatch(r"[0-9]{1,12}([.,][0-9]{1,9})?", p) for p in parts):
        return None
    return float(parts[0].replace(",", ".")), float(parts[1].replace(",", "."))


def hosts(run_dir: str) -> list[str]:
    """The allocation's host names by node index (``state/nodes``); [] when unknown or not host names."""
    text = read_small_text(os.path.join(run_dir, "state", "nodes"), 64 * MAX_HOSTS) or ""
    names = text.split()
    return names if all(script.OPTION_VALUE.match(n) and "," not in n for n in names) else []


def next_exclude(prior: str | None, host: str | None, partition_nodes: list[str], needed: int,
                 where: str) -> tuple[str | None, str | None]:
    """(the next attempt's ``--exclude``, a line to say): ``prior`` (the hosts this attempt was kept off) plus
    ``host``, the failed node's, when ``partition_nodes`` (``where`` names them: the partition or the cluster)
    keep at least ``needed`` nodes besides; else ``prior`` and one line saying why ``host`` stays allowed."""
    kept_off = [h for h in (prior or "").split(",") if h]
    if host is None:
        return prior, None
    if host in kept_off:
        return prior, None
    left = [n for n in partition_nodes if n not in kept_off and n != host]
    if len(left) < needed:
        return prior, (f"not excluding node {host}: the job needs {needed} node(s) and {where} has "
                       f"{len(left)} other(s) left; the retry may run on it again")
    exclude = ",".join(kept_off + [host])
    return exclude, f"the retry keeps off node {host} (sbatch --exclude={exclude})"
