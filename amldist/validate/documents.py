"""A spec file as the validator reads it: text, then YAML with positions, never raising.

Unlike :func:`amldist.model.read_document` (which raises one UserError for the command that
loads a spec), every problem here becomes a value the validator reports as a diagnostic, and a
file validated again soon after (by a caller of ``validate_file``: an editor, a test) is not read again.
"""

from __future__ import annotations

import os

from amldist.diagnostics import ERROR, Diagnostic
from amldist.model.files import FileProblem, read_text as read_regular
from amldist.model.yamlio import YamlError, load_yaml


def parse(text: str):
    """(YamlDocument, None) or (None, YamlError) -- never raises for bad YAML."""
    try:
        return load_yaml(text), None
    except YamlError as exc:
        return None, exc
    except RecursionError:
        return None, YamlError("yaml-too-deep", "the document is nested too deeply to read")


# (absolute path, mtime, size) -> (text, doc, error) of the files read last. Bounded: a folder of thousands of specs
# would otherwise stay in memory to the end, for nothing (``check`` validates each file once; a pipeline's components
# are kept by amldist.rules.pipeline_graph), and the garbage collector would walk them all again and again.
_documents: dict = {}
_KEPT = 64


def cached_document(path: str):
    """(text, YamlDocument, None), (text, None, YamlError) or (None, None, Diagnostic) for a file.

    The last ``_KEPT`` files read are kept, unless changed since (their modification time or size).
    """
    try:
        stat = os.stat(path)
        key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None
    if key is not None and key in _documents:
        return _documents[key]
    text, problem = file_text(path)
    result = (None, None, problem) if problem is not None else (text, *parse(text))
    if key is not None:
        _documents[key] = result
        if len(_documents) > _KEPT:
            del _documents[next(iter(_documents))]  # the oldest
    return result


def file_text(path: str):
    """(text, None) or (None, Diagnostic) for a file that cannot be read as UTF-8.

    ``amldist.model.files.read_text`` reads it: only a regular file, of a bounded size.
    """
    try:
        return read_regular(path), None
    except FileProblem as exc:
        reason = f"cannot read the file: {exc.reason}" if exc.code == "unreadable" else exc.reason
        return None, Diagnostic(path, exc.line, exc.col, ERROR, exc.code, reason, exc.hint)
