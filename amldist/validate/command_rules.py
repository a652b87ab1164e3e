"""Placeholders and optional groups in commands.

- ``undeclared-input`` / ``undeclared-output``: a placeholder names an input or
  output the spec does not declare;
- ``optional-input-outside-group``: an ``optional: true`` input used outside
  ``$[[ ... ]]`` (v2) or ``[ ... ]`` (legacy): the command would break when the
  input is not given;
- ``optional-input-default-outside-group`` (warning): the same for an optional
  input with a ``default`` (not null): Azure ML fills the default when no value is
  given, so the command always gets one (azure-ai-ml and the service accept it;
  the real-world samples do it). Warned because ``optional`` then has no effect.
``optional`` is read as azure-ai-ml reads it (``amldist.spec.booleans``: ``'true'``,
``yes``, ``1`` ... count). Names may be dotted in v2 (``${{inputs.group.x}}``, a
flattened parameter group) and are compared with the declared keys exactly.
Commands are parsed by ``amldist.spec.placeholders`` (shared with convert); its
syntax errors (``unbalanced-bracket``, ``malformed-placeholder``, ``mixed-syntax``)
are reported with its codes. A command without any optional group and with only
well-formed placeholders (most of them) takes a regex fast path that finds the
same references (``tests/validate`` checks both paths agree).
"""

from __future__ import annotations

import re

from amldist.diagnostics import ERROR, WARNING
from amldist.spec.booleans import is_optional
from amldist.validate.messages import suggest
from amldist.validate.rules import dotted

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_V2_NAME = _NAME + r"(?:\." + _NAME + r")*"  # as amldist.spec.placeholders: v2 names may be dotted (parameter groups)
_FAST = {
    False: (re.compile(r"\$\{\{\s*(inputs|outputs)\.(" + _V2_NAME + r")\s*\}\}"), re.compile(r"\$\{\{\s*(?:inputs|outputs)\.")),
    True: (re.compile(r"\{(inputs|outputs)\.(" + _NAME + r")\}"), re.compile(r"\{(?:inputs|outputs)\.")),
}


def optional_names(inputs: dict) -> set:
    """Declared inputs whose ``optional:`` azure-ai-ml reads as true."""
    return {name for name, spec in inputs.items() if is_optional(spec)}


def has_default(spec) -> bool:
    return isinstance(spec, dict) and spec.get("default") is not None


def fast_references(command: str, legacy: bool):
    """[(source, name, start, end)] outside any group, or None when the full parser is needed."""
    if ("[" in command or "]" in command) if legacy else ("$[[" in command):
        return None
    if legacy and ("${{" in command or "$[[" in command):
        return None  # mixed syntax: let the parser report it
    full, start = _FAST[legacy]
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in full.finditer(command)]
    if len(found) != len(start.findall(command)):
        return None  # a malformed reference: the parser says where
    return found


def check_command(ctx, path, command, inputs: dict | None, outputs: dict | None, *, legacy: bool = False) -> None:
    """Placeholders and optional groups of one command (``None``: a malformed section, not checked)."""
    if isinstance(command, list):  # some legacy specs write the arguments as a list
        command = " ".join(str(part) for part in command)
    if not isinstance(command, str) or "{" not in command:
        return
    if not legacy and "${{" not in command and "$[[" not in command:
        return  # no v2 placeholder or group: nothing to check
    fast = fast_references(command, legacy)
    if fast is not None:
        refs = [(*ref, False) for ref in fast]
    else:
        from amldist.spec import placeholders as ph  # imported only for commands that need it

        try:
            refs = [(r.source, r.name, r.start, r.end, r.in_group)
                    for r in ph.references(command, ph.LEGACY if legacy else ph.V2)]
        except ph.PlaceholderSyntaxError as exc:
            needle = command[exc.offset: exc.offset + 3].strip() or None
            ctx.emit(path, ERROR, exc.code, f"{dotted(path)}: {exc.reason}", exc.hint,
                     position=ctx.locate(path, needle) if needle else None)
            return
    optional = optional_names(inputs or {})
    group = "[ ... ]" if legacy else "$[[ ... ]]"
    seen = set()
    for source, name, start, end, in_group in refs:
        if (source, name) in seen:
            continue
        seen.add((source, name))
        names = inputs if source == "inputs" else outputs
        if names is None:
            continue
        text = command[start:end]
        if name not in names:
            guess = suggest(name, list(names))
            hint = f"did you mean {guess!r}?" if guess else f"declare {name!r} under {source}:"
            ctx.emit(path, ERROR, f"undeclared-{source[:-1]}",
                     f"{dotted(path)} uses {text} but {source} declares no {name!r}", hint,
                     position=ctx.locate(path, text))
        elif source == "inputs" and name in optional and not in_group:
            example = f"[--{name} {text}]" if legacy else f"$[[--{name} {text}]]"
            where = f"{dotted(path)} uses optional input {name!r} outside an optional group {group}"
            if has_default(names[name]):
                ctx.emit(path, WARNING, "optional-input-default-outside-group",
                         f"{where}; its default fills it when no value is given",
                         f"the argument is always passed; to let a caller leave it out wrap it, e.g. {example}, "
                         "or drop 'optional: true'", position=ctx.locate(path, text))
            else:
                ctx.emit(path, ERROR, "optional-input-outside-group", where,
                         f"wrap the argument, e.g. {example}, or make the input required",
                         position=ctx.locate(path, text))
