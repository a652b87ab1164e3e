"""Schema errors -> Diagnostics with a position, a field name, a code and a hint.

Choices made here:
- ``anyOf``/``oneOf``: when the instance is a mapping with ``type`` and the
  branches constrain ``type`` (the distribution union), only the errors of the
  branch whose ``type`` matches are shown; when no branch's ``type`` matches, one
  error on ``type`` lists the allowed words with a did-you-mean. Otherwise the
  branches of the wrong YAML type are dropped and the branch with the fewest
  errors is shown (one "expected a string or a mapping" when none is left).
- unknown keys: one diagnostic per key, at the key, with a did-you-mean over the
  mapping's ``properties``. A warning (``x-amldist-unknown-keys``) says what
  azure-ai-ml does with the key there (``unknown_key_note``).
- hints: the failing subschema's ``x-amldist-hint`` (an anyOf/oneOf's own hint
  goes with the errors about the union itself, not with every error inside the
  branch shown), plus a did-you-mean where one is close.
"""

from __future__ import annotations

from amldist.diagnostics import ERROR, WARNING, Diagnostic
from amldist.spec.kinds import COMMAND_COMPONENT, DISTRIBUTED_COMPONENT
from amldist.validate.evaluator import HINT, UNKNOWN_KEYS, is_valid
from amldist.spec.field_paths import field_path
from amldist.spec.suggestions import suggest
from amldist.validate.messages import CODES, choices, describe, show, type_words, words_of


# What azure-ai-ml 1.35.2 does with a key it does not know, where amldist only warns (checked by
# loading a spec with such keys and serialising its REST body): a component's distribution and
# resources are loaded with unknown=INCLUDE but dumped field by field, so the key is lost; a v2
# component's top level and a pipeline's settings keep it and send it in the REST body; a legacy
# spec (InternalComponent) keeps it on the object but its REST body is dumped field by field, except
# for the keys InternalComponent itself has as attributes (LEGACY_SENT), which it sends as written.
# tests/schemas/test_real_forms.py checks these against azure-ai-ml.
DROPS = "azure-ai-ml drops it"
SENDS = "azure-ai-ml does not check it and sends it on as written"
LEGACY_TOP = "azure-ai-ml does not check it and leaves it out of what it sends"
LEGACY_SENT = frozenset(
    "successful_return_code environment_variables command scope hemera hdinsight parallel starlite "
    "ae365exepool datatransfer aether".split()
)


def unknown_key_note(path, kind=None, key=None) -> str | None:
    """What azure-ai-ml does with an unknown ``key`` in the mapping at ``path``; None where not known."""
    last = path[-1] if path else None
    if not path:
        return LEGACY_TOP if kind == DISTRIBUTED_COMPONENT and key not in LEGACY_SENT else SENDS
    if last in ("distribution", "resources"):
        return DROPS
    if last == "settings" and len(path) == 1:
        return SENDS
    if last == "component" and len(path) == 3 and path[0] == "jobs":  # a pipeline step's inline component
        return SENDS
    return None


def in_component(path, kind) -> bool:
    """Whether the mapping at ``path`` is part of a component rather than a job: a command
    component's own, or a pipeline step's inline ``component:``."""
    return (len(path) == 1 and kind == COMMAND_COMPONENT) or (len(path) >= 2 and path[-2] == "component")


