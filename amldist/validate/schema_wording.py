"""Words for schema errors: what was expected, what was found, and did-you-mean.

No message shows a regular expression: a pattern is said in words, either as the caseless words
it accepts (``^([pP][yY][tT][oO][rR][cC][hH]|...)$`` -> "pytorch, mpi, ...") or as the
subschema's ``x-amldist-expected`` ("a number followed by a unit b, k, m or g").
"""

from __future__ import annotations

import re

from amldist.validate.schema_store import EXPECTED, MISPLACED, UNKNOWN_KEYS
from amldist.rules.secrets import MASK, is_secret_path

_TYPE_WORDS = {
    "null": "null",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
}

CODES = {
    "type": "wrong-type",
    "enum": "invalid-value",
    "const": "invalid-value",
    "pattern": "invalid-format",
    "minimum": "out-of-range",
    "maximum": "out-of-range",
    "exclusiveMinimum": "out-of-range",
    "exclusiveMaximum": "out-of-range",
    "minLength": "invalid-length",
    "maxLength": "invalid-length",
    "minItems": "invalid-length",
    "maxItems": "invalid-length",
    "required": "missing-key",
    "additionalProperties": "unknown-key",
    UNKNOWN_KEYS: "unknown-key",
    MISPLACED: "unknown-key",
    "items": "not-allowed",
    "propertyNames": "invalid-format",
    "not": "not-allowed",
    "false": "not-allowed",
    "anyOf": "no-match",
    "oneOf": "no-match",
}


def show(value, limit: int = 60) -> str:
    """A short YAML-flavoured rendering of a found value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        text = value if len(value) <= limit else value[: limit - 3] + "..."
        return repr(text)
    if isinstance(value, (bytes, bytearray)):
        return "binary data"
    return repr(value)


def type_words(names) -> str:
    names = [names] if isinstance(names, str) else list(names)
    words = [_TYPE_WORDS.get(n, n) if (n != "boolean" or len(names) == 1) else "a boolean" for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def choices(values) -> str:
    return ", ".join(show(v) if not isinstance(v, str) else v for v in values)


_SIZES = ("maxLength", "minItems", "maxItems")  # messages that give a length, not the value


def describe(error) -> str:
    """The message of a SchemaError, without the field name (the reporter adds it)."""
    kw, value, found = error.keyword, error.value, error.instance
    if kw not in _SIZES and is_secret_path(getattr(error, "path", ())):
        found = MASK  # a secret-named field's value is never printed (amldist.rules.secrets)
    if kw == "type":
        return f"expected {type_words(value)}, got {show(found)}"
    if kw == "enum":
        return f"{show(found)} is not one of: {choices(value)}"
    if kw == "const":
        return f"expected {show(value)}, got {show(found)}"
    if kw == "pattern":
        expected = error.schema.get(EXPECTED) if isinstance(error.schema, dict) else None
        return f"{show(found)} is not {expected}" if expected else f"{show(found)} does not have the expected form"
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kw]
        return f"must be {op} {value}, got {show(found)}"
    if kw == "minLength":
        return "must not be empty" if value == 1 else f"must have at least {value} characters"
    if kw == "maxLength":
        return f"must have at most {value} characters, got {len(found)}"
    if kw == "minItems":
        return "must not be an empty list" if value == 1 else f"must have at least {value} items, got {len(found)}"
    if kw == "maxItems":
        return f"must have at most {value} items, got {len(found)}"
    if kw == "required":
        return f"missing required key {error.params['missing']!r}"
    if kw in ("additionalProperties", UNKNOWN_KEYS):
        keys = error.params.get("unexpected", [])
        return "unknown key " + ", ".join(repr(k) for k in keys)
    if kw == "oneOf" and error.params.get("matched"):
        return "matches more than one of the allowed forms; make it unambiguous"
    if kw in ("anyOf", "oneOf"):
        return "does not match any of the allowed forms"
    if kw == "items":
        return "must be an empty list"
    return "is not allowed here"


_CASELESS_WORD = r"^\^?((?:\[[a-zA-Z]{2}\]|[0-9_.\-])+)\$?$"  # compiled on first use (re's cache)


def words_of(schema) -> list:
    """The literal words a small schema accepts: const, enum, or a caseless ``^[pP][yY]...$`` pattern
    (spelled as the schema's ``examples`` when they all match it)."""
    if not isinstance(schema, dict):
        return []
    if "const" in schema:
        return [schema["const"]]
    if "enum" in schema:
        return list(schema["enum"])
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        words = []
        for alternative in _split_alternatives(pattern):
            match = re.match(_CASELESS_WORD, alternative)
            if match:
                words.append(re.sub(r"\[([a-zA-Z])[a-zA-Z]\]", lambda m: m.group(1).lower(), match.group(1)))
            else:
                return []  # not a list of caseless words (e.g. ^\d+[gG]$)
        examples = schema.get("examples")
        if words and isinstance(examples, list) and len(examples) >= len(words) and all(
                isinstance(e, str) and re.search(pattern, e) for e in examples):
            return list(examples)  # the schema's own spelling (AnyDirectory, not anydirectory)
        return words
    return []


def _split_alternatives(pattern: str) -> list[str]:
    """``^(a|b)$`` or ``^a$|^b$`` -> [a, b] (only for simple alternations)."""
    inner = pattern
    if inner.startswith("^(") and inner.endswith(")$") and inner.count("(") == 1:
        return ["^" + part + "$" for part in inner[2:-2].split("|")]
    return inner.split("|")
