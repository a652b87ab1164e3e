"""Swagger 2.0 definitions -> one JSON Schema (draft 2020-12) for the reference ``jsonschema``.

What the conversion does, and why:

- ``allOf: [{$ref: Base}]`` is inheritance in swagger: the derived model has the base's
  properties too, and ``additionalProperties: false`` on it covers both. JSON Schema's allOf
  would judge each part alone (so "additional" would mean "not declared by this part"),
  so the base's properties and ``required`` are copied into the derived schema instead.
- ``discriminator`` on a base: a ``$ref`` to that base means "one of the models derived
  from it", told apart by the discriminator property, whose value is the derived model's
  ``x-ms-discriminator-value`` (or its name). Such a ref becomes a ``oneOf`` over the
  derived models in the file, each with a ``const`` on the discriminator.
- ``x-nullable: true`` allows JSON null; ``readOnly`` properties must be absent from a
  request (azure-ai-ml serializes with exclude_readonly); ``format: int32`` / ``int64``
  bound the integer; ``format: duration`` (ISO 8601, which has no negative durations) is
  checked with a pattern. Other ``x-ms-*`` keys, ``discriminator`` and ``example`` are
  annotations and are dropped.
- Names: a definition key such as ``JobBase(excerpt: ...)`` is the definition ``JobBase``
  abridged; ``supplements`` add the properties such an excerpt leaves out, and the
  definitions the subset does not carry (existing properties are never replaced).
"""

from __future__ import annotations

import copy

ISO_DURATION = r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$"
_DROP = {"discriminator", "example", "x-nullable", "readOnly", "format", "allOf"}


def _ref_name(ref: str) -> str:
    if not ref.startswith("#/definitions/"):
        raise ValueError(f"only local refs are supported, got {ref!r}")
    return ref[len("#/definitions/"):]


class SwaggerSchema:
    def __init__(self, definitions: dict, supplements: dict | None = None):
        self.defs = {key.split("(")[0]: copy.deepcopy(value) for key, value in definitions.items()}
        for name, value in (supplements or {}).items():  # fill an abridged definition, or add one
            if name not in self.defs:
                self.defs[name] = copy.deepcopy(value)
                continue
            target = self.defs[name]
            for key, prop in value.get("properties", {}).items():
                target.setdefault("properties", {}).setdefault(key, copy.deepcopy(prop))
            target["allOf"] = target.get("allOf", []) + copy.deepcopy(value.get("allOf", []))
        # base name -> derived names, for discriminated bases
        self.derived: dict[str, list[str]] = {}
        for name, value in self.defs.items():
            for part in value.get("allOf", []):
                if "$ref" in part:
                    self.derived.setdefault(_ref_name(part["$ref"]), []).append(name)

    def _flatten(self, name: str) -> dict:
        """The definition with every base's properties and required merged in."""
        node = copy.deepcopy(self.defs[name])
        properties, required = {}, []
        for part in node.get("allOf", []):
            base_name = _ref_name(part["$ref"])
            base = self._flatten(base_name)
            properties.update(base.get("properties", {}))
            required += base.get("required", [])
            key = self.defs[base_name].get("discriminator")
            if key:
                value = node.get("x-ms-discriminator-value", name)
                properties[key] = {**properties.get(key, {}), "const": value}
        properties.update(node.get("properties", {}))
        if properties:
            node["properties"] = properties
        if required or node.get("required"):
            node["required"] = sorted(set(required + node.get("required", [])))
        return node

    def _convert(self, node):
        if isinstance(node, list):
            return [self._convert(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key.startswith("x-ms-") or key in _DROP:
                continue
            if key == "$ref":
                name = _ref_name(value)
                subs = [d for d in self.derived.get(name, []) if self.defs[name].get("discriminator")]
                if subs:
                    out["oneOf"] = [{"$ref": f"#/$defs/{d}"} for d in sorted(subs)]
                else:
                    out["$ref"] = f"#/$defs/{name}"
            elif key == "properties":
                out[key] = {k: self._convert(v) for k, v in value.items()}
            elif key in ("additionalProperties", "items"):
                out[key] = self._convert(value) if isinstance(value, dict) else value
            else:
                out[key] = value
        fmt = node.get("format")
        if fmt == "int32":
            out.update(minimum=-(2**31), maximum=2**31 - 1)
        elif fmt == "int64":
            out.update(minimum=-(2**63), maximum=2**63 - 1)
        elif fmt == "duration":
            out["pattern"] = ISO_DURATION
        if node.get("readOnly"):
            return {"not": {}, "description": "read-only: never sent"}
        if node.get("x-nullable"):
            return {"anyOf": [out, {"type": "null"}]}
        return out

    def schema_for(self, name: str) -> dict:
        defs = {n: self._convert(self._flatten(n)) for n in self.defs}
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": f"#/$defs/{name}", "$defs": defs}
