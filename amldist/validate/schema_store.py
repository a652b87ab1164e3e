"""amldist's shipped JSON Schemas: the documents, a subschema by URI, and a compiled validator per spec kind.

The schemas live in ``amldist/schemas/*.json`` (package data, read with importlib.resources so a
wheel works too). They have no ``$id`` and their ``$ref``s are relative
(``common.schema.json#/$defs/count``), so they resolve between themselves wherever the files are:
here under the fixed base ``file:///amldist/schemas/``, in check-jsonschema and in an editor
against the files' own location (a relative ``$id`` would be resolved against the working
directory by check-jsonschema; an absolute one would be fetched). Nothing is ever fetched: a ``$ref`` to anything outside
the shipped files fails when the validator is built (``SchemaLoadError``), not when a document
reaches it.

The checking itself is jsonschema-rs (full draft 2020-12, every error with its instance path and
kind); it is imported here, on first use, so that ``import amldist.validate`` stays cheap.
"""

from __future__ import annotations

import json

BASE = "file:///amldist/schemas/"
SCHEMA_FILES = {
    "command_job": "CommandJob.schema.json",
    "command_component": "CommandComponent.schema.json",
    "pipeline_job": "PipelineJob.schema.json",
    "pipeline_component": "PipelineComponent.schema.json",
    "distributed_component": "DistributedComponent.schema.json",
    "sweep_job": "SweepJob.schema.json",
}
UNKNOWN_KEYS = "x-amldist-unknown-keys"  # unlisted keys are warnings (azure-ai-ml drops or passes them)
HINT = "x-amldist-hint"  # what to do, shown with an error of this subschema
EXPECTED = "x-amldist-expected"  # a pattern's form in words: "a number followed by a unit b, k, m or g"
MISPLACED = "x-amldist-misplaced-keys"  # key -> why it is not allowed here (it belongs to another type)


class SchemaLoadError(Exception):
    """A shipped schema that cannot be read or compiled (a packaging or authoring bug, not a user's)."""


_documents: dict | None = None
_registry = None
_validators: dict = {}


def documents() -> dict:
    """Every shipped schema document by its absolute URI (``BASE`` + file name), read once."""
    global _documents
    if _documents is None:
        found = {}
        for name, text in _schema_texts():
            try:
                found[BASE + name] = json.loads(text)
            except ValueError as exc:
                raise SchemaLoadError(f"schema file {name} is not valid JSON: {exc}") from None
        _documents = found
    return _documents


def _schema_texts():
    from importlib.resources import files

    folder = files("amldist").joinpath("schemas")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            yield entry.name, entry.read_text(encoding="utf-8")


def schema_uri(kind: str) -> str:
    return BASE + SCHEMA_FILES[kind]


def schema_for(kind: str) -> dict:
    """The schema document of a spec kind."""
    return documents()[schema_uri(kind)]


def subschema(uri: str):
    """The schema at an absolute URI with a JSON-pointer fragment (as jsonschema-rs reports locations);
    a location in the closed copy gives the shipped subschema."""
    if uri.startswith(CLOSED_BASE):
        uri = BASE + uri[len(CLOSED_BASE):]
    document_uri, _, pointer = uri.partition("#")
    node = documents().get(document_uri)
    if node is None:
        return None
    for token in pointer.split("/")[1:] if pointer else ():
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            return None
    return node


def _refuse(uri: str):
    raise SchemaLoadError(f"{uri} is not one of amldist's schema files; the schemas refer only to each other")


# The run-time check uses a closed copy of the schemas: every subschema marked
# ``x-amldist-unknown-keys: warning`` also gets ``additionalProperties: false`` there, so one
# jsonschema-rs pass finds the unlisted keys too, and ``schema_check`` turns those errors into
# warnings. The copy lives under its own base so its relative $refs stay inside it. This is exact
# because no marked subschema sits under anyOf/oneOf/not/if (where closing it could change which
# branch applies): tests/validate/test_reference.py checks both that and that the closed check's
# errors are the standard check's errors.
CLOSED_BASE = "file:///amldist/schemas-closed/"


def _closed(node):
    if isinstance(node, dict):
        out = {key: (value if key in ("enum", "const", "default", "examples") else _closed(value))
               for key, value in node.items()}
        if out.get(UNKNOWN_KEYS) == "warning" and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_closed(value) for value in node]
    return node


def registry():
    """The jsonschema-rs registry of every shipped document and its closed copy (built once)."""
    global _registry
    if _registry is None:
        import jsonschema_rs

        resources = list(documents().items())
        resources += [(CLOSED_BASE + uri[len(BASE):], _closed(doc)) for uri, doc in documents().items()]
        try:
            _registry = jsonschema_rs.Registry(resources, retriever=_refuse)
        except Exception as exc:  # noqa: BLE001 - jsonschema-rs raises its own types; say which file
            raise SchemaLoadError(f"the shipped schemas do not load: {exc}") from None
    return _registry


def compile_schema(schema, base_uri=None):
    """A jsonschema-rs validator of ``schema`` against the shipped documents, fetching nothing."""
    import jsonschema_rs

    try:
        return jsonschema_rs.Draft202012Validator(schema, registry=registry(), base_uri=base_uri,
                                                  retriever=_refuse)
    except Exception as exc:  # noqa: BLE001 - a bad $ref or pattern in a shipped schema: say where
        raise SchemaLoadError(f"a shipped schema does not compile ({base_uri or schema}): {exc}") from None


def validator(kind: str):
    """The standard validator of a spec kind (every ``$ref`` resolved now); x-amldist-* are annotations."""
    found = _validators.get(kind)
    if found is None:
        found = _validators[kind] = compile_schema({"$ref": schema_uri(kind)})
    return found


def closed_validator(kind: str):
    """The run-time validator: the standard one plus an error for each key a marked subschema does not list."""
    key = ("closed", kind)
    found = _validators.get(key)
    if found is None:
        found = _validators[key] = compile_schema({"$ref": CLOSED_BASE + SCHEMA_FILES[kind]})
    return found
