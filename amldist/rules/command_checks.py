"""What is wrong with a command line against the inputs and outputs it may use: the one rule.

The validator (which adds the field and the file position), the v2 builders and the legacy
builder / ``convert`` (which raise the first error) all call :func:`command_findings`, so a
command gets the same answer from each of them:

- the parser's syntax errors (``unbalanced-bracket``, ``malformed-placeholder``, ``mixed-syntax``,
  see :mod:`amldist.rules.placeholders`);
- ``legacy-placeholder``: ``{inputs.x}`` in an ML v2 command (the legacy syntax, which Azure ML
  passes through literally);
- ``undeclared-input`` / ``undeclared-output``: a placeholder names an input or output that is
  not declared (with a did-you-mean);
- ``optional-input-outside-group``: an ``optional`` input (as azure-ai-ml reads ``optional:``)
  used outside ``$[[ ... ]]`` (v2) or ``[ ... ]`` (legacy): the command breaks when it is not given;
- ``optional-input-default-outside-group`` (warning): the same for an optional input with a
  ``default``: Azure ML fills the default, so the argument is always passed and ``optional``
  has no effect (azure-ai-ml and the service accept it).

A command without any optional group and with only well-formed placeholders (most of them)
takes a regex fast path that finds the same references as the parser (a test checks both
agree). Standard library only: the validator's start-up depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from amldist.rules.booleans import is_optional
from amldist.rules.placeholder_patterns import LEGACY_REF, LEGACY_START, V2_REF, V2_START
from amldist.rules.suggestions import suggest

ERROR = "error"
WARNING = "warning"

_FAST = {False: (V2_REF, V2_START), True: (LEGACY_REF, LEGACY_START)}  # the parser's own patterns


@dataclass(frozen=True)
class CommandFinding:
    code: str
    severity: str  # ERROR or WARNING
    message: str  # without the field: callers put "command" or the field path before it
    hint: str | None
    offset: int  # 0-based offset into the command text
    text: str | None = None  # the reference (or excerpt) the finding is about, to locate it

    def without_position(self) -> str:
        """The message for callers that have no file position to show (builders, convert)."""
        return f"{self.message} (at offset {self.offset} of the command)"


@lru_cache(maxsize=512)  # the rules read each command twice, and a spec's steps and jobs repeat commands
def fast_references(command: str, legacy: bool):
    """((source, name, start, end), ...) outside any group, or None when the full parser is needed."""
    if ("[" in command or "]" in command) if legacy else ("$[[" in command):
        return None
    if legacy and ("${{" in command or "$[[" in command):
        return None  # mixed syntax: let the parser report it
    full, start = _FAST[legacy]
    found = tuple((m.group(1), m.group(2), m.start(), m.end()) for m in full.finditer(command))
    if len(found) != len(start.findall(command)):
        return None  # a malformed reference: the parser says where
    return found


def command_findings(command, inputs, outputs, *, legacy: bool = False) -> list[CommandFinding]:
    """The findings for one command (a list of arguments is joined with spaces, as legacy specs
    allow). ``inputs``/``outputs`` None: that section is malformed, its names are not checked."""
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if not isinstance(command, str) or ("{" not in command and "$[[" not in command):
        return []  # no placeholder and no v2 group: nothing to check
    findings: list[CommandFinding] = []
    if not legacy:
        findings += _stray_legacy(command)
        if "${{" not in command and "$[[" not in command:
            return findings
    refs = _references(command, legacy, findings)
    if refs is None:
        return findings
    optional = {name for name, spec in (inputs or {}).items() if is_optional(spec)}
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
            declared = ", ".join(sorted(names)) or "none"
            hint = f"did you mean {guess!r}?" if guess else f"declare {name!r} under {source} (declared: {declared})"
            findings.append(CommandFinding(f"undeclared-{source[:-1]}", ERROR,
                                           f"uses {text!r} but {source} declares no {name!r}", hint, start, text))
        elif source == "inputs" and name in optional and not in_group:
            example = f"[--{name} {text}]" if legacy else f"$[[--{name} {text}]]"
            where = f"uses optional input {name!r} outside an optional group {group}"
            wrap, wrap_argument = f"wrap it, e.g. {example}", f"wrap the argument, e.g. {example}"
            brackets = None if legacy else plain_brackets(command, start, end)
            if brackets:  # the legacy group syntax: say why it is not a group here
                example = "$[" + brackets + "]"
                wrap = wrap_argument = f"write {example} instead"
                where = (f"uses optional input {name!r} inside {brackets!r}, which an ML v2 command passes on "
                         f"as text: v2 writes an optional group {group}")
            spec = names[name]
            if isinstance(spec, dict) and spec.get("default") is not None:
                findings.append(CommandFinding(
                    "optional-input-default-outside-group", WARNING,
                    f"{where}; its default fills it when no value is given",
                    f"the argument is always passed; to let a caller leave it out {wrap}, "
                    "or drop 'optional: true'", start, text))
            else:
                findings.append(CommandFinding("optional-input-outside-group", ERROR, where,
                                               f"{wrap_argument}, or make the input required",
                                               start, text))
    return findings


@lru_cache(maxsize=512)  # a pure function of the text, as fast_references
def _stray_legacy(command: str) -> tuple[CommandFinding, ...]:
    """``legacy-placeholder``: a ``{inputs.x}`` in an ML v2 command, with the v2 form to write."""
    from amldist.rules import placeholders as ph

    stray = ph.stray_legacy_reference(command)
    if not stray:
        return ()
    source, name = stray.groups()
    v2 = f"${{{{{source}.{name}}}}}"
    hint = f"in an ML v2 command write {v2}"
    group = plain_brackets(command, stray.start(), stray.end())
    if group:  # a legacy optional group: v2 writes it $[[ ... ]]
        hint += f", and an optional group $[[ ... ]]: {'$[' + group.replace(stray.group(0), v2) + ']'}"
    return (CommandFinding("legacy-placeholder", ERROR, f"{stray.group(0)!r} is the legacy placeholder syntax", hint,
                           stray.start(), stray.group(0)),)


def _references(command: str, legacy: bool, findings: list):
    """[(source, name, start, end, in_group)], or None after adding the parser's syntax error."""
    fast = fast_references(command, legacy)
    if fast is not None:
        return [(*ref, False) for ref in fast]
    from amldist.rules import placeholders as ph  # the parser, only for commands that need it

    try:
        return [(r.source, r.name, r.start, r.end, r.in_group)
                for r in ph.references(command, ph.LEGACY if legacy else ph.V2)]
    except ph.PlaceholderSyntaxError as exc:  # located by what is written there, not by the first "${{"
        findings.append(CommandFinding(exc.code, ERROR, exc.reason, exc.hint, exc.offset, exc.written.strip() or None))
        return None


