"""One builder per JSON Schema keyword: ``build(compiler, schema, base) -> check``.

A check takes an instance and returns a list of SchemaError (or the shared
empty tuple). Semantics follow jsonschema's Draft202012Validator for the same
keyword, including where each error's instance path points.
"""

from __future__ import annotations

from amldist.validate.evaluator import (
    EMPTY,
    TYPE_CHECKS,
    UNKNOWN_KEYS,
    SchemaCompileError,
    SchemaError,
    _is_number,
    _under,
    json_equal,
    regex,
)
from amldist.validate.combinators import _all_of, _any_of, _if, _not, _one_of, _ref


def _type(compiler, schema, base):
    names = schema["type"]
    names = [names] if isinstance(names, str) else list(names)
    try:
        tests = tuple(TYPE_CHECKS[name] for name in names)
    except KeyError as exc:
        raise SchemaCompileError(f"unknown type {exc.args[0]!r}") from None

    def check(instance):
        for test in tests:
            if test(instance):
                return EMPTY
        return [SchemaError("type", schema, instance)]

    return check


def _enum(compiler, schema, base):
    values = schema["enum"]
    if values and all(isinstance(v, str) for v in values):  # the usual case: a set lookup
        strings = frozenset(values)
        return lambda instance: EMPTY if isinstance(instance, str) and instance in strings else [
            SchemaError("enum", schema, instance)]

    def check(instance):
        for value in values:
            if json_equal(value, instance):
                return EMPTY
        return [SchemaError("enum", schema, instance)]

    return check


def _const(compiler, schema, base):
    value = schema["const"]

    def check(instance):
        return EMPTY if json_equal(value, instance) else [SchemaError("const", schema, instance)]

    return check


def _pattern(compiler, schema, base):
    pattern = schema["pattern"]
    if not isinstance(pattern, str):
        raise SchemaCompileError(f"pattern must be a string, not {pattern!r}")
    search = None

    def check(instance):
        nonlocal search
        if isinstance(instance, str):
            if search is None:  # compiled on first use: most patterns never see a value in one run
                search = regex(pattern).search
            if not search(instance):
                return [SchemaError("pattern", schema, instance)]
        return EMPTY

    return check


def _bound(keyword, fails):
    def build(compiler, schema, base):
        limit = schema[keyword]

        def check(instance):
            if _is_number(instance) and fails(instance, limit):
                return [SchemaError(keyword, schema, instance)]
            return EMPTY

        return check

    return build


def _size(keyword, kind, fails):
    def build(compiler, schema, base):
        limit = schema[keyword]

        def check(instance):
            if isinstance(instance, kind) and fails(len(instance), limit):
                return [SchemaError(keyword, schema, instance)]
            return EMPTY

        return check

    return build


def _items(compiler, schema, base):
    items = schema["items"]
    if items is False:
        return lambda instance: [SchemaError("items", schema, instance)] if isinstance(instance, list) and instance else EMPTY
    sub = compiler.compile(items, base)

    def check(instance):
        if not isinstance(instance, list):
            return EMPTY
        errors = None
        for index, item in enumerate(instance):
            found = sub(item)
            if found:
                errors = _under(errors, found, index)
        return errors or EMPTY

    return check


def _properties(compiler, schema, base):
    raw = schema["properties"]
    subs: dict = {}  # compiled on first use: a run meets few of the many keys a schema knows

    def check(instance):
        if not isinstance(instance, dict):
            return EMPTY
        errors = None
        # walk the instance's keys, not the schema's: specs set a few of many known keys
        for name, value in instance.items():
            sub = subs.get(name)
            if sub is None:
                if not isinstance(name, str) or name not in raw:
                    continue
                sub = subs[name] = compiler.compile(raw[name], base)
            found = sub(value)
            if found:
                errors = _under(errors, found, name)
        return errors or EMPTY

    return check


