"""The validation entry points: text, file, data, spec object.

A file goes: bytes -> UTF-8 text -> safe YAML with positions (``documents``) -> kind -> JSON
Schema check (jsonschema-rs, compiled once per process: ``schema_store``, ``schema_check``;
worded by ``schema_errors``) -> the semantic rules. Every problem becomes a Diagnostic;
nothing here raises for a bad file. Choices where the issue is silent:
- an empty file, or a mapping that is no spec amldist knows, is an error when
  the file was named explicitly and a ``note`` when it was found in a folder or
  by a glob;
- YAML trouble (syntax, duplicate keys, unsafe tags, alias bombs, several
  documents) is always an error, wherever the file was found;
- a UTF-8 byte-order mark is accepted.
"""

from __future__ import annotations

import os

from amldist.diagnostics import ERROR, NOTE, WARNING, Diagnostic
from amldist.model.kinds import (DISTRIBUTED_COMPONENT, NOT_A_SPEC, NOT_A_SPEC_HINT, PIPELINE_COMPONENT, PIPELINE_JOB,
                                 SWEEP_JOB, companion_file, detect_kind, recognise)
from amldist.validate import command_rules, rules, schema_check, templates
from amldist.validate.context import Context
from amldist.validate.documents import cached_document, parse
from amldist.validate.schema_errors import Reporter
from amldist.validate.schema_store import SCHEMA_FILES

KINDS = tuple(SCHEMA_FILES)


def _diag(file, severity, code, message, hint=None, line=1, col=1) -> list[Diagnostic]:
    return [Diagnostic(file, line, col, severity, code, message, hint)]


def validate_text(text: str, file: str = "<string>", *, explicit: bool = True, base_dir=None,
                  _parsed=None) -> list[Diagnostic]:
    """Diagnostics for one YAML document given as text."""
    doc, error = _parsed or parse(text)
    if error is not None:
        return _diag(file, ERROR, error.code, error.message, error.hint, error.line, error.col)
    skipped = NOTE if not explicit else ERROR
    if doc.data is None:
        return _diag(file, skipped, "empty-file", "the file is empty" if not text.strip() else
                     "the file holds no YAML value (only comments or null)")
    kind = detect_kind(doc.data)
    other = recognise(doc.data) if kind is None else None
    if other is not None:  # an Azure ML kind amldist does not check: a note, never another kind's errors
        return _diag(file, NOTE, "skipped-kind", f"a {other} file: amldist does not validate this kind; skipped")
    if kind is None and not explicit and companion_file(doc.data) is not None:
        return []  # a conda environment or pre-commit file found in a folder: a spec's companion, said nothing of
    if kind is None:
        return _diag(file, skipped, "not-a-spec", NOT_A_SPEC + ("; skipped" if not explicit else ""),
                     NOT_A_SPEC_HINT if explicit else None)
    return validate_data(doc.data, file, kind=kind, base_dir=base_dir, doc=doc, text=text)


def validate_file(path, *, explicit: bool = True) -> list[Diagnostic]:
    path = os.fspath(path)
    text, doc, problem = cached_document(path)
    if text is None:
        return [_with_file(problem, path)]
    return validate_text(text, path, explicit=explicit, base_dir=os.path.dirname(os.path.abspath(path)),
                         _parsed=(doc, problem))


def validate_data(data, file: str = "<data>", *, kind=None, base_dir=None, doc=None, text=None) -> list[Diagnostic]:
    """Diagnostics for a loaded document (positions are 0:0 without a YamlDocument)."""
    kind = kind or detect_kind(data)
    if kind is None:
        return _diag(file, ERROR, "not-a-spec", NOT_A_SPEC, NOT_A_SPEC_HINT, line=0 if doc is None else 1,
                     col=0 if doc is None else 1)
    if kind not in SCHEMA_FILES:
        raise ValueError(f"unknown spec kind {kind!r}; expected one of {', '.join(KINDS)}")
    ctx = Context(file, doc, base_dir, text)
    for path, at, first in getattr(doc, "repeated", ()):  # the same key and value twice: nothing lost, az ml sends it
        ctx.emit(path, WARNING, "duplicate-key", f"key {path[-1]!r} is written twice with the same value (first at "
                 f"line {first})", "remove one of them", position=at)
    renamed: set = set()
    if rules.has_non_string_keys(data, doc):
        data = rules.string_keys(ctx, data, renamed)
    reporter = Reporter(file, doc, kind=kind, renamed=renamed)
    reporter.add_errors(schema_check.check(kind, data, json_only=doc is not None and not doc.non_json))
    ctx.out.extend(reporter.out)
    if isinstance(data, dict):
        _rules(ctx, kind, data)
    return _sorted_unique(ctx.out)


def _rules(ctx, kind: str, data: dict) -> None:
    if kind == SWEEP_JOB:  # the trial is a command: amldist.validate.sweep applies the command's rules to it
        from amldist.validate.sweep import check_sweep

        check_sweep(ctx, data)
        templates.check_placeholders(ctx, data)
        return
    inputs, outputs = rules.ports(data, "inputs"), rules.ports(data, "outputs")
    if kind == DISTRIBUTED_COMPONENT:
        launcher = data.get("launcher")
        if isinstance(launcher, dict):
            command_rules.check_command(ctx, ("launcher", "additional_arguments"), launcher.get("additional_arguments"),
                                inputs, outputs, legacy=True)
    elif kind in (PIPELINE_JOB, PIPELINE_COMPONENT):
        # imported here: the pipeline rules (~1.5 ms with the graph) are paid for by pipeline files only
        from amldist.validate.pipeline import check_pipeline

        check_pipeline(ctx, data, validate_text)  # its components are validated as files of their own
    else:
        command_rules.check_command(ctx, ("command",), data.get("command"), inputs, outputs)
        rules.check_sizes(ctx, data.get("distribution"), data.get("resources"),
                          dist_path=("distribution",), res_path=("resources",),
                          environment_variables=data.get("environment_variables"))
    rules.check_code(ctx, data)
    rules.check_port_names_case(ctx, data)
    if kind == DISTRIBUTED_COMPONENT or not templates.check_environment_reference(
            ctx, data.get("environment"), ("environment",)):
        rules.check_environment(ctx, data)
    templates.check_placeholders(ctx, data)


def validate_spec(spec) -> list[Diagnostic]:
    """Diagnostics for a model object (``amldist.model``); positions are 0:0."""
    name = getattr(spec, "name", None) or type(spec).__name__
    return validate_data(spec.to_dict(), f"<{name}>", kind=getattr(spec, "kind", None))


def _with_file(diagnostic: Diagnostic, file: str) -> Diagnostic:
    from dataclasses import replace

    return diagnostic if diagnostic.file == file else replace(diagnostic, file=file)


def _sorted_unique(diagnostics):
    seen = set()
    out = []
    for d in diagnostics:
        key = (d.line, d.col, d.severity, d.code, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    out.sort(key=lambda d: (d.line, d.col))
    return out
