"""Schema documents by URI, ``$ref`` resolution, and the compiled validator per spec kind.

The shipped schemas live in ``amldist/schemas/*.json`` (package data, read with
importlib.resources so a wheel works too). Each has an ``$id`` such as
``https://amldist.dev/schemas/CommandJob.schema.json``; relative refs like
``common.schema.json#/$defs/x`` resolve against it. Refs that leave the
registry (any other host, a missing file) are refused at compile time: the
validator never fetches anything.
"""

from __future__ import annotations

import json
import posixpath

from amldist.validate.evaluator import Compiler, SchemaCompileError

BASE = "https://amldist.dev/schemas/"
SCHEMA_FILES = {
    "command_job": "CommandJob.schema.json",
    "command_component": "CommandComponent.schema.json",
    "pipeline_job": "PipelineJob.schema.json",
    "pipeline_component": "PipelineComponent.schema.json",
    "distributed_component": "DistributedComponent.schema.json",
}


class Registry:
    """Schema documents by absolute URI (without fragment), plus every embedded ``$id``."""

    def __init__(self, documents=None):
        self.documents: dict[str, object] = {}
        self.compiler = Compiler(self)
        self._validators: dict = {}
        for uri, schema in (documents or {}).items():
            self.add(uri, schema)

    def add(self, uri: str, schema) -> None:
        if isinstance(schema, dict) and isinstance(schema.get("$id"), str):
            uri = self.join(uri, schema["$id"])
        self.documents[uri.split("#", 1)[0]] = schema
        self._register_embedded(schema, uri, top=True)

    def _register_embedded(self, schema, base: str, top: bool = False) -> None:
        if isinstance(schema, dict):
            if not top and isinstance(schema.get("$id"), str):
                base = self.join(base, schema["$id"])
                self.documents.setdefault(base.split("#", 1)[0], schema)
            for key, value in schema.items():
                if key not in ("enum", "const", "default", "examples"):
                    self._register_embedded(value, base)
        elif isinstance(schema, list):
            for value in schema:
                self._register_embedded(value, base)

    @staticmethod
    def join(base: str, ref: str) -> str:
        """RFC 3986 reference resolution for the cases schemas use (absolute, #frag, relative path)."""
        if "://" in ref.split("#", 1)[0] or ref.startswith("urn:"):
            return ref
        base = base.split("#", 1)[0]
        if ref.startswith("#") or not ref:
            return base + ref
        scheme_host, _, path = base.partition("://")
        host, _, path = path.partition("/")
        folder = posixpath.dirname("/" + path)
        joined = posixpath.normpath(posixpath.join(folder, ref.split("#", 1)[0]))
        fragment = "#" + ref.split("#", 1)[1] if "#" in ref else ""
        return f"{scheme_host}://{host}{joined}{fragment}"

    def resolve(self, base: str, ref: str):
        """(subschema, its base URI) for ``$ref`` seen in a schema whose base is ``base``."""
        uri = self.join(base, ref)
        doc_uri, _, fragment = uri.partition("#")
        if doc_uri not in self.documents:
            raise SchemaCompileError(f"$ref {ref!r} (from {base}) names no known schema {doc_uri!r}")
        node = self.documents[doc_uri]
        if fragment:
            if not fragment.startswith("/"):
                raise SchemaCompileError(f"$ref {ref!r}: only JSON-pointer fragments are supported")
            for token in fragment[1:].split("/"):
                token = _unquote(token).replace("~1", "/").replace("~0", "~")
                try:
                    node = node[int(token)] if isinstance(node, list) else node[token]
                except (KeyError, IndexError, ValueError, TypeError):
                    raise SchemaCompileError(f"$ref {ref!r} points at nothing in {doc_uri}") from None
        return node, doc_uri

    def compile_everything(self) -> int:
        """Compile every subschema of every document now (tests: a bad schema fails here, not mid-run).

        Returns how many subschemas were compiled.
        """
        count = 0
        for uri, document in list(self.documents.items()):
            stack = [(document, uri)]
            while stack:
                node, base = stack.pop()
                if not isinstance(node, dict):  # true/false schemas compile to constants
                    continue
                if isinstance(node.get("$id"), str):
                    base = self.join(base, node["$id"])
                self.compiler.compile(node, base)
                count += 1
                for key in ("items", "additionalProperties", "propertyNames", "not", "if", "then", "else"):
                    if isinstance(node.get(key), dict):
                        stack.append((node[key], base))
                for key in ("properties", "patternProperties", "$defs"):
                    if isinstance(node.get(key), dict):
                        stack.extend((sub, base) for sub in node[key].values())
                for key in ("allOf", "anyOf", "oneOf"):
                    if isinstance(node.get(key), list):
                        stack.extend((sub, base) for sub in node[key])
                if isinstance(node.get("$ref"), str):
                    self.compiler.compile(*self.resolve(base, node["$ref"]))
        return count

    def validator(self, uri: str):
        """The compiled check for the document at ``uri``: ``check(instance) -> list[SchemaError]``."""
        found = self._validators.get(uri)
        if found is None:
            schema, base = self.resolve(uri, uri)
            found = self._validators[uri] = self.compiler.compile(schema, base)
        return found


def _unquote(token: str) -> str:
    if "%" not in token:
        return token
    from urllib.parse import unquote

    return unquote(token)


_shipped: Registry | None = None


def shipped() -> Registry:
    """The registry of amldist's own schema files, loaded once per process."""
    global _shipped
    if _shipped is None:
        registry = Registry()
        for name, text in _schema_texts():
            try:
                registry.add(BASE + name, json.loads(text))
            except ValueError as exc:
                raise SchemaCompileError(f"schema file {name} is not valid JSON: {exc}") from None
        _shipped = registry
    return _shipped


def _schema_texts():
    from importlib.resources import files

    folder = files("amldist").joinpath("schemas")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            yield entry.name, entry.read_text(encoding="utf-8")


def schema_uri(kind: str) -> str:
    return BASE + SCHEMA_FILES[kind]


def schema_for(kind: str):
    """The raw schema document for a spec kind (for did-you-mean and hints)."""
    return shipped().resolve(schema_uri(kind), schema_uri(kind))[0]


def check_for(kind: str):
    """The compiled check for a spec kind."""
    return shipped().validator(schema_uri(kind))
