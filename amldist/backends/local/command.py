"""The command line a local process runs: ``${{inputs.x}}`` and ``${{outputs.y}}`` filled in
without ever letting a value run a command.

Azure ML pastes each value's text into the command and runs it with a shell. Here each value
goes into the processes' environment instead (``AMLDIST_IN_<n>_<name>``,
``AMLDIST_OUT_<n>_<name>``) and the placeholder becomes a reference to that variable, written
for the quoting context it sits in (:mod:`amldist.rules.shell_command` finds the context):

- unquoted (``--msg ${{inputs.m}}``): ``${AMLDIST_IN_0_m}``, split into words as the pasted
  text is on Azure ML (``hello world`` gives two arguments there and here) and matched against
  file names the same way; a data input's or an output's path stays one word
  (``"${AMLDIST_OUT_1_model}"``), as Azure's mount paths have no spaces;
- in double quotes or an unquoted here-document: ``${AMLDIST_IN_0_m}``, one word as on Azure ML;
- in a comment: anything, nothing runs.

A variable's value is never parsed as shell code again, so ``$(...)``, backticks, quotes, ``;``
and newlines in a value stay text. Contexts where that cannot be guaranteed, or where a
variable would not give Azure ML's text, are refused with an error naming the input
(``'...'``, ``$'...'``, backticks, ``${...}``, arithmetic, ``[[ ]]``, a quoted here-document, a
literal value as the program name, an argument of ``eval``/``sh -c``/``let``). A value that
holds a command substitution inside ``[...]`` is refused too: bash would run it if the script
ever used the value in arithmetic (``N=${{inputs.n}}; echo $((N+1))``), which no context check
can follow. One visible difference from Azure ML remains, on purpose: a value in an assignment
(``X=${{inputs.m}}``) is the whole value here, where Azure ML would run its second word.

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
from amldist.rules import placeholders, shell_command

# "a[$(cmd)]" or "a[`cmd`]": what bash arithmetic would run when it reads the value as a name.
_SUBSCRIPT_COMMAND = re.compile(r"\[[^\]]*(\$\(|`)")


@dataclass(frozen=True)
class Rendered:
    """The command text for ``sh -c`` and the variables it reads (to add to every process)."""

    command: str
    env: dict[str, str]


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
    out, pos = [], 0
    for ref in refs:
        key = f"{ref.source}.{ref.name}"
        value = _value(key, values, file)
        kind = found.get(ref.start, "unplaced")
        is_path = key in paths
        if kind not in shell_command.SAFE and not (kind == shell_command.COMMAND_NAME and is_path):
            raise UserError(
                f"{file}: the command uses ${{{{{key}}}}} {shell_command.REFUSED.get(kind, kind)}; "
                "amldist cannot pass a value there safely", hint=shell_command.SAFE_HINT.replace("NAME", ref.name),
            )
        if key not in names:
            names[key] = variable_name(len(names), ref.source, ref.name)
            env[names[key]] = value
        reference = "${" + names[key] + "}"
        if is_path and kind in (shell_command.UNQUOTED, shell_command.COMMAND_NAME):
            reference = f'"{reference}"'
        out += [text[pos:ref.start], reference]
        pos = ref.end
    out.append(text[pos:])
    return Rendered("".join(out), env)


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
    if _SUBSCRIPT_COMMAND.search(value):
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
