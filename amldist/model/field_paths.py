"""A field's path as every message writes it: ``jobs.train.args[0]``, ``tags["team.name"]``.

The one spelling for the validator's messages and ``field``, ``--set`` errors and the builders:
keys joined with dots, list items as ``[N]``. A dotted key stays dotted (``inputs.group.lr``):
that is how Azure ML names an input of a parameter group; a key with a bracket is quoted in
brackets (``tags["a[0]"]``), as ``--set`` reads it.
"""

from __future__ import annotations


def field_path(parts) -> str:
    """``("jobs", "train", "args", 0)`` -> ``"jobs.train.args[0]"``; ``()`` -> ``""``."""
    text = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        elif any(c in str(part) for c in "[]"):
            text += f'["{part}"]'
        else:
            text += ("." if text else "") + str(part)
    return text
