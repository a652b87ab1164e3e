"""``amldist validate PATH... [--format text|json|github] [--strict] [--skip-non-specs]``.

Exit 0 when no error (warnings and notes are fine; with --strict a warning
fails too), 1 when any error, 2 for usage errors. Findings go to stdout; the
text format ends with a summary line on stderr. Only the standard library is
imported here; the validator is imported inside ``run``.
"""

from __future__ import annotations

import sys

FORMATS = ("text", "json", "github")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check job/component specs (schema and semantic rules); for CI and pre-commit",
        description="Validate Azure ML v2 command jobs, command components, pipeline jobs and legacy "
        "DistributedComponent specs. Folders are searched for *.yml/*.yaml.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, folders or glob patterns")
    parser.add_argument("--format", default="text", choices=FORMATS, help="output format (default: text)")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    parser.add_argument("--skip-non-specs", action="store_true",
                        help="skip YAML files that are not specs even when named (for pre-commit)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    parser.set_defaults(func=run)


def run(args) -> int:
    from amldist.diagnostics import ERROR, NOTE, WARNING, has_errors
    from amldist.validate.discover import expand
    from amldist.validate.output import render

    files = expand(args.paths)  # a usage error (exit 2) for no paths or a path that is not there
    results = [(path, _validate_one(path, explicit and not args.skip_non_specs)) for path, explicit in files]
    diagnostics = [d for _, found in results for d in found]
    sys.stdout.write(render(args.format, results))
    sys.stdout.flush()
    if args.format == "text" and not args.quiet:
        count = {severity: sum(d.severity == severity for d in diagnostics) for severity in (ERROR, WARNING, NOTE)}
        notes = f", {count[NOTE]} notes" if count[NOTE] else ""
        print(f"{len(files)} files, {count[ERROR]} errors, {count[WARNING]} warnings{notes}", file=sys.stderr)
    return 1 if has_errors(diagnostics, strict=args.strict) else 0


def _validate_one(path: str, explicit: bool):
    """One file's diagnostics; a bug in a rule becomes an ``internal-error`` for that file, not a crash."""
    from amldist.validate import validate_file

    try:
        return validate_file(path, explicit=explicit)
    except Exception as exc:  # keep validating the other files
        import os

        if os.environ.get("AMLDIST_DEBUG"):
            raise
        from amldist.diagnostics import ERROR, Diagnostic

        return [Diagnostic(path, 0, 0, ERROR, "internal-error",
                           f"amldist failed on this file: {type(exc).__name__}: {exc}",
                           "set AMLDIST_DEBUG=1 for a traceback and report it")]
