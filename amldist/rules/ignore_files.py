"""Ignore files (``.amlignore``, ``.gitignore``): read and matched one way everywhere amldist walks a folder.

The patterns are matched by ``pathspec``'s ``GitIgnoreSpec`` (a maintained implementation of
git's wildmatch rules: ``**``, anchoring with ``/``, folder patterns ending in ``/``, ``!``
negation) rather than by a hand-written matcher; it is imported only when there are patterns.

Matching takes linear time: pathspec runs the patterns on RE2 (``google-re2``, a dependency), an
automaton without backtracking, so one line such as ``*a*a*a*a*a*a*a*a*a*a*a*a*b`` cannot hang
``validate DIR`` or the code copy (Python's ``re`` backtracks exponentially on it). Where RE2
cannot be imported, and for the Azure upload (azure-ai-ml's own matcher decides it, and backtracks),
a pattern with more than :data:`MAX_WILDCARDS` ``*`` is refused with one line naming it
(:func:`check_backtracking`) rather than matched for hours.
An ignore file is read only when it is a regular file of at most :data:`MAX_IGNORE_BYTES`
(checked with ``stat`` first, so a FIFO or a device called ``.gitignore`` is never opened).

Users: ``amldist validate`` (:mod:`amldist.validate.ignore_files`) and the local run's code
copy (:func:`code_ignore`). The Azure snapshot uses azure-ai-ml's own matcher, since that is
what decides the upload.
"""

from __future__ import annotations

import os
import re
import stat

from amldist.errors import UserError

MAX_IGNORE_BYTES = 1 << 20  # larger than this is not an ignore file a person wrote: not read
CODE_IGNORE_FILES = (".amlignore", ".gitignore")  # as az ml: .amlignore wins, else .gitignore
# For a backtracking matcher (azure-ai-ml's own, which decides the Azure upload; pathspec without RE2): its
# work grows as len(name) ** wildcards. 4 take 0.2 s on a 250-character name, 5 take 17 s.
MAX_WILDCARDS = 4
_WILDCARD = re.compile(r"(?<!\\)\*+")


def read_lines(path: str) -> list[str]:
    """The lines of one ignore file; [] when absent, not a regular file, too large or unreadable."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IGNORE_BYTES:
            return []
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


def spec_from_lines(lines):
    """A ``pathspec.GitIgnoreSpec`` for ``lines``; None when they hold no pattern."""
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    import pathspec  # only when there is a pattern to match

    if _has_re2():
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")
    check_backtracking(lines, "an ignore pattern", hint="simplify it, or pip install google-re2 (amldist then "
                       "matches any pattern in linear time)")
    return pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")


def check_backtracking(lines, where: str, *, hint: str) -> None:
    """UserError naming the first pattern with more than :data:`MAX_WILDCARDS` ``*``: a backtracking
    matcher could spend hours on it (``*a*a*a*a*a*a*a*a*a*a*a*a*b``)."""
    for line in lines:
        if len(_WILDCARD.findall(line)) > MAX_WILDCARDS:
            raise UserError(f"{where} {line.strip()[:80]!r} has more than {MAX_WILDCARDS} '*' wildcards, which "
                            "a backtracking matcher can take hours to test", hint=hint)


def _has_re2() -> bool:
    try:
        import re2  # noqa: F401 - google-re2: pathspec's linear-time backend
    except ImportError:
        return False
    return True


def code_ignore(folder: str):
    """The ignore rules of a ``code:`` folder (``.amlignore``, else ``.gitignore`` at its top), or None."""
    for name in CODE_IGNORE_FILES:
        path = os.path.join(folder, name)
        if os.path.lexists(path):
            return spec_from_lines(read_lines(path))
    return None


def is_ignored(spec, relpath: str, is_dir: bool) -> bool:
    """Whether ``relpath`` (relative to the folder, any separator) is ignored by ``spec`` (None: nothing is)."""
    if spec is None:
        return False
    relpath = relpath.replace(os.sep, "/")
    return spec.match_file(relpath + "/" if is_dir else relpath)
