"""``amldist submit FILE``: run a command job locally or send it to an Azure ML workspace.

    amldist submit FILE [--local] [--dry-run] [--set PATH=VALUE]... [--input NAME=VALUE]...
                   [--instance-count N] [--process-count-per-instance N]
                   [--workspace W --resource-group G --subscription S] [--stream] [--name NAME]

FILE is a v2 command job, a v2 command component or a legacy DistributedComponent (run as a
job). The spec is validated after the overrides; with an error nothing is sent or started
(the diagnostics are printed as ``amldist validate`` prints them; exit 1).

The backend is ``local`` with ``--local`` or ``compute: local`` in the job, else ``azureml``.
``--dry-run`` prints what would happen (each rank's command and environment locally, the REST
body for Azure), needs no credentials and no network, and starts nothing.

Exit codes: 0 done; 1 invalid spec or the job failed; 2 a usage or setup mistake (no
workspace, a missing input path...); 128+N when stopped by signal N.
"""

from __future__ import annotations

import json
import sys

from amldist.cli.arguments import count_option, slurm_time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "submit",
        help="run a command job locally (--local) or submit it to Azure ML",
        description="Validate a command job (or a component / legacy DistributedComponent, run as a job), "
        "apply overrides, then run it on this machine with Azure ML's launcher environment (--local, or "
        "'compute: local') or submit it to an Azure ML workspace.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="command job, command component or DistributedComponent YAML")
    parser.add_argument("-f", "--file", dest="file_option", metavar="FILE", help="the same, as az ml job create -f")
    parser.add_argument("--local", action="store_true", help="run on this machine, emulating Azure ML's launchers")
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
    parser.add_argument("-w", "--workspace-name", "--workspace", dest="workspace", metavar="W", help="Azure ML workspace name")
    parser.add_argument("-g", "--resource-group", metavar="G", help="resource group of the workspace")
    parser.add_argument("--subscription", metavar="S", help="subscription id of the workspace")
    parser.add_argument("--stream", action="store_true",
                        help="follow the logs (locally: every rank's output, prefixed with its rank)")
    parser.add_argument("-n", "--name", metavar="NAME", help="job name (must be new); default: generated")
    parser.add_argument("--python", metavar="PATH", help="locally: the python every process runs (default: the one "
                        "amldist runs in, whatever PATH says)")
    parser.add_argument("--max-parallel", type=count_option("max_parallel"), metavar="N",
                        help="pipelines, locally: processes that independent steps may run at once (default: CPUs)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="json: print the job's end state as one JSON object on stdout (for scripts)")
    parser.add_argument("--web", action="store_true", help="open the job's studio page (Azure ML)")
    slurm = parser.add_argument_group("Slurm (--slurm: submit to the cluster sbatch reaches; SLURM_CONF names another)")
    slurm.add_argument("--slurm", action="store_true", help="run the job on a Slurm cluster with sbatch")
    slurm.add_argument("--partition", metavar="NAME", help="Slurm partition (default: the cluster's)")
    slurm.add_argument("--account", metavar="NAME", help="Slurm account to charge")
    slurm.add_argument("--time", metavar="LIMIT", type=slurm_time, help="Slurm time limit, e.g. 2:00:00 (default: limits.timeout)")
    parser.set_defaults(func=run)


def run(args) -> int:
    import contextlib

    from amldist.backends.submit import submit
    from amldist.cli.diagnose import after_local_run
    from amldist.cli.job import file_argument

    args.file = file_argument(args)
    if args.slurm and args.local:
        from amldist.errors import UserError

        raise UserError("--local and --slurm are given together", hint="pick one: this machine, or the Slurm cluster")
    json_output = args.format == "json" and not args.dry_run
    # --format json: everything the run prints goes to stderr, stdout gets one JSON object
    with contextlib.redirect_stdout(sys.stderr) if json_output else contextlib.nullcontext():
        done = submit(args.file, local=args.local, backend="slurm" if args.slurm else None, dry_run=args.dry_run,
                      sets=args.sets, inputs=args.inputs,
                      instance_count=args.instance_count,
                      process_count_per_instance=args.process_count_per_instance, args=args)
        if done.record is not None:
            after_local_run(done.plan, done.exit_code)
    if done.record is None:  # a dry run: the plan was printed
        return 0
    _open_studio(done.record, args.web)
    if json_output:
        json.dump({**done.record.to_json(), "exit_code": done.exit_code}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return done.exit_code


def _open_studio(record, web: bool) -> None:
    if not web:
        return
    if record.url is None:
        print("note: --web opens an Azure ML job's studio page; a local run has none", file=sys.stderr)
        return
    import webbrowser

    if not webbrowser.open(record.url):
        print(f"note: no web browser to open; the studio page is {record.url}", file=sys.stderr)
