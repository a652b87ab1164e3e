"""Names amldist uses as folder names or shows on a terminal: one rule each.

- A **job name** (``--name``, a spec's ``name:``) is 1 to 255 letters, digits, ``-`` and ``_``,
  starting with a letter or digit, as Azure ML's service requires. Matched with ``fullmatch``
  (``re``'s ``$`` would let a final newline in: ``"abc\\n"`` was accepted), so a name is always one
  folder name and one printable word.
- Input, output and step names are checked by the JSON Schemas (``ioName``), as azure-ai-ml does.
- Anything read back from a state file or typed by a user is shown through
  :func:`amldist.diagnostics.escape_text` wherever it is printed, so that a terminal escape or a
  newline inside a name never reaches the screen as such.
"""

from __future__ import annotations

import re

from amldist.errors import UserError

JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,254}")
JOB_NAME_HINT = "use 1 to 255 letters, digits, '-' and '_', starting with a letter or digit"


def is_job_name(name) -> bool:
    return isinstance(name, str) and JOB_NAME.fullmatch(name) is not None


def check_job_name(name, *, where: str = "job name") -> str:
    """``name`` when it is a valid job name; UserError (exit 2) naming it, escaped, otherwise."""
    if not is_job_name(name):
        shown = ascii(name) if isinstance(name, str) else type(name).__name__
        raise UserError(f"{where} {shown[:80]} is not valid", hint=JOB_NAME_HINT, exit_code=2)
    return name
