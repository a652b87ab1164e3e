"""A literal value given to a typed input (``type: integer`` and ``10.01``): the one rule that decides whether it
fits, and the value it becomes. ``amldist submit`` applies it to every input it runs a component with; ``validate``
applies its type part to a pipeline step's literal inputs, so a value the run would refuse is an error at its line.
"""

from __future__ import annotations

import re

from amldist.errors import UserError
from amldist.rules.secrets import shown

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def literal_value(name: str, port: dict, value):
    """A literal input value, coerced from text (the CLI passes strings) and range-checked; a UserError when
    it does not fit the input's ``type``, ``enum``, ``min`` or ``max``."""
    kind = port.get("type")
    text = str(value).strip()
    if kind == "integer" and not isinstance(value, bool) and re.fullmatch(r"[+-]?\d{1,300}", text):
        value = int(text)  # 300 digits: Python refuses to read 4,301 (a crash), no count needs 300
    elif kind == "number" and not isinstance(value, bool) and _NUMBER.fullmatch(text):
        value = float(text) if not isinstance(value, int) else value
    elif kind == "boolean" and text.lower() in ("true", "false"):
        value = text.lower() == "true"
    elif kind == "string" and isinstance(value, bool):
        value = str(value)  # `default: True` beside enum ['True', 'False']: azure-ai-ml reads the string 'True'
    elif kind == "string" and isinstance(value, (str, int, float)):
        value = str(value)
    else:
        article = "an" if str(kind)[:1] in "aeiou" else "a"
        raise UserError(f"input {name!r} expects {article} {kind}, got {shown(name, value)}")
    if port.get("enum") and str(value) not in port["enum"]:
        raise UserError(f"input {name!r} must be one of {', '.join(map(str, port['enum']))}, got {shown(name, value)}")
    if kind in ("integer", "number"):
        low, high = _bound(port.get("min")), _bound(port.get("max"))
        if (low is not None and value < low) or (high is not None and value > high):
            raise UserError(f"input {name!r} must lie in [{low}, {high}], got {shown(name, value)}")
    return value


def _bound(value):
    """A ``min``/``max`` as a number: numeric text (``"1"``) read as one; anything else (``"true"``)
    bounds nothing here (``validate`` reports it)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None
