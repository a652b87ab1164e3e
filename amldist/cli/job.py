"""``amldist job list | show NAME | logs NAME | cancel NAME | download NAME``: after submit, as ``az ml job``.

Where the job is looked for:

- ``--local`` (or ``--run-root DIR``): local runs, in ``.amldist/runs/`` of the current folder;
- ``-w/--workspace-name``, ``-g/--resource-group`` or ``--subscription``: that Azure ML workspace;
- neither: a NAME that is a local run is local, any other NAME is looked up in the workspace that
  ``AZUREML_ARM_*`` or ``config.json`` name (as for ``submit``); ``list`` lists the local runs
  when there are any or no workspace is configured, else the workspace's jobs.

Exit codes are ``amldist``'s (``amldist --help``): 0 done, 1 the job or the service failed
(``logs`` of a failed job, a refused request), 2 a usage mistake or a NAME that does not exist.
Heavy imports (azure-ai-ml) happen inside the verbs.
"""

from __future__ import annotations

import json
import os
import sys

VERBS = ("list", "show", "logs", "cancel", "download")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "job", help="list, show, follow, cancel and download jobs (local runs and Azure ML jobs)",
        description="After submit: see, follow, cancel and fetch jobs, local runs (.amldist/runs/) and Azure ML "
        "jobs alike, as 'az ml job' does.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, help_text in (
        ("list", "list jobs, newest first"),
        ("show", "status, start, duration, exit codes, outputs and the studio URL of a job"),
        ("logs", "print a job's logs (--rank N: one rank; --follow: until the job ends)"),
        ("cancel", "cancel a running job (locally: every process of the run is stopped)"),
        ("download", "download a job's logs (and with --all its outputs)"),
    ):
        sub = verbs.add_parser(verb, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        if verb != "list":
            sub.add_argument("name", nargs="?", metavar="NAME", help="the job's name")
            sub.add_argument("-n", "--name", dest="name_option", metavar="NAME", help="the job's name (as az ml)")
        _where_options(sub)
        if verb in ("list", "show"):
            sub.add_argument("--format", choices=("text", "json"), default="text", help="output format")
        if verb == "list":
            sub.add_argument("--max-results", "-r", type=int, metavar="N", help="list at most N jobs")
        if verb == "logs":
            sub.add_argument("--rank", type=int, metavar="N", help="locally: only rank N's log")
            sub.add_argument("--follow", "-f", action="store_true",
                             help="keep printing until the job ends (on Azure ML logs are always followed)")
        if verb == "cancel":
            sub.add_argument("--no-wait", action="store_true", help="return once the cancel is requested")
        if verb == "download":
            sub.add_argument("-o", "--download-path", "-p", dest="download_path", default=".", metavar="DIR",
                             help="where to write artifacts/ and named-outputs/ (default: .)")
            sub.add_argument("--output-name", metavar="OUTPUT", help="only this named output")
            sub.add_argument("--all", action="store_true", help="the logs and every named output")
        sub.set_defaults(func=run)


def _where_options(parser) -> None:
    group = parser.add_argument_group("where the job is")
    group.add_argument("--local", action="store_true", help="local runs only")
    group.add_argument("--run-root", metavar="DIR", default=None,
                       help="folder of the local runs (default: .amldist/runs); implies --local")
    group.add_argument("-w", "--workspace-name", "--workspace", dest="workspace", metavar="W",
                       help="Azure ML workspace name")
    group.add_argument("-g", "--resource-group", dest="resource_group", metavar="G",
                       help="resource group of the workspace")
    group.add_argument("--subscription", "-s", dest="subscription", metavar="S", help="subscription id")


def run(args) -> int:
    from amldist.errors import UserError

    name = args.name_option if getattr(args, "name_option", None) else getattr(args, "name", None)
    if args.verb != "list":
        if not name:
            raise UserError(f"'amldist job {args.verb}' needs the job's name", hint=f"amldist job {args.verb} NAME")
        if getattr(args, "name", None) and args.name_option and args.name != args.name_option:
            raise UserError(f"two job names given: {args.name!r} and -n {args.name_option!r}")
    args.job_name = name
    run_root = os.path.abspath(args.run_root or ".amldist/runs")
    if _is_local(args, run_root, name):
        return _local(args, run_root, name)
    return _azure(args, name)


def _is_local(args, run_root: str, name: str | None) -> bool:
    from amldist.backends.azureml.workspace import resolve_workspace
    from amldist.backends.local.jobs import has_run, run_names
    from amldist.errors import UserError

    azure_flags = any((args.workspace, args.resource_group, args.subscription))
    if args.local or args.run_root:
        if azure_flags:
            raise UserError("--local/--run-root and a workspace (-w/-g/--subscription) are given together",
                            hint="pick one: local runs, or the workspace's jobs")
        return True
    if azure_flags:
        return False
    if name is not None and has_run(run_root, name):
        return True
    configured = resolve_workspace(os.environ, os.getcwd()) is not None
    if name is None:
        return bool(run_names(run_root)) or not configured
    if not configured:
        raise UserError(f"no local run named {name!r} in {os.path.relpath(run_root)}, and no Azure ML workspace "
                        "is configured", hint="'amldist job list' shows the local runs; for an Azure ML job pass "
                        "-w WORKSPACE -g GROUP --subscription S (or use a config.json)")
    return False


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _table(rows: list[dict], columns: tuple[str, ...]) -> str:
    cells = [[str(c) for c in columns]] + [["-" if r.get(c) is None else str(r.get(c)) for c in columns]
                                           for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells)


def _local(args, run_root: str, name: str | None) -> int:
    from amldist.backends.local import jobs
    from amldist.errors import UserError

    if args.verb == "list":
        runs = jobs.list_runs(run_root)[: args.max_results or None]
        if args.format == "json":
            _print_json(runs)
        elif runs:
            for run in runs:
                duration = run.get("duration_seconds")
                run["duration"] = f"{duration:.1f}s" if isinstance(duration, (int, float)) else None
            print(_table(runs, ("name", "status", "start_time", "duration")))
        else:
            print(f"note: no local runs in {os.path.relpath(run_root)}", file=sys.stderr)
        return 0
    if args.verb == "show":
        run = jobs.get_run(run_root, name)
        _print_json(run) if args.format == "json" else print(jobs.show_text(run))
        return 0
    if args.verb == "logs":
        return jobs.logs(run_root, name, rank=args.rank, follow=args.follow)
    if args.verb == "cancel":
        run = jobs.cancel(run_root, name, wait=not args.no_wait)
        print(f"job {name}: {run['status']}" + (" (cancel requested)" if args.no_wait else ""))
        return 0
    written = jobs.download(run_root, name, args.download_path, output_name=args.output_name, all_outputs=args.all)
    if not written:
        raise UserError(f"job {name} left nothing to download", exit_code=1)
    for path in written:
        print(f"downloaded {os.path.relpath(path)}", file=sys.stderr)
    return 0


def _azure(args, name: str | None) -> int:
    from amldist.backends.azureml import jobs
    from amldist.errors import UserError

    if getattr(args, "rank", None) is not None:
        raise UserError("--rank reads one rank's log of a local run; Azure ML streams the job's logs as a whole",
                        hint=f"'amldist job download {name}' fetches every rank's log (artifacts/user_logs/)")
    client, workspace = jobs.connect(workspace=args.workspace, resource_group=args.resource_group,
                                     subscription=args.subscription)
    if args.verb == "list":
        found = jobs.list_jobs(client, workspace, max_results=args.max_results)
        if args.format == "json":
            _print_json(found)
        else:
            print(_table(found, ("name", "status", "display_name", "created")))
        return 0
    if args.verb == "show":
        job = jobs.show(client, workspace, name)
        _print_json(job) if args.format == "json" else print(jobs.show_text(job))
        return 0
    if args.verb == "logs":
        return jobs.logs(client, workspace, name)
    if args.verb == "cancel":
        job = jobs.cancel(client, workspace, name, wait=not args.no_wait)
        print(f"job {name}: {job['status']}" + (" (cancel requested)" if args.no_wait else ""))
        return 0
    jobs.download(client, workspace, name, args.download_path, output_name=args.output_name, all_outputs=args.all)
    print(f"downloaded job {name} to {args.download_path}", file=sys.stderr)
    return 0


def run_and_report(backend, plan, *, json_output: bool = False, web: bool = False) -> int:
    """``backend.run(plan)`` for ``amldist submit``; with ``json_output`` everything the run prints goes
    to stderr and stdout gets one JSON object, the job as ``amldist job show --format json`` gives it
    (plus ``exit_code``); ``web`` opens the Azure job's studio page."""
    import contextlib

    if not json_output:
        code = backend.run(plan)
        _open_studio(backend, web)
        return code
    with contextlib.redirect_stdout(sys.stderr):
        code = backend.run(plan)
    _open_studio(backend, web)
    _print_json({**submitted(backend, plan), "exit_code": code})
    return code


def submitted(backend, plan) -> dict:
    """What a finished ``submit`` made: a local run's state, an Azure job's record, or its name."""
    run_dir = getattr(plan, "run_dir", None)
    if run_dir:
        from amldist.backends.local.jobs import describe
        from amldist.backends.local.run_state import read_state

        state = read_state(run_dir)
        if state is not None:
            return describe(state)
    created = getattr(backend, "created", None)
    if created is not None:
        from amldist.backends.azureml.jobs import describe as describe_azure

        return describe_azure(created)
    return {"name": getattr(plan, "job_name", None) or getattr(getattr(plan, "job", None), "name", None)}


def _open_studio(backend, web: bool) -> None:
    url = getattr(getattr(backend, "created", None), "studio_url", None)
    if not web:
        return
    if url is None:
        print("note: --web opens an Azure ML job's studio page; a local run has none", file=sys.stderr)
        return
    import webbrowser

    if not webbrowser.open(url):
        print(f"note: no web browser to open; the studio page is {url}", file=sys.stderr)


def file_argument(args) -> str:
    """FILE given as an argument or as ``-f/--file`` (``az ml job create -f``); one, not two."""
    from amldist.errors import UserError

    given = [f for f in (args.file, getattr(args, "file_option", None)) if f]
    if not given:
        raise UserError("no job file given", hint="amldist submit FILE (or -f FILE)")
    if len(given) == 2 and given[0] != given[1]:
        raise UserError(f"two job files given: {given[0]!r} and -f {given[1]!r}", hint="give one")
    return given[0]
