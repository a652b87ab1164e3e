"""Validation of amldist specs: JSON Schema (checked by jsonschema-rs) plus semantic rules.

Public API (all return ``list[Diagnostic]``, never raise for a bad spec):
``validate_text``, ``validate_file``, ``validate_data``, ``validate_paths``,
``validate_spec``. This package imports PyYAML, jsonschema-rs (only when a document is
checked) and the standard library: no jsonschema, azure-ai-ml, torch or mpi4py
(``amldist validate`` must start fast).
"""

from __future__ import annotations

from amldist.validate.entry_points import validate_data, validate_file, validate_spec, validate_text

__all__ = ["validate_data", "validate_file", "validate_paths", "validate_spec", "validate_text"]


def validate_paths(paths, *, skip_non_specs: bool = False) -> list:
    """Diagnostics for files, folders (searched for *.yml/*.yaml) and globs.

    A path that does not exist raises ``UserError`` (the CLI's exit 2); with
    ``skip_non_specs`` a file that is not a spec is a note even when named.
    """
    from amldist.validate.discover import expand

    out = []
    for path, explicit in expand(paths):
        out.extend(validate_file(path, explicit=explicit and not skip_non_specs))
    return out