def plain_brackets(command: str, start: int, end: int) -> str | None:
    """The ``[ ... ]`` around the reference at ``start:end`` in an ML v2 command, or None.

    ML v2 reads plain brackets as text (only ``$[[ ... ]]`` is an optional group), so a
    ``[--x ${{inputs.x}}]`` moved from a legacy spec passes the brackets on. Shell tests
    (``[[ ... ]]``) and real ``$[[`` groups are not such brackets.
    """
    opening = command.rfind("[", 0, start)
    closing = command.find("]", end)
    if opening < 0 or closing < 0 or "]" in command[opening:start] or "[" in command[end:closing]:
        return None
    if command[opening - 1: opening] in ("[", "$") or command[closing + 1: closing + 2] == "]":
        return None
    return command[opening: closing + 1]


def shell_findings(command, inputs) -> list[CommandFinding]:
    """Warnings about where the command's shell reads each input (:mod:`amldist.rules.shell_values`,
    the rule the local backend applies): a placeholder outside the contexts amldist proves safe
    (``shell-context``), the code of an interpreter (``interpreter-code``), and a default or value
    written in the spec that Azure ML's shell would read as more than its text
    (``shell-divergence``) or that a local run refuses (``shell-value``). One finding per input.

    The findings depend on the command's text and on the value written for each input it reads, and
    nothing else: they are kept for those (jobs and steps that share a command are analysed once)."""
    if not isinstance(command, str) or "${{" not in command or not isinstance(inputs, dict):
        return []
    placed = _placeholders(command)
    if placed is None:
        return []  # command_findings reports the syntax error
    text, every = placed
    read = dict.fromkeys(name for _, _, source, name in every if source == "inputs" and name in inputs)
    return list(_shell_findings(text, every, tuple((name, _literal_value(inputs[name])) for name in read)))


