"""``amldist validate PATH... [--format text|json|github|sarif] [--strict] [--exclude GLOB] [--skip-non-specs]``.

Exit 0 when no error (warnings and notes are fine; with --strict a warning
fails too), 1 when any error, 2 for usage errors. Findings go to stdout; the
text format ends with a summary line on stderr. ``-`` reads one document from
standard input. Only the standard library is imported here; the validator is
imported inside ``run`` (and ``pathspec`` only when a pattern must be matched).
"""

from __future__ import annotations

import os
import sys

FORMATS = ("text", "json", "github", "sarif")
STDIN = "-"
# The notes that say a file was skipped (not a spec, empty, a kind amldist does not validate):
# --skip-non-specs, for pre-commit hooks that get every staged YAML file, leaves them out.
SKIPPED = ("not-a-spec", "empty-file", "skipped-kind")


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
    from amldist.diagnostics import ERROR, NOTE, WARNING, has_errors
    from amldist.validate.output import render

    results = [(_shown(path, args), _validate_one(path, explicit and not args.skip_non_specs, args))
               for path, explicit in files_to_validate(args)]
    if args.skip_non_specs:
        results = [(path, [d for d in found if not (d.severity == NOTE and d.code in SKIPPED)])
                   for path, found in results]
    diagnostics = [d for _, found in results for d in found]
    sys.stdout.write(render(args.format, results))
    sys.stdout.flush()
    if args.format == "text" and not args.quiet:
        count = {severity: sum(d.severity == severity for d in diagnostics) for severity in (ERROR, WARNING, NOTE)}
        notes = f", {count[NOTE]} notes" if count[NOTE] else ""
        print(f"{len(results)} files, {count[ERROR]} errors, {count[WARNING]} warnings{notes}", file=sys.stderr)
    return 1 if has_errors(diagnostics, strict=args.strict) else 0


def files_to_validate(args) -> list[tuple[str, bool]]:
    """(path, explicit) in argument order, each file once; STDIN stands for standard input.

    UserError (exit 2) for no paths, a path that is not there, or ``-`` given twice.
    """
    from amldist.errors import UserError
    from amldist.validate.discover import expand
    from amldist.validate.ignore_files import FileFilter, walked_root

    if not args.paths:
        expand([])  # its usage error
    if args.paths.count(STDIN) > 1:
        raise UserError("'-' (standard input) is given more than once", hint="standard input can be read once")
    keep = FileFilter(args.exclude, use_ignore_files=args.ignore_files)
    out: list[tuple[str, bool]] = []
    seen: set = set()
    for argument in args.paths:
        if argument == STDIN:
            out.append((STDIN, True))
            continue
        root = walked_root(argument)
        for path, explicit in expand([argument]):
            key = os.path.normcase(os.path.abspath(path))
            if key in seen or (not explicit and keep.excluded(path, root)):
                continue
            seen.add(key)
            out.append((path, explicit))
    return out


def _shown(path: str, args) -> str:
    return (args.stdin_name or "<stdin>") if path == STDIN else path


def _validate_one(path: str, explicit: bool, args):
    """One file's diagnostics; a bug in a rule becomes an ``internal-error`` for that file, not a crash."""
    name = _shown(path, args)
    try:
        if path == STDIN:
            return _validate_stdin(name, explicit, named=args.stdin_name is not None)
        from amldist.validate import validate_file

        return validate_file(path, explicit=explicit)
    except Exception as exc:  # keep validating the other files
        if os.environ.get("AMLDIST_DEBUG"):
            raise
        from amldist.diagnostics import ERROR, Diagnostic

        return [Diagnostic(name, 0, 0, ERROR, "internal-error",
                           f"amldist failed on this file: {type(exc).__name__}: {exc}",
                           "set AMLDIST_DEBUG=1 for a traceback and report it")]


def _validate_stdin(name: str, explicit: bool, *, named: bool):
    """Standard input as one document reported as ``name``; relative paths resolve from its folder
    when ``--stdin-name`` gave one (an editor piping a buffer), else from the current folder."""
    from amldist.diagnostics import ERROR, Diagnostic
    from amldist.validate import validate_text

    raw = sys.stdin.buffer.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return [Diagnostic(name, line, col, ERROR, "not-utf8",
                           f"standard input is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                           "send UTF-8 text")]
    base = os.path.dirname(os.path.abspath(name)) if named else os.getcwd()
    return validate_text(text, name, explicit=explicit, base_dir=base)
