"""How a :class:`~amldist.validate.result.CheckResult` is printed: one reporter class per format, in one
table (:data:`REPORTERS`), as check-jsonschema's ``reporter.py``. Each reporter gives the text for
standard output (:meth:`Reporter.render`) and, for people reading a terminal, a summary line for
standard error (:meth:`Reporter.summary`; only the text format has one: the others are read by tools).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from amldist import __version__
from amldist.diagnostics import ERROR, NOTE, WARNING, escape_text
from amldist.validate.result import CheckResult


class Reporter:
    """The base: ``render`` is the whole standard output for a result."""

    name = ""

    def render(self, result: CheckResult) -> str:
        raise NotImplementedError

    def summary(self, result: CheckResult) -> str | None:
        return None


class TextReporter(Reporter):
    """``FILE:LINE:COL: severity code: message (hint: ...)``, one line each, then the summary on stderr."""

    name = "text"

    def render(self, result: CheckResult) -> str:
        return "".join(d.to_text() + "\n" for d in result.diagnostics)

    def summary(self, result: CheckResult) -> str | None:
        return result.summary()


class JsonReporter(Reporter):
    """One JSON object: each file with its counts, every diagnostic, the summary."""

    name = "json"

    def render(self, result: CheckResult) -> str:
        return json.dumps({
            "files": [{"file": one.file, "errors": one.count(ERROR), "warnings": one.count(WARNING),
                       "ok": not one.count(ERROR)} for one in result.files],
            "diagnostics": [d.to_dict() for d in result.diagnostics],
            "summary": {"files": len(result.files), "errors": result.count(ERROR),
                        "warnings": result.count(WARNING), "notes": result.count(NOTE)},
        }, indent=2) + "\n"


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: an annotation on the file's line in the pull request."""

    name = "github"

    def render(self, result: CheckResult) -> str:
        return "".join(github(d) + "\n" for d in result.diagnostics)


class SarifReporter(Reporter):
    """A SARIF 2.1.0 log for GitHub code scanning (:func:`sarif`)."""

    name = "sarif"

    def render(self, result: CheckResult) -> str:
        return json.dumps(sarif(result.diagnostics), indent=2) + "\n"


REPORTERS: dict[str, type[Reporter]] = {cls.name: cls for cls in (TextReporter, JsonReporter, GithubReporter,
                                                                   SarifReporter)}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github(d) -> str:
    """One GitHub Actions workflow command (``::error file=F,line=L,col=C,title=CODE::message``)."""
    level = {"error": "error", "warning": "warning"}.get(d.severity, "notice")
    props = [f"file={_prop(escape_text(d.file))}"]
    if d.line:
        props.append(f"line={d.line}")
    if d.col:
        props.append(f"col={d.col}")
    props.append(f"title={_prop(d.code)}")
    message = d.message + (f" (hint: {d.hint})" if d.hint else "")
    return f"::{level} {','.join(props)}::{_data(escape_text(message))}"


SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVELS = {ERROR: "error", WARNING: "warning", NOTE: "note"}


def sarif(diagnostics) -> dict:
    """A SARIF 2.1.0 log (one run) for GitHub code scanning (``github/codeql-action/upload-sarif``).

    Rules are the diagnostic codes, in the order first seen; each result points at its file by a
    URI relative to the current folder (the repository root in a CI job) and, when the
    diagnostic has a position, at its 1-based line and column (Unicode code points, as Python
    counts them; ``columnKind`` says so).
    """
    rules: dict = {}
    results = []
    for d in diagnostics:
        if d.code not in rules:
            rules[d.code] = len(rules)
        location: dict = {"artifactLocation": {"uri": artifact_uri(d.file)}}
        if d.line > 0:
            location["region"] = {"startLine": d.line, "startColumn": max(d.col, 1)}
        message = d.message + (f" (hint: {d.hint})" if d.hint else "")
        results.append({"ruleId": d.code, "ruleIndex": rules[d.code], "level": _LEVELS.get(d.severity, "note"),
                        "message": {"text": message}, "locations": [{"physicalLocation": location}]})
    driver = {
        "name": "amldist",
        "version": __version__,
        "rules": [{"id": code, "name": _rule_name(code),
                   "shortDescription": {"text": code.replace("-", " ").capitalize()}} for code in rules],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}]}


def artifact_uri(file: str) -> str:
    """``file`` as a URI reference relative to the current folder (``/`` separators, %-escaped).

    A file on another drive keeps an absolute ``file:`` URI; a name such as ``<stdin>`` is
    escaped into a valid relative reference.
    """
    try:
        rel = os.path.relpath(file) if os.path.isabs(file) else os.path.normpath(file)
    except ValueError:  # another drive (Windows)
        return Path(file).as_uri()
    return quote(rel.replace(os.sep, "/"), safe="/")


def _rule_name(code: str) -> str:
    """SARIF's rule ``name`` is an identifier-like word: ``undeclared-input`` -> ``UndeclaredInput``."""
    return "".join(part.capitalize() for part in code.split("-"))
