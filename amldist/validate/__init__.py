"""Validation of amldist specs: JSON Schema (checked by jsonschema-rs) plus semantic rules.

Public API (never raises for a bad spec):
- ``check(targets, *, excludes, ignore_files, stdin, ...) -> CheckResult``: the file loop (discovery,
  exclusion, .gitignore/.amlignore, de-duplication, standard input); ``REPORTERS`` prints a result
  (text, json, github, sarif). ``amldist validate`` is these two wired together;
- ``validate_paths`` (``check`` as a list of diagnostics: the same answer as ``amldist validate``),
  ``validate_text``, ``validate_file``, ``validate_data``, ``validate_spec``: ``list[Diagnostic]``.
This package imports PyYAML, jsonschema-rs (only when a document is checked), pathspec (only when
a pattern must be matched) and the standard library: no jsonschema, azure-ai-ml, torch or mpi4py
(``amldist validate`` must start fast).
"""

from __future__ import annotations

from amldist.validate.checker import check
from amldist.validate.entry_points import validate_data, validate_file, validate_spec, validate_text
from amldist.validate.reporter import REPORTERS
from amldist.validate.result import CheckResult, FileResult

__all__ = ["REPORTERS", "CheckResult", "FileResult", "check", "validate_data", "validate_file", "validate_paths",
           "validate_spec", "validate_text"]


def validate_paths(paths, *, skip_non_specs: bool = False, excludes=(), ignore_files: bool = True) -> list:
    """Diagnostics for files, folders (searched for *.yml/*.yaml) and globs: what ``amldist validate``
    reports for the same arguments (found files that .gitignore/.amlignore or ``excludes`` name are
    left out; a named file is always checked).

    A path that does not exist raises ``UserError`` (the CLI's exit 2); with
    ``skip_non_specs`` a file that is not a spec is left out even when named.
    """
    return check(paths, excludes=excludes, ignore_files=ignore_files, skip_non_specs=skip_non_specs).diagnostics
