"""Helpers: the shipped schemas checked with the reference implementation (``jsonschema``).

Documents are loaded exactly as amldist loads them (``load_yaml``) and the schema is
picked the way amldist picks it (``detect_kind``), so these tests check the files
the validator ships, not a copy.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from amldist.model.kinds import detect_kind
from amldist.model.yamlio import load_yaml

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "amldist" / "schemas"
BASE = "file:///amldist/schemas/"  # the shipped $ids are relative file names: any base works
DOCUMENT_SCHEMAS = {
    "command_job": "CommandJob.schema.json",
    "command_component": "CommandComponent.schema.json",
    "pipeline_job": "PipelineJob.schema.json",
    "distributed_component": "DistributedComponent.schema.json",
}


def schema_files() -> list[Path]:
    return sorted(SCHEMA_DIR.glob("*.json"))


def load_schemas() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in schema_files()}


def make_registry() -> Registry:
    return Registry().with_resources(
        (BASE + name, Resource.from_contents(s, default_specification=DRAFT202012)) for name, s in load_schemas().items())


_REGISTRY = make_registry()
_VALIDATORS: dict[str, Draft202012Validator] = {}


def validator(kind: str) -> Draft202012Validator:
    if kind not in _VALIDATORS:
        schema = {"$ref": BASE + DOCUMENT_SCHEMAS[kind]}
        _VALIDATORS[kind] = Draft202012Validator(schema, registry=_REGISTRY)
    return _VALIDATORS[kind]


def parse(text: str):
    """YAML text (dedented) -> data, as amldist reads it."""
    return load_yaml(textwrap.dedent(text)).data


def errors(data, kind: str | None = None) -> list:
    """Every schema error for a document; the kind comes from detect_kind unless given."""
    kind = kind or detect_kind(data)
    assert kind is not None, f"not a spec: {data!r}"
    return list(validator(kind).iter_errors(data))


def _leaves(error):
    """The errors to blame: the error itself, or for anyOf/oneOf every branch's errors."""
    if error.context:
        for sub in error.context:
            yield from _leaves(sub)
    else:
        yield error


def blamed_fields(errs) -> set[str]:
    """Dotted paths an error names: its location, plus the missing or unexpected key when it is about keys."""
    found = set()
    for top in errs:
        for error in _leaves(top):
            path = ".".join(str(p) for p in error.absolute_path)
            join = (lambda key: f"{path}.{key}" if path else str(key))
            if error.validator == "required":
                found.update(join(k) for k in error.validator_value if k not in error.instance)
            elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
                known = error.schema.get("properties", {})
                found.update(join(k) for k in error.instance if k not in known)
            else:
                found.add(path)
    return found


def hints(errs) -> list[str]:
    """The x-amldist-hint texts attached to the failing subschemas."""
    found = []
    for top in errs:
        for e in _leaves(top):
            if not isinstance(e.schema, dict):
                continue
            if "x-amldist-hint" in e.schema:
                found.append(e.schema["x-amldist-hint"])
            if e.validator == "additionalProperties" and isinstance(e.instance, dict):
                misplaced = e.schema.get("x-amldist-misplaced-keys", {})  # another type's key: its hint
                found.extend(misplaced[k] for k in e.instance if k in misplaced)
    return found
