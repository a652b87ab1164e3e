"""Schema errors -> Diagnostics with a position, a field name, a stable code and a hint.

Choices made here:
- the shipped schemas use no ``anyOf``/``oneOf`` (tests/validate/test_schema_errors.py holds them
  to it): a choice is an ``if``/``then`` on the mapping's ``type``, so each error already comes
  from the one branch that applies and no branch has to be picked here.
- unknown keys: one diagnostic per key, at the key, with a did-you-mean over the
  mapping's ``properties``. A key another distribution type takes
  (``x-amldist-misplaced-keys``) is "not allowed here", with that key's hint.
- ``x-amldist-unknown-keys: warning`` (``schema_check``): the warning says what azure-ai-ml does
  with the key there (``unknown_key_note``).
- patterns are said in words (``schema_wording``), never as the regular expression.
- hints: the failing subschema's ``x-amldist-hint``, plus a did-you-mean where one is close.
"""

from __future__ import annotations

from amldist.diagnostics import ERROR, WARNING, Diagnostic
from amldist.model.field_paths import field_path
from amldist.model.kinds import COMMAND_COMPONENT, DISTRIBUTED_COMPONENT
from amldist.rules.suggestions import did_you_mean
from amldist.validate.schema_store import HINT, MISPLACED, UNKNOWN_KEYS
from amldist.validate.schema_wording import CODES, choices, describe, show, words_of


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
    """Diagnostics for SchemaErrors, in ``out``.

    ``renamed``: paths of keys already reported as ``non-string-key`` (``rules.string_keys``);
    the schema's complaints about those keys themselves are dropped (one diagnostic per mistake)."""

    def __init__(self, file: str, doc=None, kind=None, renamed=frozenset()):
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
        if kw in ("additionalProperties", UNKNOWN_KEYS):
            known = list(error.schema.get("properties", {}))
            severity = WARNING if kw == UNKNOWN_KEYS else ERROR
            where = field_path(path) or "the document"
            misplaced = error.schema.get(MISPLACED, {})
            for key in error.params.get("unexpected", []):
                if path + (key,) in self.renamed:
                    continue
                if key in misplaced:  # worker_count under pytorch: it belongs to another type
                    drops = severity == WARNING and unknown_key_note(path, self.kind, key) == DROPS
                    self.emit(path + (key,), severity, "unknown-key",
                              f"is not allowed here ({DROPS})" if drops else "is not allowed here", misplaced[key])
                    continue
                guess = did_you_mean(str(key), known)
                text = f"unknown key {key!r} in {where}"
                note = unknown_key_note(path, self.kind, key) if severity == WARNING else None
                if note:
                    text += f" ({note})"
                if guess:
                    tip = guess
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
                guess = did_you_mean(error.instance, [str(w) for w in allowed])
                if guess:
                    tip = _join(hint, guess)
                if kw == "pattern" and allowed:  # a caseless word list written as a pattern
                    code, text = "invalid-value", f"{show(error.instance)} is not one of: {choices(allowed)}"
            key = error.params.get("property_name")  # propertyNames: at the key, not at its mapping
            self.emit(path, ERROR, code, text, tip, at=None if key is None else path + (key,))

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


def _allowed(known) -> str | None:
    if not known or len(known) > 12:
        return None
    return "allowed keys: " + ", ".join(known)


def _join(*parts) -> str | None:
    parts = [p for p in parts if p]
    return "; ".join(parts) if parts else None
