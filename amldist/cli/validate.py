"""``amldist validate PATH... [--format text|json|github|sarif] [--strict] [--exclude GLOB] [--skip-non-specs]``.

Exit 0 when no error (warnings and notes are fine; with --strict a warning
fails too), 1 when any error, 2 for usage errors. Findings go to stdout; the
text format ends with a summary line on stderr. ``-`` reads one document from
standard input. The command parses its arguments and wires :func:`amldist.validate.check` (the
file loop) to a reporter; only the standard library is imported with this module (the CLI imports
every sub-command to build its parser), the validator when the command runs.
"""

from __future__ import annotations

import sys

FORMATS = ("text", "json", "github", "sarif")  # the keys of amldist.validate.REPORTERS (a test holds them equal)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check job/component specs (schema and semantic rules); for CI and pre-commit",
        description="Validate Azure ML v2 command jobs, command components, pipeline jobs and components, and "
        "legacy DistributedComponent specs; other Azure ML kinds are noted as skipped. Folders are searched for "
        "*.yml/*.yaml, leaving out what .gitignore/.amlignore at the folder and --exclude name; '-' reads one "
        "document from standard input.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, folders, glob patterns, or - (stdin)")
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default: text; github: Actions annotations; sarif: code scanning)")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave out found files matching this .gitignore-style pattern (repeatable); "
                        "files named on the command line are always validated")
    parser.add_argument("--no-ignore-files", dest="ignore_files", action="store_false",
                        help="do not read .gitignore/.amlignore at the folders searched")
    parser.add_argument("--stdin-name", metavar="NAME", default=None,
                        help="the file name to report for '-' (default: <stdin>); relative paths in the "
                        "document are read from its folder")
    parser.add_argument("--skip-non-specs", action="store_true",
                        help="skip YAML files that are not specs silently, even when named (for pre-commit)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    parser.set_defaults(func=run)


def run(args) -> int:
    from amldist.validate import REPORTERS, check  # here, so `amldist --version` does not load the validator

    result = check(args.paths, excludes=args.exclude, ignore_files=args.ignore_files, stdin_name=args.stdin_name,
                   skip_non_specs=args.skip_non_specs)
    code = result.exit_code(strict=args.strict)
    if getattr(args, "only_show_errors", False):  # the global flag: warnings and notes are neither shown nor counted
        result = errors_only(result)
    reporter = REPORTERS[args.format]()
    sys.stdout.write(reporter.render(result))
    sys.stdout.flush()
    summary = None if args.quiet else reporter.summary(result)
    if summary:
        print(summary, file=sys.stderr)
    return code


def errors_only(result):
    """``result`` with only its ``error`` diagnostics (``--only-show-errors``); the exit code is computed before."""
    from amldist.diagnostics import ERROR
    from amldist.validate.result import CheckResult, FileResult

    return CheckResult(tuple(FileResult(f.file, tuple(d for d in f.diagnostics if d.severity == ERROR))
                             for f in result.files))
