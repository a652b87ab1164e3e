"""The file loop of validation, as a library: ``check(targets) -> CheckResult``.

``amldist validate`` is this plus a reporter (:mod:`amldist.validate.reporter`), and
:func:`amldist.validate.validate_paths` is this too, so the library and the command give the same
answer for the same targets. What the loop owns (check-jsonschema's ``checker.py`` holds the same):
- discovery: files, folders (searched for ``*.yml``/``*.yaml``) and glob patterns
  (:mod:`amldist.validate.discover`); ``-`` reads one document from standard input;
- exclusion: ``excludes`` patterns and the ``.gitignore``/``.amlignore`` at each walked root
  (:mod:`amldist.validate.ignore_files`); a file named as a target is always checked;
- de-duplication: each file once, in the order the targets first reach it;
- a bug in a rule becomes an ``internal-error`` for that file (the other files are still checked;
  ``AMLDIST_DEBUG=1`` raises it instead);
- with ``skip_non_specs``, files that are not specs are left out silently, even when named.
Usage mistakes (no targets, a path that is not there, ``-`` twice) raise ``UserError`` (exit 2).
"""

from __future__ import annotations

import os
import sys

from amldist.diagnostics import ERROR, NOTE, Diagnostic
from amldist.errors import UserError
from amldist.validate.discover import expand, no_targets
from amldist.validate.entry_points import validate_file, validate_text
from amldist.validate.ignore_files import FileFilter, walked_root
from amldist.validate.result import CheckResult, FileResult

STDIN = "-"
STDIN_NAME = "<stdin>"
# The notes that say a file was skipped (not a spec, empty, a kind amldist does not validate):
# skip_non_specs, for pre-commit hooks that get every staged YAML file, leaves them out.
SKIPPED = ("not-a-spec", "empty-file", "skipped-kind")


def check(targets, *, excludes=(), ignore_files: bool = True, stdin=None, stdin_name: str | None = None,
          skip_non_specs: bool = False) -> CheckResult:
    """Validate every file that ``targets`` reach.

    ``stdin``: the binary stream ``-`` reads (default: this process's standard input);
    ``stdin_name``: the file name reported for it, whose folder relative paths resolve from
    (default ``<stdin>``, paths from the current folder).
    """
    results = []
    reported: set = set()  # a pipeline reports its components' errors, which may be checked files too
    for path, explicit in discover(targets, excludes=excludes, ignore_files=ignore_files):
        name = (stdin_name or STDIN_NAME) if path == STDIN else path
        found = _check_one(path, name, explicit and not skip_non_specs, stdin=stdin, named=stdin_name is not None)
        if skip_non_specs:
            found = [d for d in found if not (d.severity == NOTE and d.code in SKIPPED)]
        found = [d for d in found if _once(d, reported)]
        results.append(FileResult(name, tuple(found)))
    return CheckResult(tuple(results))


def _once(diagnostic: Diagnostic, reported: set) -> bool:
    """False for a diagnostic already reported (the same file, place, code and message)."""
    key = (os.path.abspath(diagnostic.file), diagnostic.line, diagnostic.col, diagnostic.code, diagnostic.message)
    if key in reported:
        return False
    reported.add(key)
    return True


def discover(targets, *, excludes=(), ignore_files: bool = True) -> list[tuple[str, bool]]:
    """(path, explicit) in target order, each file once; :data:`STDIN` stands for standard input."""
    targets = [os.fspath(target) for target in targets]
    if not targets:
        raise no_targets()
    if targets.count(STDIN) > 1:
        raise UserError("'-' (standard input) is given more than once", hint="standard input can be read once")
    keep = FileFilter(excludes, use_ignore_files=ignore_files)
    out: list[tuple[str, bool]] = []
    seen: set = set()
    for target in targets:
        if target == STDIN:
            out.append((STDIN, True))
            continue
        root = walked_root(target)
        for path, explicit in expand(target):
            key = os.path.normcase(os.path.abspath(path))
            if key in seen or (not explicit and keep.excluded(path, root)):
                continue
            seen.add(key)
            out.append((path, explicit))
    return out


def _check_one(path: str, name: str, explicit: bool, *, stdin, named: bool) -> list[Diagnostic]:
    """One file's diagnostics; a bug in a rule becomes an ``internal-error`` for that file, not a crash."""
    try:
        if path == STDIN:
            return _check_stdin(stdin, name, explicit, named=named)
        return validate_file(path, explicit=explicit)
    except Exception as exc:  # keep validating the other files
        if os.environ.get("AMLDIST_DEBUG"):
            raise
        return [Diagnostic(name, 0, 0, ERROR, "internal-error",
                           f"amldist failed on this file: {type(exc).__name__}: {exc}",
                           "run it again with --debug for a traceback, and report it")]


def _check_stdin(stream, name: str, explicit: bool, *, named: bool) -> list[Diagnostic]:
    """Standard input as one document reported as ``name``; relative paths resolve from its folder
    when a name was given (an editor piping a buffer), else from the current folder."""
    raw = (stream if stream is not None else sys.stdin.buffer).read()
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