def _required(compiler, schema, base):
    names = tuple(schema["required"])

    def check(instance):
        if not isinstance(instance, dict):
            return EMPTY
        return [SchemaError("required", schema, instance, {"missing": n}) for n in names if n not in instance] or EMPTY

    return check


def _pattern_properties(compiler, schema, base):
    subs = tuple(
        (regex(pattern).search, compiler.compile(sub, base)) for pattern, sub in schema["patternProperties"].items()
    )

    def check(instance):
        if not isinstance(instance, dict):
            return EMPTY
        errors = None
        for search, sub in subs:
            for key, value in instance.items():
                if isinstance(key, str) and search(key):
                    found = sub(value)
                    if found:
                        errors = _under(errors, found, key)
        return errors or EMPTY

    return check


def _extras_finder(schema):
    """The keys neither ``properties`` nor ``patternProperties`` cover (as jsonschema finds them)."""
    known = schema.get("properties", {})
    patterns = "|".join(schema.get("patternProperties", {}))
    search = regex(patterns).search if patterns else None

    def extras(instance):
        return [
            key for key in instance
            if key not in known and not (search and isinstance(key, str) and search(key))
        ]

    return extras


def _additional_properties(compiler, schema, base):
    extras = _extras_finder(schema)
    ap = schema["additionalProperties"]
    if ap is True:
        return None
    if ap is False:
        def check(instance):
            if not isinstance(instance, dict):
                return EMPTY
            found = extras(instance)
            if found:
                return [SchemaError("additionalProperties", schema, instance, {"unexpected": found})]
            return EMPTY

        return check
    sub = compiler.compile(ap, base)

    def check_schema(instance):
        if not isinstance(instance, dict):
            return EMPTY
        errors = None
        for key in extras(instance):
            found = sub(instance[key])
            if found:
                errors = _under(errors, found, key)
        return errors or EMPTY

    return check_schema


def _unknown_keys(compiler, schema, base):
    """amldist's own keyword: unlisted keys are warnings where the SDK drops them silently."""
    if schema.get("additionalProperties", True) is not True or schema[UNKNOWN_KEYS] != "warning":
        return None
    extras = _extras_finder(schema)

    def check(instance):
        if not isinstance(instance, dict):
            return EMPTY
        found = extras(instance)
        if found:
            return [SchemaError(UNKNOWN_KEYS, schema, instance, {"unexpected": found}, severity="warning")]
        return EMPTY

    return check


def _property_names(compiler, schema, base):
    sub = compiler.compile(schema["propertyNames"], base)

    def check(instance):
        if not isinstance(instance, dict):
            return EMPTY
        errors = None
        for key in instance:
            found = sub(key)
            if found:
                for error in found:
                    error.params = {**error.params, "property_name": key}
                errors = errors or []
                errors.extend(found)
        return errors or EMPTY

    return check


BUILDERS = (
    ("$ref", _ref),
    ("type", _type),
    ("enum", _enum),
    ("const", _const),
    ("pattern", _pattern),
    ("minimum", _bound("minimum", lambda v, m: v < m)),
    ("maximum", _bound("maximum", lambda v, m: v > m)),
    ("exclusiveMinimum", _bound("exclusiveMinimum", lambda v, m: v <= m)),
    ("exclusiveMaximum", _bound("exclusiveMaximum", lambda v, m: v >= m)),
    ("minLength", _size("minLength", str, lambda n, m: n < m)),
    ("maxLength", _size("maxLength", str, lambda n, m: n > m)),
    ("minItems", _size("minItems", list, lambda n, m: n < m)),
    ("maxItems", _size("maxItems", list, lambda n, m: n > m)),
    ("required", _required),
    ("properties", _properties),
    ("patternProperties", _pattern_properties),
    ("additionalProperties", _additional_properties),
    (UNKNOWN_KEYS, _unknown_keys),
    ("propertyNames", _property_names),
    ("items", _items),
    ("allOf", _all_of),
    ("anyOf", _any_of),
    ("oneOf", _one_of),
    ("not", _not),
    ("if", _if),
)
