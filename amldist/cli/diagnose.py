"""``amldist job diagnose NAME [--format json]``: which rank failed first, why, and what to change.

For a local run it reads the run folder (every rank's log, exit code and end time); for an Azure
ML job it downloads the logs with ``MLClient.jobs.download`` (every rank's
``user_logs/std_log_process_NN.txt`` and the MPI log) into a temporary folder. Where the job is
looked for is ``amldist job``'s rule (``--local``/``--run-root``, or the workspace flags).

Exit codes: 0 a cause was found (or nothing failed), 1 the job failed for a reason amldist cannot
name (the first failing rank's log tail is shown), 2 a usage mistake or a job that does not exist.
"""

from __future__ import annotations

import json
import os
import sys


def add_verb(verbs, where_options, is_local) -> None:
    """Register ``diagnose`` beside the other ``amldist job`` verbs; ``where_options`` and ``is_local``
    are ``amldist job``'s own (where a job is looked for is decided in one place)."""
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
    sub.set_defaults(func=run, is_local=is_local)


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
    if getattr(args, "slurm", False):  # the shared where-options offer it; the diagnosis reads local and Azure runs
        raise UserError("'amldist job diagnose' reads local runs and Azure ML jobs, not Slurm jobs yet",
                        hint=f"amldist job show {name} --slurm names the failed rank; "
                        f"amldist job logs {name} --slurm shows its log")
    run_root = os.path.abspath(args.run_root or ".amldist/runs")
    if args.is_local(args, run_root, name):
        from amldist.diagnosis.local import diagnose_run

        result = diagnose_run(run_root, name, vm_size=args.vm_size)
    else:
        from amldist.diagnosis.azure import diagnose_job

        result = diagnose_job(name, workspace=args.workspace, resource_group=args.resource_group,
                              subscription=args.subscription, vm_size=args.vm_size)
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


def after_local_run(plan, code: int, *, err=None) -> None:
    """``amldist submit --local``: a failed run ends with its diagnosis (best effort: a run folder that
    cannot be read says nothing more)."""
    run_dir = getattr(plan, "run_dir", None)
    if code in (0, None) or not run_dir or not os.path.isdir(run_dir):
        return
    from amldist.diagnosis.local import diagnose_run
    from amldist.diagnosis.report import to_text
    from amldist.errors import UserError

    try:
        result = diagnose_run(os.path.dirname(run_dir), os.path.basename(run_dir))
    except (UserError, OSError, ValueError):  # a run folder that cannot be read: the run's own report stands
        return
    if result.rank is None:
        return
    print("--- diagnosis (amldist job diagnose " + os.path.basename(run_dir) + ") ---", file=err or sys.stderr)
    print(to_text(result), file=err or sys.stderr)
