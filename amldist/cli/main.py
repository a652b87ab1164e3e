"""``amldist`` command line: ``main(argv) -> int``.

One place turns a UserError into an ``error:`` line plus an optional ``hint:``
line; any other exception is a bug and shows its traceback only with ``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from amldist import __version__
from amldist.cli import closed_output, global_options
from amldist.cli.arguments import BACKEND_COMMANDS, NAMES, stray_words
from amldist.errors import UserError


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; the backends' own flags (which import every backend) only when ``argv`` runs a
    command that takes them, or prints the completion script (None: always)."""
    parser = argparse.ArgumentParser(
        prog="amldist",
        description="Distributed training jobs for Azure Machine Learning: validate specs, convert legacy ones, "
        "submit jobs and pipelines (on this machine with --local, to a Slurm cluster with --slurm, or to an "
        "Azure ML workspace), then see, follow, cancel and download them (amldist job ...). Options follow az "
        "ml: -f/--file, -n/--name, -w/--workspace-name, "
        "-g/--resource-group.",
        epilog=global_options.EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    global_options.add_to(parser)
    parser.add_argument("--version", action="version", version=f"amldist {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = next((word for word in argv or () if not word.startswith("-")), None)
    backends = argv is None or command in BACKEND_COMMANDS or "--print-completion" in argv
    for name in NAMES:
        module = importlib.import_module(f"amldist.cli.{name}")
        if name in BACKEND_COMMANDS:
            module.register(subparsers, backends=backends)
        else:
            module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv, flags = global_options.take(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(argv)
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            stray = stray_words(argv, extras)
            if stray is None:
                parser.error(f"unrecognized arguments: {' '.join(extras)}")
            from amldist.diagnostics import escape_text  # the input's name is the user's text

            print(f"error: {escape_text(stray[0])}\nhint: {escape_text(stray[1])}", file=sys.stderr)
            return 2
    except SystemExit as exc:  # argparse: --help, --version, usage errors (2)
        return closed_output.flushed(int(exc.code or 0))
    global_options.apply(flags, getattr(args, "command", None))
    args.only_show_errors = "--only-show-errors" in flags  # for output that is not stderr (validate's findings)
    if getattr(args, "print_completion", None):  # run as a command: a closed pipe or no shtab is handled below
        args.func = lambda parsed: global_options.print_completion(parser, parsed.print_completion)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return closed_output.flushed(int(args.func(args) or 0))
    except UserError as exc:
        from amldist.diagnostics import escape_text  # a name with a newline or ESC stays on its line
        from amldist.rules.secrets import mask_text  # no secret value in any message

        print(f"error: {escape_text(mask_text(exc.message))}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {escape_text(mask_text(exc.hint))}", file=sys.stderr)
        return closed_output.flushed(exc.exit_code)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in amldist, not a user mistake
        if closed_output.is_output_error(exc):  # `| head` closed it, or `> /dev/full`
            return closed_output.handle(exc)
        if os.environ.get("AMLDIST_DEBUG"):
            raise
        from amldist.diagnostics import escape_text
        from amldist.rules.secrets import mask_text

        print(
            f"error: internal error: {type(exc).__name__}: {escape_text(mask_text(str(exc)))} "
            "(run it again with --debug for a traceback, and report it)",
            file=sys.stderr,
        )
        return 3


def run() -> None:
    """The ``amldist`` command (console script and ``python -m amldist``): :func:`main`, then the process
    ends without Python's teardown (:mod:`amldist.cli.process_exit` says when, and why it is safe)."""
    from amldist.cli.process_exit import exit_now

    closed_output.closed_at_start_to_devnull()
    exit_now(main())


if __name__ == "__main__":  # pragma: no cover
    run()
