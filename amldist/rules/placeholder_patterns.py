"""The one spelling of a placeholder reference: ``${{inputs.NAME}}`` (v2; a name may be dotted, a
flattened parameter group) and ``{inputs.NAME}`` (legacy), with ``outputs`` alike.

Its own small module so that the command checks' fast path (:mod:`amldist.rules.command_checks`)
and the parser (:mod:`amldist.rules.placeholders`, imported only for commands that need it) read
references with the same patterns without the fast path paying for the parser's import.
"""

from __future__ import annotations

import re

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
V2_NAME = NAME + r"(?:\." + NAME + r")*"  # dotted: a flattened parameter group
LEGACY_REF = re.compile(r"\{(inputs|outputs)\.(" + NAME + r")\}")
LEGACY_START = re.compile(r"\{(inputs|outputs)\.")
V2_REF = re.compile(r"\$\{\{\s*(inputs|outputs)\.(" + V2_NAME + r")\s*\}\}")
V2_START = re.compile(r"\$\{\{\s*(inputs|outputs)\.")