class Reporter:
    """``renamed``: paths of keys already reported as ``non-string-key`` (``rules.string_keys``);
    the schema's complaints about those keys themselves are dropped (one diagnostic per mistake)."""

    def __init__(self, registry, file: str, doc=None, kind=None, renamed=frozenset()):
        self.registry = registry
        self.file = file
        self.doc = doc
        self.kind = kind
        self.renamed = renamed
        self.out: list[Diagnostic] = []

    # -- entry point --
    def add_errors(self, errors, base_path=(), hint=None) -> None:
        for error in errors:
            self.add(error, base_path + error.path, hint)

    def add(self, error, path, inherited_hint=None) -> None:
        if self.renamed and path + (error.params.get("property_name"),) in self.renamed:
            return  # propertyNames refused a key that was not a string: already reported
        hint = (error.schema.get(HINT) if isinstance(error.schema, dict) else None) or inherited_hint
        kw = error.keyword
        if kw in ("anyOf", "oneOf") and error.context is not None:
            self.add_union(error, path, hint)
        elif kw in ("additionalProperties", UNKNOWN_KEYS):
            known = list(error.schema.get("properties", {}))
            severity = WARNING if kw == UNKNOWN_KEYS else ERROR
            where = field_path(path) or "the document"
            for key in error.params.get("unexpected", []):
                if path + (key,) in self.renamed:
                    continue
                guess = suggest(str(key), known)
                text = f"unknown key {key!r} in {where}"
                note = unknown_key_note(path, self.kind, key) if severity == WARNING else None
                if note:
                    text += f" ({note})"
                if guess:
                    tip = f"did you mean {guess!r}?"
                else:  # a warning lists what is allowed; an error may carry the schema's own hint
                    tip = _allowed(known) if severity == WARNING else hint or _allowed(known)
                self.emit(path + (key,), severity, "unknown-key", text, tip)
        elif kw == "required":
            missing = error.params["missing"]
            where = field_path(path)
            text = f"missing required key {missing!r}" + (f" in {where}" if where else "")
            self.emit(path + (missing,), ERROR, "missing-key", text, hint, at=path)
        elif kw in ("not", "false") and error.value in ({}, True, False) and path and isinstance(path[-1], str):
            # a key closed with `not: {}` (worker_count under pytorch): in a component's distribution
            # a warning, like the unknown keys there, since azure-ai-ml drops it
            if path[-2:-1] == ("distribution",) and in_component(path[:-1], self.kind):
                self.emit(path, WARNING, "unknown-key", f"is not allowed here ({DROPS})", hint)
            else:
                self.emit(path, ERROR, "unknown-key", "is not allowed here", hint)
        else:
            tip, code, text = hint, CODES.get(kw, "invalid-value"), describe(error)
            if kw in ("enum", "const", "pattern"):
                allowed = words_of(error.schema)
                guess = suggest(error.instance, [str(w) for w in allowed])
                if guess:
                    tip = _join(hint, f"did you mean {guess!r}?")
                if kw == "pattern" and allowed:  # a caseless word list written as a pattern
                    code, text = "invalid-value", f"{show(error.instance)} is not one of: {choices(allowed)}"
            key = error.params.get("property_name")  # propertyNames: at the key, not at its mapping
            self.emit(path, ERROR, code, text, tip, at=None if key is None else path + (key,))

    def add_union(self, error, path, hint) -> None:
        branches = error.value
        context = error.context
        instance = error.instance
        base = error.params.get("base", "")
        if isinstance(instance, dict) and "type" in instance:
            picked = self.pick_by_discriminator(branches, base, instance["type"])
            if picked is not None:
                index, words, type_hint = picked
                if index is not None:
                    self.add_errors(context[index], path)
                    return
                guess = suggest(instance["type"], [str(w) for w in words])
                tip = _join(type_hint or hint, f"did you mean {guess!r}?" if guess else None)
                self.emit(path + ("type",), ERROR, "invalid-value",
                          f"{show(instance['type'])} is not one of: {choices(words)}", tip)
                return
        candidates = [i for i, errs in enumerate(context) if not _root_type_error(errs)]
        if not candidates:
            expected = []
            for errs in context:
                for e in errs:
                    if e.keyword == "type" and not e.path:
                        names = [e.value] if isinstance(e.value, str) else e.value
                        expected.extend(n for n in names if n not in expected)
            self.emit(path, ERROR, "wrong-type", f"expected {type_words(expected)}, got {show(instance)}", hint)
            return
        if all(_only_root_value_errors(context[i]) for i in candidates):
            words = [w for i in candidates for e in context[i] for w in words_of(e.schema)]
            if words:
                guess = suggest(instance, [str(w) for w in words])
                tip = _join(f"did you mean {guess!r}?" if guess else None, hint)
                self.emit(path, ERROR, "invalid-value", f"{show(instance)} is not one of: {choices(words)}", tip)
                return
        best = min(candidates, key=lambda i: (sum(e.severity == ERROR for e in context[i]), i))
        self.add_errors(context[best], path)

    def pick_by_discriminator(self, branches, base, value):
        """(branch index or None, allowed words, hint) when the branches constrain ``type``; else None."""
        found_any = False
        words: list = []
        type_hint = None
        for index, branch in enumerate(branches):
            type_schema, type_base = self._type_schema(branch, base, depth=0)
            if type_schema is None:
                continue
            found_any = True
            type_hint = type_hint or (type_schema.get(HINT) if isinstance(type_schema, dict) else None)
            words.extend(w for w in words_of(type_schema) if w not in words)
            check = self.registry.compiler.compile(type_schema, type_base)
            if is_valid(check(value)):
                return index, words, type_hint
        return (None, words, type_hint) if found_any else None

    def _type_schema(self, schema, base, depth):
        if depth > 20 or not isinstance(schema, dict):
            return None, base
        props = schema.get("properties")
        if isinstance(props, dict) and "type" in props:
            return props["type"], base
        if isinstance(schema.get("$ref"), str):
            target, target_base = self.registry.resolve(base, schema["$ref"])
            found = self._type_schema(target, target_base, depth + 1)
            if found[0] is not None:
                return found
        for sub in schema.get("allOf", ()):
            found = self._type_schema(sub, base, depth + 1)
            if found[0] is not None:
                return found
        return None, base

    # -- output --
    def emit(self, path, severity, code, text, hint=None, at=None) -> None:
        line, col = self.doc.where(at if at is not None else path) if self.doc is not None else (0, 0)
        name = field_path(path)
        if not name or text.startswith(("unknown key", "missing required", "key ")):
            message = text
        elif text.startswith("is "):
            message = f"{name} {text}"
        else:
            message = f"{name}: {text}"
        self.out.append(Diagnostic(self.file, line, col, severity, code, message, hint, name or None))


def _root_type_error(errors) -> bool:
    return any(e.keyword == "type" and not e.path for e in errors)


def _only_root_value_errors(errors) -> bool:
    return bool(errors) and all(not e.path and e.keyword in ("const", "enum", "pattern") for e in errors)


def _allowed(known) -> str | None:
    if not known or len(known) > 12:
        return None
    return "allowed keys: " + ", ".join(known)


def _join(*parts) -> str | None:
    parts = [p for p in parts if p]
    return "; ".join(parts) if parts else None
