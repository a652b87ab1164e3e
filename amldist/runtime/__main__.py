"""``python -m amldist.runtime --print``, ``python -m amldist.runtime --check`` and
``python -m amldist.runtime [--debug] -- CMD ARGS...``.

``--check`` forms the job's group, runs the fabric check (:mod:`.check`: a few seconds of
all-reduce, reported by rank 0), tears the group down and exits 0, or 1 when the check failed.

Exit status: 0, or 2 with one ``amldist.runtime: error: ...`` line for a bad command line or
environment, 1 with one such line when ``--print`` cannot write (``> /dev/full``), or 127 when CMD
cannot be started. SIGPIPE is restored to the default Python
replaces: ``--print | head -c1`` then ends quietly as ``cat`` would, and CMD starts with the
signal dispositions a shell would give it.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from . import diagnostics
from .detection import detect
from .dist_env import DistEnvError
from .process_group import child_env

USAGE = """\
usage: python -m amldist.runtime --print
       python -m amldist.runtime --check
       python -m amldist.runtime [--debug] -- CMD [ARGS...]

  --print   print the detected launcher and ranks as one JSON object
  --check   measure the all-reduce bus bandwidth of the job's group (rank 0 reports; exit 1 when a
            node is far below the rest or NCCL uses sockets on an InfiniBand size)
  --debug   print GPU/NCCL diagnostics on rank 0 (as AMLDIST_DEBUG=1 does)
  -- CMD    run CMD with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR
            and MASTER_PORT set from the launcher's variables, so a script that calls
            init_process_group() with env:// runs under mpirun, Slurm or TF_CONFIG too
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else None
    options = argv[: argv.index("--")] if "--" in argv else argv
    if "-h" in options or "--help" in options:
        print(USAGE, end="")
        return 0
    unknown = [option for option in options if option not in ("--print", "--debug", "--check")]
    alone = "--check" in options and (command is not None or "--print" in options)
    if unknown or alone or command == [] or (command is None and not {"--print", "--check"} & set(options)):
        print(USAGE, end="", file=sys.stderr)
        return 2
    if "--check" in options:
        return check(debug=True if "--debug" in options else None)
    try:
        env = detect()
    except DistEnvError as err:
        # A user's environment, not a bug here: one line, no traceback.
        print(f"amldist.runtime: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    reported = diagnostics.report(env, os.environ, flag=True if "--debug" in options else None)
    if "--print" in options:
        try:
            print(json.dumps(env.as_dict()), flush=True)
        except BrokenPipeError:
            # The reader left (``| head -c1``) where SIGPIPE is ignored (main() called in-process):
            # nothing more to say; stdout goes to devnull so the interpreter's last flush is quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except OSError as err:  # ``> /dev/full`` (ENOSPC), a disk full, EIO: one line, not a traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            print(f"amldist.runtime: error: cannot write to standard output: {err.strerror}", file=sys.stderr)
            return 1
    if command is None:
        return 0
    environ = child_env(env, os.environ)
    if reported:
        environ[diagnostics.REPORTED_VAR] = str(os.getpid())
    try:
        os.execvpe(command[0], command, environ)
    except OSError as err:
        print(f"amldist.runtime: error: cannot run {command[0]!r}: {err.strerror}", file=sys.stderr)
        return 127


def check(*, debug: bool | None = None) -> int:
    """``--check``: the job's group, the fabric check, the teardown; 0 passed, 1 failed, 2 bad environment."""
    from .check import FabricCheckFailed
    from .process_group import destroy, init_distributed

    try:
        init_distributed(debug=debug, check=True)
    except DistEnvError as err:
        print(f"amldist.runtime: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except FabricCheckFailed as failed:
        if os.environ.get("RANK") != "0":  # rank 0 printed the report; every log says the check failed
            print(f"amldist.runtime: check: FAILED: {failed}", file=sys.stderr, flush=True)
        destroy()
        return 1
    destroy()
    return 0


def restore_default_signals() -> None:
    """Python ignores SIGPIPE and SIGXFSZ, and an exec'd program inherits ignored signals: put
    back the defaults a shell would, so a pipe that closes ends this process (and CMD) quietly."""
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


if __name__ == "__main__":
    restore_default_signals()
    sys.exit(main())
