"""``amldist job diagnose NAME [--format json]``: which rank failed first, why, and what to change.

Every backend hands over the run's logs through the contract (``Backend.run_logs``): a local or Slurm
run's where they were written (every rank's log, exit code and end time), an Azure ML job's downloaded
with ``MLClient.jobs.download`` (every rank's ``user_logs/std_log_process_NN.txt`` and the MPI log)
into a temporary folder, an installed backend's through its own ``download``. Where the job is looked
for is ``amldist job``'s rule (``--backend``/``--local``/``--slurm``, or a backend's own flags).

Exit codes: 0 a cause was found (or nothing failed), 1 the job failed for a reason amldist cannot
name (the first failing rank's log tail is shown), 2 a usage mistake or a job that does not exist.
"""

from __future__ import annotations

import json
import sys


def add_verb(verbs, where_options, resolve) -> None:
    """Register ``diagnose`` beside the other ``amldist job`` verbs; ``where_options`` and ``resolve`` are
    ``amldist job``'s own (where a job is looked for is decided in one place: :func:`amldist.cli.job.resolve`)."""
    sub = verbs.add_parser("diagnose", help="the first rank that failed, its cause and the spec field to change",
                           description="Find the first rank that failed (by time), match its log against known "
                           "failures (InfiniBand, ECC and other GPU faults named with their node, NCCL errors, "
                           "CUDA/host out of memory, Duplicate GPU, NCCL on sockets, shared memory, MPI aborts, "
                           "collective timeouts and mismatches, stalls, ...) and say which spec field to change. "
                           "--logs DIR reads a downloaded Azure ML log folder with no workspace.")
    sub.add_argument("name", nargs="?", metavar="NAME", help="the job's name")
    sub.add_argument("-n", "--name", dest="name_option", metavar="NAME", help="the job's name (as az ml)")
    sub.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    sub.add_argument("--logs", metavar="DIR", help="diagnose a folder of Azure ML logs (user_logs/ at any depth, as "
                     "'az ml job download' leaves it) with no workspace")
    sub.add_argument("--vm-size", metavar="SIZE", help="the nodes' VM size when the job does not name it "
                     "(a compute cluster's size); used for GPU counts and InfiniBand")
    where_options(sub)
    sub.set_defaults(func=run, resolve=resolve)


def run(args) -> int:
    from amldist.errors import UserError

    name = args.name_option or args.name
    if args.logs is not None:  # a folder of logs: no job to look up, no workspace
        from amldist.diagnosis.folder import diagnose_folder

        return show(diagnose_folder(args.logs, vm_size=args.vm_size), json_output=args.format == "json")
    if not name:
        raise UserError("'amldist job diagnose' needs the job's name (or --logs DIR)",
                        hint="amldist job diagnose NAME, or amldist job diagnose --logs DIR for downloaded logs")
    if args.name and args.name_option and args.name != args.name_option:
        raise UserError(f"two job names given: {args.name!r} and -n {args.name_option!r}")
    from amldist.diagnosis.backend import diagnose_job

    result = diagnose_job(args.resolve(args, name), name, vm_size=args.vm_size)
    return show(result, json_output=args.format == "json")


def show(result, *, json_output: bool = False, out=None) -> int:
    from amldist.diagnosis.report import to_json, to_text

    out = out or sys.stdout
    if json_output:
        json.dump(to_json(result), out, indent=2)
        out.write("\n")
    else:
        out.write(to_text(result) + "\n")
    return result.exit_code


def after_run(backend, record, *, err=None) -> None:
    """``amldist submit``: a run that ended Failed while submit waited (a local run) ends with its diagnosis
    (best effort: logs that cannot be read say nothing more)."""
    if record.status not in ("Failed", "Canceled"):  # Canceled: a timeout may name a stuck rank
        return
    from amldist.diagnosis.backend import diagnose_job
    from amldist.diagnosis.report import to_text
    from amldist.errors import UserError

    try:
        result = diagnose_job(backend, record.name)
    except (UserError, OSError, ValueError):  # logs that cannot be read: the run's own report stands
        return
    if result.rank is None:
        return
    print(f"--- diagnosis (amldist job diagnose {record.name}) ---", file=err or sys.stderr)
    print(to_text(result), file=err or sys.stderr)
