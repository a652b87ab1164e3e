"""The command line a local process runs: ``${{inputs.x}}`` and ``${{outputs.y}}`` filled in.

Azure ML pastes values into the command text; here every value is shell-quoted
(``shlex.quote``), so a value is always one word and can never run a command
(``x; touch pwned`` stays the literal string). The one visible difference: a literal
containing spaces is one argument locally, several on Azure; quote it in the YAML when
that matters. Literal values are written as Python's ``str()`` writes them (``True``,
``0.01``), which is what azure-ai-ml sends to the service.

``$[[ ... ]]`` marks an optional part: it is kept (without the brackets) when every input
it names has a value, and dropped otherwise, as Azure ML does (``amldist.spec.placeholders``
resolves the groups, nested ones included).
"""

from __future__ import annotations

import re
import shlex

from amldist.errors import UserError

_REFERENCE = re.compile(r"\$\{\{\s*([^{}]*?)\s*\}\}")


def literal_text(value) -> str:
    """How a literal input value appears in the command (``str()``, as azure-ai-ml sends it)."""
    return str(value)


def references(text: str) -> list[str]:
    """The ``${{...}}`` expressions in ``text``, e.g. ``["inputs.lr", "outputs.model"]``."""
    return [m.group(1) for m in _REFERENCE.finditer(text)]


def render(command: str, values: dict[str, str | None], *, file: str = "the job") -> str:
    """``command`` with every reference replaced by its shell-quoted value.

    ``values`` maps ``"inputs.<name>"`` / ``"outputs.<name>"`` to text, or to None for an
    optional input left unset. A required reference without a value is a UserError.
    """
    from amldist.spec.placeholders import V2, drop_unset_groups

    is_set = {ref.split(".", 1)[1] for ref, value in values.items() if ref.startswith("inputs.") and value is not None}
    text = drop_unset_groups(command, is_set, syntax=V2)

    def fill(match: re.Match) -> str:
        ref = match.group(1)
        if ref not in values:
            raise UserError(
                f"{file}: the command uses ${{{{{ref}}}}}, which the local backend cannot fill",
                hint="only ${{inputs.NAME}} and ${{outputs.NAME}} of the job itself are available locally",
            )
        value = values[ref]
        if value is None:
            raise UserError(
                f"{file}: the command needs ${{{{{ref}}}}} but that input has no value",
                hint=f"pass --input {ref.split('.', 1)[1]}=VALUE, or wrap the option in $[[ ... ]] to make it optional",
            )
        return shlex.quote(value)

    return _REFERENCE.sub(fill, text)
