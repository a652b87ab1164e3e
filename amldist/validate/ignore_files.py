"""Which found files ``amldist validate`` leaves out: ``--exclude`` patterns and ignore files.

Both use ``.gitignore`` syntax, read and matched by :mod:`amldist.rules.ignore_files` (``pathspec``,
imported only when there is a pattern to match, so ``amldist validate one.yaml`` does not pay for it).

- ``--exclude GLOB`` (repeatable) is matched against each found file's path relative to the
  current folder and relative to the walked root, so ``tests/``, ``**/fixtures/**`` and
  ``*.draft.yml`` all mean what they would in a ``.gitignore`` at either place.
- Ignore files: ``.gitignore`` and ``.amlignore`` (the file ``az ml`` honours when it uploads
  ``code:``) at each walked root: a folder argument, or the literal folder a glob starts from
  (``specs/**/*.yml`` -> ``specs``). Their patterns are relative to that root, as git reads a
  ``.gitignore``. Nested ignore files, ``.git/info/exclude`` and git's global excludes are not
  read: the roots' files are what a CI job or a pre-commit hook can rely on seeing.
- A file named on the command line is always validated (what a pre-commit hook passes).
"""

from __future__ import annotations

import os

from amldist.rules.ignore_files import read_lines, spec_from_lines
from amldist.validate.discover import is_pattern

IGNORE_FILES = (".gitignore", ".amlignore")


def walked_root(argument: str) -> str | None:
    """The folder whose ignore files apply to what ``argument`` finds; None for a file."""
    if os.path.isdir(argument):
        return argument
    if os.path.exists(argument) or not is_pattern(argument):
        return None
    head = []
    for part in argument.replace(os.sep, "/").split("/"):
        if is_pattern(part):
            break
        head.append(part)
    return "/".join(head) or "."


def _relative(path: str, start: str) -> str | None:
    try:
        rel = os.path.relpath(path, start)
    except ValueError:  # another drive (Windows)
        return None
    if rel == ".." or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


class FileFilter:
    """Decides, for each file found by walking a folder or expanding a glob, whether to leave it out."""

    def __init__(self, excludes=(), *, use_ignore_files: bool = True):
        self._excludes = spec_from_lines(list(excludes)) if excludes else None
        self._use_ignore_files = use_ignore_files
        self._roots: dict = {}  # root -> its ignore spec (None when it has no patterns)

    def _root_spec(self, root: str):
        if root not in self._roots:
            lines = []
            if self._use_ignore_files:
                for name in IGNORE_FILES:
                    lines.extend(read_lines(os.path.join(root, name)))
            self._roots[root] = spec_from_lines(lines)
        return self._roots[root]

    def excluded(self, path: str, root: str | None) -> bool:
        """Whether a found ``path`` (under ``root``, None for a named file) is left out."""
        if root is None:
            return False  # named on the command line: always validated
        in_root = _relative(path, root)
        spec = self._root_spec(root)
        if spec is not None and in_root is not None and spec.match_file(in_root):
            return True
        if self._excludes is None:
            return False
        here = _relative(os.path.abspath(path), os.getcwd())
        return any(rel is not None and self._excludes.match_file(rel) for rel in (here, in_root))
