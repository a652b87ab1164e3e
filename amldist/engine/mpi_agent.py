"""Open MPI's launch agent for emulated nodes: runs the daemon's command here, whatever the host.

``mpirun`` (PRRTE) starts one ``prted`` daemon per host by calling its rsh/ssh agent as
``AGENT [options] HOST COMMAND...`` where COMMAND is shell text (``PRTE_PREFIX=...; export ...;
prted ...``). For the local backend every host is an emulated node of this machine
(:func:`amldist.engine.launchers.mpirun_node_args`), so this agent drops the options
and the host and runs the text with ``/bin/sh`` in place, as ``ssh HOST COMMAND`` would run it
there. Run as ``python -I -S mpi_agent.py``: standard library only, nothing of amldist imported.
"""

from __future__ import annotations

import os
import sys


def command_of(argv: list[str]) -> str:
    """The shell text of ``[options] HOST WORD...`` (options start with ``-``; ssh's ``-x`` and
    the like take no value in what PRRTE passes)."""
    words = list(argv)
    while words and words[0].startswith("-"):
        words.pop(0)
    if len(words) < 2:
        raise SystemExit("amldist mpi agent: expected HOST COMMAND")
    return " ".join(words[1:])


if __name__ == "__main__":
    os.execv("/bin/sh", ["/bin/sh", "-c", command_of(sys.argv[1:])])
