"""``amldist submit FILE``: run a command job locally or send it to an Azure ML workspace.

    amldist submit FILE [--backend NAME | --local | --slurm] [--dry-run] [--set PATH=VALUE]...
                   [--input NAME=VALUE]... [--instance-count N] [--process-count-per-instance N]
                   [--stream] [--name NAME] [the chosen backend's flags: -w W -g G --subscription S, ...]

FILE is a v2 command job, a v2 command component or a legacy DistributedComponent (run as a
job). The spec is validated after the overrides; with an error nothing is sent or started
(the diagnostics are printed as ``amldist validate`` prints them; exit 1).

The backend is the one ``--backend NAME`` names (``--local`` and ``--slurm`` are aliases), else ``local``
for ``compute: local`` in the job, else ``azureml``. Each backend adds its own flags
(:mod:`amldist.cli.backend_flags`); a flag of another backend than the chosen one is one error line (exit 2).
``--dry-run`` prints what would happen (each rank's command and environment locally, the REST
body for Azure), needs no credentials and no network, and starts nothing.

Exit codes: 0 done; 1 invalid spec or the job failed; 2 a usage or setup mistake (no
workspace, a missing input path...); 128+N when stopped by signal N.
"""

from __future__ import annotations

import json
import sys

from amldist.cli import backend_flags
from amldist.cli.arguments import count_option


def register(subparsers, *, backends: bool = True) -> None:
    """The ``submit`` parser; ``backends``: with every backend's own flags (False: the backends are not
    imported, for a command line that is not ``submit``)."""
    parser = subparsers.add_parser(
        "submit",
        help="run a job or pipeline locally (--local), on Slurm (--slurm) or on Azure ML",
        description="Validate a command job or pipeline job (or a component / legacy DistributedComponent, run "
        "as a job), apply overrides, then run it on this machine with Azure ML's launcher environment (--local, "
        "or 'compute: local'), on a Slurm cluster (--slurm), or submit it to an Azure ML workspace.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="command job, pipeline job, command component or DistributedComponent YAML")
    parser.add_argument("-f", "--file", dest="file_option", metavar="FILE", help="the same, as az ml job create -f")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be run or sent (secrets masked); start and send nothing")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="sets",
                        help="override a field by dotted path, e.g. resources.instance_count=2 (repeatable; "
                        "VALUE is read as YAML; the file is not modified)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", dest="inputs",
                        help="set a job input (repeatable); local paths are relative to the current directory")
    parser.add_argument("--instance-count", type=count_option("instance_count"), metavar="N", help="number of nodes")
    parser.add_argument("--process-count-per-instance", type=count_option("process_count_per_instance"), metavar="N",
                        help="processes per node (pytorch and mpi)")
    parser.add_argument("--stream", action="store_true",
                        help="follow the logs (locally: every rank's output, prefixed with its rank)")
    parser.add_argument("-n", "--name", metavar="NAME", help="job name (must be new); default: generated")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="json: print the job's end state as one JSON object on stdout (for scripts)")
    parser.add_argument("--web", action="store_true", help="open the job's studio page (Azure ML)")
    declared = backend_flags.add(parser, "submit") if backends else None
    parser.set_defaults(func=run, declared=declared)


def run(args) -> int:
    import contextlib

    from amldist.backends.submit import submit
    from amldist.cli.diagnose import after_run
    from amldist.cli.job import file_argument
    from amldist.diagnosis.backend import explain_failure

    args.file = file_argument(args)
    chosen, said = backend_flags.selected(args, args.declared) or (None, None)
    args.explain = explain_failure  # a failed local run's error line names the rank the diagnosis names
    json_output = args.format == "json" and not args.dry_run
    # --format json: everything the run prints goes to stderr, stdout gets one JSON object
    with contextlib.redirect_stdout(sys.stderr) if json_output else contextlib.nullcontext():
        given = dict(backend=chosen, dry_run=args.dry_run, sets=args.sets, inputs=args.inputs,
                     instance_count=args.instance_count,
                     process_count_per_instance=args.process_count_per_instance, args=args,
                     before_plan=lambda name, why: backend_flags.refuse_others(args, args.declared, name, said or why))
        policy = _retry_policy(args)
        if policy is not None and not args.dry_run:  # --retry: the flag of a backend that retries (refused elsewhere)
            from amldist.diagnosis.retry import submit_with_retries

            done = submit_with_retries(args.file, policy, **given)
        else:  # a dry run with --retry shows what the first attempt gets (its shared checkpoint folder)
            done = submit(args.file, **given, **({"checkpoints": True} if policy is not None else {}))
        if done.record is not None:
            after_run(done.backend, done.record)
    if done.record is None:  # a dry run: the plan was printed
        return 0
    _open_studio(done.record, args.web)
    if json_output:
        json.dump({**done.record.to_json(), "exit_code": done.exit_code}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return done.exit_code


def _retry_policy(args):
    """--retry N [--retry-on CAUSES] as a RetryPolicy; None without --retry (one line for --retry-on alone)."""
    retry, retry_on = getattr(args, "retry", None), getattr(args, "retry_on", None)
    if retry is None and retry_on is None:
        return None
    from amldist.diagnosis.retry import RetryPolicy, parse_retry_on
    from amldist.errors import UserError

    if retry is None:
        raise UserError("--retry-on is given without --retry", hint="--retry N --retry-on preemption,node,hang")
    return RetryPolicy(retry, parse_retry_on(retry_on))


def _open_studio(record, web: bool) -> None:
    if not web:
        return
    if record.url is None:
        print("note: --web opens an Azure ML job's studio page; a local run has none", file=sys.stderr)
        return
    import webbrowser

    if not webbrowser.open(record.url):
        print(f"note: no web browser to open; the studio page is {record.url}", file=sys.stderr)
