"""What ``/proc`` says about a process: its start time and the proof that a process belongs to a run.

A pid alone proves nothing: a status file can be edited, and pids are reused. A process is taken
as a run's own (:func:`belongs_to_run`) only when both hold:

- its start time (``/proc/<pid>/stat`` field 22, clock ticks since boot) equals the one the run
  recorded when it started, so a reused pid does not count;
- it holds the run's folder open: the run's supervisor (and a pipeline's step runner) keeps a
  descriptor of its run folder for as long as it runs (:class:`amldist.backends.local.run_state.RunState`),
  found among ``/proc/<pid>/fd``. A pid that a file names by itself (any other process of the
  user, even one with a copied start time) holds no such descriptor.

Only processes of the same user can be read this way; anything unreadable is not proven. Without
``/proc`` (not Linux) nothing is proven, and ``amldist job cancel`` says so instead of signalling.
"""

from __future__ import annotations

import os

# The one parser of /proc/<pid>/stat is process_groups' (that module also runs as the standard-library-only
# watchdog script, so the parser lives there and is shared from there, not the other way round).
from amldist.backends.local.process_groups import _stat_fields as stat_fields

PROC = "/proc"


def start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None when it is gone or a zombie."""
    fields = stat_fields(pid)
    if not fields or len(fields) < 20 or fields[0] == "Z":
        return None
    try:
        return int(fields[19])  # field 22
    except ValueError:
        return None


def holds_open(pid: int, path: str) -> bool:
    """Whether ``pid`` has a descriptor open on ``path`` (a file or folder), per ``/proc/<pid>/fd``."""
    target = os.path.realpath(path)
    folder = f"{PROC}/{pid}/fd"
    try:
        entries = os.listdir(folder)
    except OSError:
        return False
    for entry in entries:
        try:
            if os.readlink(f"{folder}/{entry}") == target:
                return True
        except OSError:
            continue
    return False


def is_pid(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**22 + 1


def belongs_to_run(pid, recorded_start, run_dir: str) -> bool:
    """Whether ``pid`` is the process a run recorded: same start time *and* it holds ``run_dir`` open."""
    if not is_pid(pid) or not isinstance(recorded_start, int) or isinstance(recorded_start, bool):
        return False
    return start_time(pid) == recorded_start and holds_open(pid, run_dir)
