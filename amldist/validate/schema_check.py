"""The JSON Schema check of a document: jsonschema-rs's errors as ``SchemaError`` records.

``check(kind, data)`` runs the kind's compiled validator and turns each error into a
``SchemaError`` (keyword, the subschema holding it, the instance, details) that
``schema_errors.Reporter`` words. ``x-amldist-unknown-keys: warning`` adds warnings for the keys
a subschema does not list: standard validators ignore the keyword, so the check runs the closed
copy of the schemas (``schema_store.closed_validator``) and its extra ``additionalProperties``
errors become warnings; every other error is the standard one, which
tests/validate/test_reference.py holds to the reference implementation (jsonschema).
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


def check(kind: str, data, *, json_only: bool = False) -> list[SchemaError]:
    """The schema errors (and unknown-key warnings) of a document of ``kind``.

    ``json_only``: the caller knows ``data`` holds no value ``json_values`` replaces (the YAML loader saw none),
    so it is not walked to find out."""
    original, data = data, (data if json_only else json_values(data))
    errors = [adapt(error, 0) for error in schema_store.closed_validator(kind).iter_errors(data)]
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
    params, context, severity = {}, None, "error"
    if name == "additionalProperties" and isinstance(schema, dict) and schema.get(UNKNOWN_KEYS) == "warning":
        keyword, severity = UNKNOWN_KEYS, "warning"  # closed only in the run-time copy: a warning
    if name == "required":
        params = {"missing": kind.property}
    elif name == "additionalProperties":
        params = {"unexpected": list(kind.unexpected)}
    elif name == "oneOfMultipleValid":
        params = {"matched": True}
    if name in ("anyOf", "oneOfNotValid"):
        context = [[adapt(e, len(error.instance_path)) for e in branch] for branch in kind.context]
    return SchemaError(path, keyword, schema, base, error.instance, params, context, severity)


def _at(data, path):
    for step in path:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return None
    return data
