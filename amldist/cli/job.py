"""``amldist job list | show NAME | logs NAME | cancel NAME | download NAME``: after submit, as ``az ml job``.

Where the job is looked for:

- ``--local`` (or ``--run-root DIR``): local runs, in ``.amldist/runs/`` of the current folder;
- ``-w/--workspace-name``, ``-g/--resource-group`` or ``--subscription``: that Azure ML workspace;
- neither: a NAME that is a local run is local, any other NAME is looked up in the workspace that
  ``AZUREML_ARM_*`` or ``config.json`` name (as for ``submit``); ``list`` lists the local runs
  when there are any or no workspace is configured, else the workspace's jobs.

Every verb is one method of the backend (:class:`amldist.backends.base.Backend`: ``list``, ``show``,
``logs``, ``cancel``, ``download``), each giving a :class:`~amldist.backends.base.JobRecord`, jobs and
pipelines alike (``--step NAME`` picks one step of a pipeline). A new verb adds an entry to
:data:`VERB_HANDLERS` (or registers its own parser, as ``job diagnose`` does).

Exit codes are ``amldist``'s (``amldist --help``): 0 done, 1 the job or the service failed
(``logs`` of a failed job, a refused request), 2 a usage mistake or a NAME that does not exist.
Heavy imports (azure-ai-ml) happen inside the verbs.
"""

from __future__ import annotations

import json
import os
import sys


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
            sub.add_argument("--step", metavar="STEP", help="a pipeline's step: only its logs")
            sub.add_argument("--follow", "-f", action="store_true",
                             help="keep printing until the job ends (on Azure ML logs are always followed)")
        if verb == "cancel":
            sub.add_argument("--no-wait", action="store_true", help="return once the cancel is requested")
        if verb == "download":
            sub.add_argument("-o", "--download-path", "-p", dest="download_path", default=".", metavar="DIR",
                             help="where to write artifacts/ and named-outputs/ (default: .)")
            sub.add_argument("--output-name", metavar="OUTPUT", help="only this named output")
            sub.add_argument("--all", action="store_true", help="the logs and every named output")
            sub.add_argument("--step", metavar="STEP", help="a pipeline's step, downloaded as a job")
        sub.set_defaults(func=run)
    from amldist.cli import diagnose  # `job diagnose` lives in its own module

    diagnose.add_verb(verbs, _where_options, _is_local)


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
    group.add_argument("--slurm", action="store_true", help="jobs submitted with --slurm (in .amldist/slurm)")


def run(args) -> int:
    from amldist.backends import get_backend
    from amldist.errors import UserError

    name = args.name_option if getattr(args, "name_option", None) else getattr(args, "name", None)
    if args.verb != "list":
        if not name:
            raise UserError(f"'amldist job {args.verb}' needs the job's name", hint=f"amldist job {args.verb} NAME")
        if getattr(args, "name", None) and args.name_option and args.name != args.name_option:
            raise UserError(f"two job names given: {args.name!r} and -n {args.name_option!r}")
    args.job_name = name
    run_root = os.path.abspath(args.run_root or ".amldist/runs")
    other = _other_backend(args, name)
    if other is not None:
        backend = other
    elif _is_local(args, run_root, name):
        backend = get_backend("local", run_root=run_root)
    else:
        backend = get_backend("azureml", workspace=args.workspace, resource_group=args.resource_group,
                              subscription=args.subscription)
    return VERB_HANDLERS[args.verb](backend, args, name)


def _other_backend(args, name: str | None):
    """A backend beyond local and azureml (slurm) that its flag names, or that holds a job called NAME."""
    from amldist.backends import BACKENDS, get_backend

    for key in BACKENDS:
        if key in ("local", "azureml"):
            continue
        if getattr(args, key, False):
            return get_backend(key)
        if name is not None and not (args.local or args.run_root):
            backend = get_backend(key)
            if backend.has(name):  # Backend.has: False unless the backend can tell cheaply
                return backend
    return None


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
    from amldist.diagnostics import escape_text  # names come from files: no terminal escapes reach the screen

    cells = [[str(c) for c in columns]] + [["-" if r.get(c) is None else escape_text(str(r.get(c))) for c in columns]
                                           for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells)


def _list(backend, args, name) -> int:
    records = backend.list(max_results=args.max_results)
    if args.format == "json":
        _print_json([r.to_json() for r in records])
    elif records:
        rows = [r.to_json() for r in records]
        for row in rows:
            duration = row.get("duration_seconds")
            row["duration"] = f"{duration:.1f}s" if isinstance(duration, (int, float)) else None
        columns = (("name", "kind", "status", "start_time", "duration") if backend.name != "azureml"
                   else ("name", "status", "display_name", "created"))
        print(_table(rows, columns))
    elif getattr(backend, "run_root", None):  # local and Slurm runs have a folder; say which one was empty
        label = {"slurm": "Slurm"}.get(backend.name, backend.name)
        print(f"note: no {label} runs in {os.path.relpath(backend.run_root)}", file=sys.stderr)
    return 0


def _show(backend, args, name) -> int:
    record = backend.show(name)
    if args.format == "json":
        _print_json(record.to_json())
    else:
        from amldist.diagnostics import escape_text

        print("\n".join(escape_text(line) for line in backend.show_text(record).splitlines()))
    return 0


def _logs(backend, args, name) -> int:
    backend.logs(name, step=args.step, rank=args.rank, follow=args.follow)
    return 0


def _cancel(backend, args, name) -> int:
    record = backend.cancel(name, wait=not args.no_wait)
    from amldist.diagnostics import escape_text

    print(f"job {escape_text(name)}: {record.status}" + (" (cancel requested)" if args.no_wait else ""))
    return 0


def _download(backend, args, name) -> int:
    from amldist.errors import UserError

    written = backend.download(name, args.download_path, output_name=args.output_name, all_outputs=args.all,
                               step=args.step)
    if not written:
        raise UserError(f"job {name} left nothing to download", exit_code=1)
    for path in written:
        print(f"downloaded {os.path.relpath(path)}", file=sys.stderr)
    return 0


# verb -> handler(backend, args, name); `job diagnose` registers its own parser and handler
VERB_HANDLERS = {"list": _list, "show": _show, "logs": _logs, "cancel": _cancel, "download": _download}


def file_argument(args) -> str:
    """FILE given as an argument or as ``-f/--file`` (``az ml job create -f``); one, not two."""
    from amldist.errors import UserError

    given = [f for f in (args.file, getattr(args, "file_option", None)) if f]
    if not given:
        raise UserError("no job file given", hint="amldist submit FILE (or -f FILE)")
    if len(given) == 2 and given[0] != given[1]:
        raise UserError(f"two job files given: {given[0]!r} and -f {given[1]!r}", hint="give one")
    return given[0]
