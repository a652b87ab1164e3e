"""A small JSON Schema (draft 2020-12) evaluator for the keyword subset amldist's schemas use.

Why not ``jsonschema``: importing it costs ~0.1 s (``python -X importtime``), half the
budget of ``amldist validate one.yaml`` (0.15x of importing azure.ai.ml, ~0.2 s). The schemas use a fixed subset of keywords (see
KEYWORDS); each schema is compiled once per process into a tree of closures.
A schema using a validation keyword outside the subset is refused when it is
compiled (SchemaCompileError), so the evaluator can never silently disagree with
a full implementation; ``tests/validate`` checks it against jsonschema itself.

Errors mirror jsonschema's ``iter_errors``: one ``SchemaError`` per failing
keyword, with the instance path where jsonschema puts it (``required``,
``additionalProperties: false`` and ``propertyNames`` report at the object), and
``anyOf``/``oneOf`` as one error whose ``context`` keeps every branch's errors
(``report.py`` picks the branch to show). The amldist keyword
``x-amldist-unknown-keys: warning`` adds warnings (severity "warning") that do not
make an instance invalid.
"""

from __future__ import annotations

import re

KEYWORDS = frozenset(
    "$schema $id $ref $defs type enum const pattern minimum maximum exclusiveMinimum exclusiveMaximum "
    "minLength maxLength minItems maxItems items properties required additionalProperties "
    "patternProperties propertyNames anyOf oneOf allOf not if then else".split()
)
# Validation keywords of 2020-12 outside the subset: refused rather than ignored.
UNSUPPORTED = frozenset(
    "prefixItems contains minContains maxContains uniqueItems dependentRequired dependentSchemas "
    "dependencies unevaluatedProperties unevaluatedItems multipleOf minProperties maxProperties "
    "$dynamicRef $dynamicAnchor $recursiveRef $recursiveAnchor $anchor additionalItems".split()
)
UNKNOWN_KEYS = "x-amldist-unknown-keys"
HINT = "x-amldist-hint"

EMPTY: tuple = ()


class SchemaCompileError(Exception):
    """A schema this evaluator cannot run (a bad $ref, an unsupported keyword)."""


class SchemaError:
    """One failing keyword at one place of the instance.

    ``path``: instance path (tuple of keys and indices); ``keyword``: the failing
    keyword; ``schema``: the subschema holding it (for title and x-amldist-hint);
    ``value``: the keyword's value (what was expected); ``instance``: what was
    found; ``params``: keyword details (missing/unexpected keys); ``context``:
    for anyOf/oneOf, one list of errors per branch; ``severity``: "error" or
    "warning" (x-amldist-unknown-keys).
    """

    __slots__ = ("path", "keyword", "schema", "value", "instance", "params", "context", "severity")

    def __init__(self, keyword, schema, instance, params=None, context=None, severity="error"):
        self.path: tuple = ()
        self.keyword = keyword
        self.schema = schema
        self.value = schema.get(keyword) if isinstance(schema, dict) else schema
        self.instance = instance
        self.params = params or {}
        self.context = context
        self.severity = severity

    def __repr__(self) -> str:
        return f"SchemaError({self.keyword!r} at {self.path!r}: {self.message})"

    @property
    def message(self) -> str:
        from amldist.validate.messages import describe

        return describe(self)


def _under(errors, found, key):
    """``errors`` (None before the first) extended by a child's ``found`` errors, placed under ``key``.

    Called only when a child failed, so the error-free hot path pays nothing for it.
    """
    for error in found:
        error.path = (key,) + error.path
    if errors is None:
        return list(found)
    errors.extend(found)
    return errors


# ---- JSON semantics of types and equality (as jsonschema defines them) ----

def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


TYPE_CHECKS = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "integer": _is_integer,
}


def json_equal(one, two) -> bool:
    """Equality where True != 1 and 1 == 1.0, recursively (JSON Schema's enum/const)."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, (list, tuple)) and isinstance(two, (list, tuple)):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


_regex_cache: dict = {}


def regex(pattern: str):
    compiled = _regex_cache.get(pattern)
    if compiled is None:
        try:
            compiled = _regex_cache[pattern] = re.compile(pattern)
        except re.error as exc:
            raise SchemaCompileError(f"bad pattern {pattern!r}: {exc}") from None
    return compiled


# ---- the compiler ----

class Compiler:
    """Compiles schemas of one Registry; each subschema is compiled once (by identity)."""

    def __init__(self, registry):
        self.registry = registry
        self._compiled: dict = {}

    def compile(self, schema, base: str):
        if schema is True:
            return _ok
        if schema is False:
            return lambda instance: [SchemaError("false", False, instance)]
        if not isinstance(schema, dict):
            raise SchemaCompileError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
        key = id(schema)
        found = self._compiled.get(key)
        if found is not None:
            return found
        if isinstance(schema.get("$id"), str):
            base = self.registry.join(base, schema["$id"])
        bad = UNSUPPORTED.intersection(schema)
        if bad:
            raise SchemaCompileError(f"keyword(s) {sorted(bad)} are outside amldist's schema subset")
        from amldist.validate import keywords

        checks = [
            build(self, schema, base)
            for name, build in keywords.BUILDERS
            if name in schema
        ]
        checks = [c for c in checks if c is not None]
        if not checks:
            fn = _ok
        elif len(checks) == 1:
            fn = checks[0]
        else:
            def fn(instance, _checks=tuple(checks)):
                errors = None
                for check in _checks:
                    found = check(instance)
                    if found:
                        if errors is None:
                            errors = list(found)
                        else:
                            errors.extend(found)
                return errors or EMPTY
        self._compiled[key] = fn
        return fn


def _ok(instance):
    return EMPTY


def is_valid(errors) -> bool:
    """No error of severity "error" (warnings do not count)."""
    if not errors:
        return True
    for error in errors:
        if error.severity == "error":
            return False
    return True