@lru_cache(maxsize=512)
def _placeholders(command: str):
    """(text, ((start, end, source, name), ...)): the text the shell reads, every group kept and its brackets
    removed, and every placeholder in it; None for a placeholder syntax error."""
    fast = fast_references(command, False) if "$[[" not in command else None
    if fast is not None:  # no optional group: the text as written, the references by the parser's own patterns
        return command, tuple((start, end, source, name) for source, name, start, end in fast)
    from amldist.rules import placeholders as ph

    try:
        text = ph.drop_unset_groups(command, lambda ref: True, ph.V2)  # every group kept, brackets removed
        return text, tuple((r.start, r.end, r.source, r.name) for r in ph.references(text, ph.V2))
    except ph.PlaceholderSyntaxError:
        return None


@lru_cache(maxsize=512)
def _shell_findings(text: str, every: tuple, values: tuple) -> tuple[CommandFinding, ...]:
    """shell_findings for ``text``'s placeholders ``every`` and ``values``: ((input name, the value written in
    the spec or None), ...) for each declared input the text reads."""
    from amldist.rules import shell_command, shell_grammar, shell_values

    # the grammar reads every placeholder (an output's too); the findings are about the inputs
    found = shell_command.contexts(text, [(start, end) for start, end, _, _ in every], quoting=False)
    value_of = dict(values)
    findings: dict[str, CommandFinding] = {}
    for start, end, source, name in every:
        if source != "inputs" or name not in value_of or name in findings:
            continue
        key, written = f"inputs.{name}", text[start:end]
        context = found.get(start, shell_command.Context(shell_command.UNPLACED))
        if context.proven_safe() and value_of[name] is None:
            continue  # no value written in the spec, and any value is safe here: nothing to say
        code_of_python = context.role == shell_grammar.INTERPRETER_CODE
        finding = None if code_of_python else _value_finding(key, value_of[name], context, written)
        warning = shell_values.context_warning("${{" + key + "}}", context)
        if finding is None and warning:
            code = "interpreter-code" if code_of_python else "shell-context"
            hint = shell_values.INTERPRETER_HINT if code_of_python else (
                f"pass it as an argument of a program (python t.py --{name} \"{written}\")")
            finding = CommandFinding(code, WARNING, warning, hint, start, written)
        if finding is not None:
            findings[name] = finding
    return tuple(findings.values())


def _value_finding(key: str, value, context, written: str) -> CommandFinding | None:
    if value is None:
        return None
    from amldist.rules import shell_values

    verdict = shell_values.check(key, value, context)
    if verdict.refused:
        return CommandFinding("shell-value", WARNING, f"{key}'s value in the spec: {verdict.refused}; a local run "
                              "refuses it, and on Azure ML its shell characters would run as code",
                              verdict.hint, 0, written)
    if verdict.diverges:
        return CommandFinding("shell-divergence", WARNING, verdict.warning, verdict.hint, 0, written)
    return None


def _literal_value(spec) -> str | None:
    """The text a literal input gives the command (its value, else its default), as azure-ai-ml
    writes it (``str()``); None for data inputs and unset ones."""
    from amldist.model.kinds import binds_path

    if isinstance(spec, dict):
        if "path" in spec or binds_path(spec.get("type")):
            return None
        spec = spec.get("value", spec.get("default"))
    if spec is None or isinstance(spec, (dict, list)) or "${{" in str(spec):  # a binding, not a value
        return None
    return str(spec)
