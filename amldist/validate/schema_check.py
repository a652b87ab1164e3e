"""The JSON Schema check of a document: jsonschema-rs's errors as ``SchemaError`` records.

``check(kind, data)`` runs the kind's compiled validator and turns each error into a
``SchemaError`` (keyword, the subschema holding it, the instance, details) that
``schema_errors.Reporter`` words. ``x-amldist-unknown-keys: warning`` adds warnings for the keys
a subschema does not list: standard validators ignore the keyword, jsonschema-rs reports it as
an annotation of every subschema that applied, which is where the warnings come from (so the
valid/invalid answer stays the standard one, and tests/validate/test_reference.py holds
jsonschema-rs to the reference implementation).
"""

from __future__ import annotations

import math

from amldist.validate import schema_store
from amldist.validate.schema_store import UNKNOWN_KEYS
from amldist.validate.schema_wording import describe


class SchemaError:
    """One failing keyword at one place of the instance, in the words the Reporter needs.

    ``path``: instance path (relative to the union for an error inside a branch); ``keyword``;
    ``schema``: the subschema holding the keyword (for hints, titles, known keys); ``base``: the
    URI of the document holding it; ``value``: the keyword's value; ``instance``: what was found;
    ``params``: missing/unexpected keys, property_name, matched; ``context``: for anyOf/oneOf,
    one list of errors per branch (kept for a schema that has one; the shipped ones do not);
    ``severity``: "error" or "warning".
    """

    __slots__ = ("path", "keyword", "schema", "base", "value", "instance", "params", "context", "severity")

    def __init__(self, path, keyword, schema, base, instance, params=None, context=None, severity="error"):
        self.path = path
        self.keyword = keyword
        self.schema = schema
        self.base = base
        self.value = schema.get(keyword) if isinstance(schema, dict) else schema
        self.instance = instance
        self.params = params or {}
        self.context = context
        self.severity = severity

    def __repr__(self) -> str:
        return f"SchemaError({self.keyword!r} at {self.path!r}: {self.message})"

    @property
    def message(self) -> str:
        return describe(self)


def check(kind: str, data) -> list[SchemaError]:
    """The schema errors (and unknown-key warnings) of a document of ``kind``."""
    validator = schema_store.validator(kind)
    original, data = data, json_values(data)
    errors = [adapt(error, 0) for error in validator.iter_errors(data)]
    if schema_store.warns_unknown_keys(kind):
        errors.extend(unknown_key_warnings(validator, data))
    if data is not original:  # show what was written (binary data, .inf), not its stand-in
        for error in errors:
            error.instance = _at(original, error.path)
    return errors


NOT_JSON = ["binary data or a non-finite number"]  # a list: refused by every scalar or mapping schema


def json_values(data):
    """``data`` with the values JSON has no word for (YAML's !!binary, .inf, .nan) replaced by a list
    that no scalar schema accepts; jsonschema-rs refuses bytes and reads .inf as null. ``data``
    itself when there is none (the usual case: no copy)."""
    if isinstance(data, dict):
        items = {key: json_values(value) for key, value in data.items()}
        return data if all(items[k] is data[k] for k in data) else items
    if isinstance(data, list):
        items = [json_values(value) for value in data]
        return data if all(a is b for a, b in zip(items, data)) else items
    if isinstance(data, (bytes, bytearray)) or (isinstance(data, float) and not math.isfinite(data)):
        return NOT_JSON
    return data


def adapt(error, depth: int) -> SchemaError:
    """A jsonschema-rs ValidationError as a SchemaError, its path taken from ``depth`` on."""
    kind = error.kind
    name = kind.name
    path = tuple(error.instance_path)[depth:]
    if name == "propertyNames":  # reported at the mapping, about one key: keep the inner error's keyword
        inner = adapt(kind.error, 0)
        inner.path = path
        inner.params = {**inner.params, "property_name": inner.instance}
        return inner
    location = error.absolute_keyword_location or ""
    base = location.partition("#")[0]
    if name == "falseSchema":
        schema, keyword = False, "false"
    else:
        schema, keyword = schema_store.subschema(location.rsplit("/", 1)[0]), location.rsplit("/", 1)[-1]
        keyword = keyword.replace("~1", "/").replace("~0", "~")
    params, context = {}, None
    if name == "required":
        params = {"missing": kind.property}
    elif name == "additionalProperties":
        params = {"unexpected": list(kind.unexpected)}
    elif name == "oneOfMultipleValid":
        params = {"matched": True}
    if name in ("anyOf", "oneOfNotValid"):
        context = [[adapt(e, len(error.instance_path)) for e in branch] for branch in kind.context]
    return SchemaError(path, keyword, schema, base, error.instance, params, context)


def unknown_key_warnings(validator, data) -> list[SchemaError]:
    """Warnings for the keys a subschema marked ``x-amldist-unknown-keys: warning`` does not list.

    Read from the evaluation's annotations (kept or dropped), skipping subschemas reached
    through an ``anyOf``/``oneOf`` branch that failed or through ``if``/``not`` (those did not
    apply to the document)."""
    details = validator.evaluate(data).list()["details"]
    failed = {d["evaluationPath"] for d in details if not d["valid"]}
    out = []
    for detail in details:
        notes = detail.get("annotations", detail.get("droppedAnnotations"))
        if not isinstance(notes, dict) or notes.get(UNKNOWN_KEYS) != "warning":
            continue
        steps = detail["evaluationPath"].split("/")
        if any(step in ("if", "not") for step in steps) or any(
                steps[i] in ("anyOf", "oneOf") and "/".join(steps[:i + 2]) in failed for i in range(len(steps) - 1)):
            continue
        location = detail["schemaLocation"]
        schema = schema_store.subschema(location)
        path = tuple(_pointer(detail["instanceLocation"], data))
        instance = _at(data, path)
        if not isinstance(schema, dict) or not isinstance(instance, dict):
            continue
        extras = _extras(schema, instance)
        if extras:
            out.append(SchemaError(path, UNKNOWN_KEYS, schema, location.partition("#")[0], instance,
                                   {"unexpected": extras}, severity="warning"))
    return out


def _pointer(pointer: str, data):
    """The keys and indices of an instance location (``/jobs/0`` -> ("jobs", 0) where a list is)."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(data, list) and token.isdigit():
            data = data[int(token)] if int(token) < len(data) else None
            yield int(token)
        else:
            data = data.get(token) if isinstance(data, dict) else None
            yield token


def _at(data, path):
    for step in path:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _extras(schema: dict, instance: dict) -> list:
    """The keys neither ``properties`` nor ``patternProperties`` of ``schema`` cover."""
    import re

    known = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [key for key in instance
            if key not in known and not any(isinstance(key, str) and p.search(key) for p in patterns)]
