"""``amldist job list | show NAME | logs NAME | cancel NAME | download NAME``: after submit, as ``az ml job``.

Where the job is looked for (:func:`resolve`):

- ``--backend NAME`` or its alias (``--local``, ``--slurm``): that backend, built from its own flags;
- a backend's own flags (``--run-root DIR``: local runs; ``-w/-g/--subscription``: that Azure ML
  workspace): that backend; flags of two backends are one error line;
- neither: the first backend that has a job called NAME (local runs, then Slurm runs, then installed
  backends that can tell), else one that can look it up (the workspace that ``AZUREML_ARM_*`` or
  ``config.json`` name, as for ``submit``); ``list`` lists the first backend that holds jobs (the local
  runs), else the workspace's jobs.

Every verb is one method of the backend (:class:`amldist.backends.base.Backend`: ``list``, ``show``,
``logs``, ``cancel``, ``download``), each giving a :class:`~amldist.backends.base.JobRecord`, jobs and
pipelines alike (``--step NAME`` picks one step of a pipeline). A new verb adds an entry to
:data:`VERB_HANDLERS` (or registers its own parser, as ``job diagnose`` does).

Exit codes are ``amldist``'s (``amldist --help``): 0 done, 1 the job or the service failed
(``logs`` of a failed job, a refused request), 2 a usage mistake or a NAME that does not exist.
Heavy imports (azure-ai-ml) happen inside the verbs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys

from amldist.cli import backend_flags


def register(subparsers, *, backends: bool = True) -> None:
    """The ``job`` parsers; ``backends``: with every backend's flags (False: the backends are not imported)."""
    parser = subparsers.add_parser(
        "job", help="list, show, follow, cancel and download jobs (local runs and Azure ML jobs)",
        description="After submit: see, follow, cancel and fetch jobs, local runs (.amldist/runs/) and Azure ML "
        "jobs alike, as 'az ml job' does.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    where = functools.partial(_where_options, backends=backends)
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
        where(sub)
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

    diagnose.add_verb(verbs, where, resolve)


def _where_options(parser, backends: bool = True) -> None:
    """``--backend NAME``, the select flags (``--local``, ``--slurm``) and each backend's ``job_flags``."""
    declared = backend_flags.add(parser, "job") if backends else None
    parser.set_defaults(declared=declared)


def run(args) -> int:
    from amldist.errors import UserError

    name = args.name_option if getattr(args, "name_option", None) else getattr(args, "name", None)
    if args.verb != "list":
        if not name:
            raise UserError(f"'amldist job {args.verb}' needs the job's name", hint=f"amldist job {args.verb} NAME")
        if getattr(args, "name", None) and args.name_option and args.name != args.name_option:
            raise UserError(f"two job names given: {args.name!r} and -n {args.name_option!r}")
    args.job_name = name
    return VERB_HANDLERS[args.verb](resolve(args, name), args, name)


def resolve(args, name: str | None):
    """The backend the job is looked for in (see the module docstring), built from its own flags."""
    from amldist.errors import UserError

    declared = args.declared
    chosen = backend_flags.selected(args, declared)
    if chosen is not None:
        backend_flags.refuse_others(args, declared, *chosen)
        return declared.classes[chosen[0]].from_args(args)
    given = backend_flags.given_for(args, declared)  # {owners: [flags]}: each flag's backends
    if not given:
        return _found(declared, name)
    common = set.intersection(*(set(owners) for owners in given))
    if not common:
        flags = [flag for group in given.values() for flag in group]
        owners = sorted({name for group in given for name in group})
        raise UserError(f"{' and '.join(flags)} are flags of different backends ({', '.join(owners)}) given together",
                        hint="pick one: each backend looks for its own jobs")
    return declared.classes[next(n for n in declared.classes if n in common)].from_args(args)


def _found(declared, name: str | None):
    """No flag: the first backend that has NAME (or, for ``list``, has any job), else one that can look it up."""
    from amldist.errors import UserError

    backends = [cls.from_args(argparse.Namespace()) for cls in declared.classes.values()]
    for backend in backends:
        if backend.has(name) if name is not None else backend.has_any():
            return backend
    remote = next((b for b in backends if b.can_look_up()), None)
    if remote is not None:
        return remote
    if name is None:
        return backends[0]  # the first one (local): `job list` then says it has no runs
    raise UserError(f"no job named {name!r} (looked in: {', '.join(b.name for b in backends)}), and no Azure ML "
                    "workspace is configured", hint="'amldist job list' shows the local runs; for an Azure ML job "
                    "pass -w WORKSPACE -g GROUP --subscription S (or use a config.json)")


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

        text = backend.show_text(record).splitlines()
        if backend.checkpoint_dir_of(record) is not None:  # a backend that retries: every attempt, linked
            from amldist.diagnosis.retry import attempts_lines

            text += attempts_lines(backend, record)
        print("\n".join(escape_text(line) for line in text))
    return 0


def _logs(backend, args, name) -> int:
    backend.logs(name, step=args.step, rank=args.rank, follow=args.follow)
    return 0


def _cancel(backend, args, name) -> int:
    from amldist.diagnosis.retry import cancel_attempts  # an attempt of --retry: every attempt, and the retries
    from amldist.diagnostics import escape_text

    records, stopped = cancel_attempts(backend, name, wait=not args.no_wait)
    for record in records:
        print(f"job {escape_text(record.name)}: {record.status}" + (" (cancel requested)" if args.no_wait else ""))
    if stopped:
        print(f"job {escape_text(name)}: its retries are canceled; no further attempt starts")
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
