"""Which files ``amldist validate PATH...`` looks at.

- a file: validated, and "explicit" (not being a spec is an error);
- a folder: every ``*.yml``/``*.yaml`` below it, recursively, in sorted order,
  skipping hidden folders (``.git``, ``.venv``, ...) and ``node_modules``; such
  files are not explicit (a non-spec is skipped with a note);
- a pattern with ``*``, ``?`` or ``[`` that names no existing path: expanded here
  (``**`` included) for shells that do not; matches count as found, not explicit,
  and a pattern matching nothing is a usage error, like a path that does not exist.
Each file is validated once even when several arguments reach it (:func:`amldist.validate.check`
drops the repeats).

Neither a folder walk nor ``**`` follows symlinked folders (a link to ``..``
would make the walk endless: ``glob.glob`` takes exponential time on one). A
FIFO, device or socket named ``*.yml`` is listed like any file and refused by
name when it is read (``amldist.model.files``), never opened.
"""

from __future__ import annotations

import os

from amldist.errors import UserError

SUFFIXES = (".yml", ".yaml")
_SKIP_DIRS = {"node_modules", "__pycache__"}


def _walk(folder: str):
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        found.extend(os.path.join(root, f) for f in sorted(files) if f.lower().endswith(SUFFIXES))
    return found


def is_pattern(text: str) -> bool:
    """Whether ``text`` has a wildcard (``*``, ``?`` or ``[``): expanded here when it names no path."""
    return any(ch in text for ch in "*?[")


def no_targets() -> UserError:
    return UserError("no paths given", hint="amldist validate FILE_OR_FOLDER... (folders are searched for YAML)")


def expand(target: str) -> list[tuple[str, bool]]:
    """(path, explicit) for every file ``target`` reaches, repeats included; UserError (exit 2) for a
    path that is not there or a pattern that matches nothing."""
    if os.path.isdir(target):
        return [(found, False) for found in _walk(target)]
    if os.path.exists(target):
        return [(target, True)]
    if not is_pattern(target):
        raise UserError(f"{target} does not exist", hint="pass YAML files or folders that contain them")
    matches = sorted(m for m in _glob(target) if os.path.isdir(m) or m.lower().endswith(SUFFIXES))
    if not matches:
        raise UserError(f"no YAML file or folder matches {target}",
                        hint="check the pattern; quote it so the shell leaves it alone")
    return [(found, False) for match in matches
            for found in (_walk(match) if os.path.isdir(match) else [match])]


def _glob(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)`` without following symlinked folders under ``**``.

    ``pathlib``'s ``**`` does not follow them (``glob``'s does); it wants a relative
    pattern, so the leading part without wildcards is its root. Hidden entries are
    left out, as ``glob`` leaves them out.
    """
    import glob

    if "**" not in pattern:
        return glob.glob(pattern)  # each wildcard matches one level: no loop can make it endless
    from pathlib import Path

    parts = pattern.replace(os.sep, "/").split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not glob.has_magic(parts[fixed]):
        fixed += 1
    root = "/".join(parts[:fixed]) or ("/" if pattern.startswith(("/", os.sep)) else ".")
    rest = "/".join(parts[fixed:])
    found = []
    for match in Path(root).glob(rest):
        relative = match.relative_to(root).parts
        if not any(part.startswith(".") for part in relative):
            found.append(os.path.join(root, *relative) if root != "." or not relative else os.path.join(*relative))
    return found
