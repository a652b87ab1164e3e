"""The command line a local process runs: ``${{inputs.x}}`` and ``${{outputs.y}}`` filled in
without ever letting a value's shell syntax take effect.

Azure ML pastes each value's text into the command and runs it with a shell. Here each value
goes into the processes' environment instead (``AMLDIST_IN_<n>_<name>``,
``AMLDIST_OUT_<n>_<name>``) and the placeholder becomes a reference to that variable, written
for the quoting it sits in (:mod:`amldist.rules.shell_command` finds the context,
:mod:`amldist.rules.shell_values` decides):

- unquoted (``--msg ${{inputs.m}}``): ``${AMLDIST_IN_0_m}``, split into words as the pasted
  text is on Azure ML (``hello world`` gives two arguments there and here) and matched against
  file names the same way; a data input's or an output's path stays one word
  (``"${AMLDIST_OUT_1_model}"``), as Azure's mount paths have no spaces;
- in double quotes or an unquoted here-document: ``${AMLDIST_IN_0_m}``, one word as on Azure ML;
- in single quotes: ``'"${AMLDIST_IN_0_m}"'`` (close the quote, the variable in double quotes,
  reopen), which gives Azure ML's text for every value without a ``'``; in ``$'...'`` the same
  with ``$'`` reopening;
- in a comment: anything, nothing runs.

In a context amldist cannot prove safe (:mod:`amldist.rules.shell_grammar`: anything but a list of
programs on its allow-list) only a benign value is accepted, written the same way (or pasted as
Azure ML does where no variable can be expanded, such as a quoted here-document; a secret is never
pasted: it is refused there); any other value is refused, naming the input. Where Azure ML's shell
would read a value as more than its text, the run passes the literal text and says so
(``Rendered.warnings``). A value that holds a command substitution inside ``[...]`` is refused
everywhere: every value is also in the environment, where bash arithmetic could reach it by name and would run it.

Literal values are written as Python's ``str()`` writes them (``True``, ``0.01``), which is
what azure-ai-ml sends to the service. ``$[[ ... ]]`` marks an optional part: it is kept
(without the brackets) when every input it names has a value, and dropped otherwise, as Azure
ML does (``amldist.rules.placeholders`` parses the command and resolves the groups).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from amldist.errors import UserError
from amldist.rules import placeholders, secrets, shell_command, shell_values

_REFERENCE = {  # how a variable reference is written in each quoting
    shell_command.SINGLE: "'\"${{{}}}\"'",
    shell_command.ANSI: "'\"${{{}}}\"$'",
}


@dataclass(frozen=True)
class Rendered:
    """The command text for ``sh -c`` and the variables it reads (to add to every process)."""

    command: str
    env: dict[str, str]
    warnings: tuple = ()  # (input, message, hint): where Azure ML would read a value differently


def literal_text(value) -> str:
    """How a literal input value appears in the command (``str()``, as azure-ai-ml sends it)."""
    return str(value)


def variable_name(index: int, source: str, name: str) -> str:
    """``AMLDIST_IN_0_lr``: the index keeps names unique, the port name (dots as ``_``) tells
    readers which value it is and lets secret masking see a secret-looking input name."""
    return f"AMLDIST_{'IN' if source == 'inputs' else 'OUT'}_{index}_{name.replace('.', '_')}"


def render(command: str, values: dict[str, str | None], *, file: str = "the job",
           paths: Collection[str] = ()) -> Rendered:
    """``command`` with every reference replaced by a variable reference (see the module docstring).

    ``values`` maps ``"inputs.<name>"`` / ``"outputs.<name>"`` to text, or to None for an
    optional input left unset; ``paths`` names the references whose values are local paths
    (data inputs, outputs). A required reference without a value, a reference the local
    backend cannot fill and a placeholder in a refused context are each one UserError.
    """
    is_set = {ref.split(".", 1)[1] for ref, value in values.items() if ref.startswith("inputs.") and value is not None}
    text = placeholders.drop_unset_groups(command, is_set, syntax=placeholders.V2)
    refs = placeholders.references(text, placeholders.V2)
    _refuse_other_expressions(text, refs, file)
    found = shell_command.contexts(text, [(r.start, r.end) for r in refs])

    names: dict[str, str] = {}
    env: dict[str, str] = {}
    warnings: list = []
    out, pos = [], 0
    for ref in refs:
        key = f"{ref.source}.{ref.name}"
        value = _value(key, values, file)
        context = found.get(ref.start, shell_command.Context(shell_command.UNPLACED))
        verdict = shell_values.check(key, value, context, is_path=key in paths)
        if verdict.refused:
            raise UserError(f"{file}: {verdict.refused}", hint=verdict.hint)
        if verdict.warning and not any(w[0] == key for w in warnings):
            warnings.append((key, verdict.warning, verdict.hint))
        if key not in names:
            names[key] = variable_name(len(names), ref.source, ref.name)
            env[names[key]] = value
        if _pasted(context) and value and (secrets.is_secret_name(ref.name) or secrets.is_known_secret(value)):
            raise UserError(f"{file}: the command uses {key}, a secret, {context.describe()}, where no variable can "
                            "be expanded: amldist never writes a secret into the command itself",
                            hint="pass it as an argument of a program (python t.py --x \"${{" + key + "}}\")")
        out += [text[pos:ref.start], _reference(names[key], value, context, key in paths)]
        pos = ref.end
    out.append(text[pos:])
    return Rendered("".join(out), env, tuple(warnings))


def _pasted(context) -> bool:
    """Where no variable reference would expand (a quoted here-document, after a backslash...)."""
    quoting = context.quoting
    return quoting not in shell_command.RENDERABLE or (quoting in _REFERENCE and context.enclosing is not None)


def _reference(variable: str, value: str, context, is_path: bool) -> str:
    """The text that stands for the value at ``context`` (see the module docstring)."""
    quoting = context.quoting
    if _pasted(context):
        return value  # benign (checked): the text Azure ML pastes, where no variable would expand
    if quoting in _REFERENCE:
        return _REFERENCE[quoting].format(variable)
    reference = "${" + variable + "}"
    if is_path and quoting == shell_command.UNQUOTED:
        return f'"{reference}"'
    return reference


def _value(key: str, values: dict[str, str | None], file: str) -> str:
    if key not in values:
        raise UserError(
            f"{file}: the command uses ${{{{{key}}}}}, which the local backend cannot fill",
            hint="only ${{inputs.NAME}} and ${{outputs.NAME}} of the job itself are available locally",
        )
    value = values[key]
    if value is None:
        raise UserError(
            f"{file}: the command needs ${{{{{key}}}}} but that input has no value",
            hint=f"pass --input {key.split('.', 1)[1]}=VALUE, or wrap the option in $[[ ... ]] to make it optional",
        )
    # The value itself is never shown: it may be a secret.
    if "\0" in value:
        raise UserError(f"{file}: the value of {key} holds a NUL character, which no process environment can carry")
    if shell_values.SUBSCRIPT_COMMAND.search(value):
        raise UserError(
            f"{file}: the value of {key} holds a command substitution inside [...], which bash would run "
            "if the script used the value in arithmetic", hint="pass the value without $( or ` inside brackets",
        )
    return value


def _refuse_other_expressions(text: str, refs: list, file: str) -> None:
    """``${{parent.inputs.x}}``, ``${{name}}``...: Azure ML expressions that are not this job's
    ports (the placeholder parser reads them as literal text)."""
    taken = {i for r in refs for i in range(r.start, r.end)}
    for match in re.finditer(re.escape("${{"), text):
        if match.start() not in taken:
            end = text.find("}}", match.start())
            expression = text[match.start(): end + 2 if end >= 0 else match.start() + 20]
            raise UserError(
                f"{file}: the command uses {expression}, which the local backend cannot fill",
                hint="only ${{inputs.NAME}} and ${{outputs.NAME}} of the job itself are available locally",
            )
