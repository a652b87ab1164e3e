"""Rendering of per-file diagnostics: text, JSON, GitHub Actions annotations."""

from __future__ import annotations

import json

from amldist.diagnostics import ERROR, NOTE, WARNING


def render(fmt: str, results) -> str:
    """``results``: [(file, [Diagnostic, ...]), ...] in the order the files were validated."""
    diagnostics = [d for _, found in results for d in found]
    if fmt == "json":
        return json.dumps({
            "files": [
                {"file": file, "errors": _count(found, ERROR), "warnings": _count(found, WARNING),
                 "ok": not _count(found, ERROR)}
                for file, found in results
            ],
            "diagnostics": [d.to_dict() for d in diagnostics],
            "summary": {"files": len(results), "errors": _count(diagnostics, ERROR),
                        "warnings": _count(diagnostics, WARNING), "notes": _count(diagnostics, NOTE)},
        }, indent=2) + "\n"
    if fmt == "github":
        return "".join(github(d) + "\n" for d in diagnostics)
    return "".join(d.to_text() + "\n" for d in diagnostics)


def _count(diagnostics, severity) -> int:
    return sum(d.severity == severity for d in diagnostics)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github(d) -> str:
    """One GitHub Actions workflow command (``::error file=F,line=L,col=C,title=CODE::message``)."""
    level = {"error": "error", "warning": "warning"}.get(d.severity, "notice")
    props = [f"file={_prop(d.file)}"]
    if d.line:
        props.append(f"line={d.line}")
    if d.col:
        props.append(f"col={d.col}")
    props.append(f"title={_prop(d.code)}")
    message = d.message + (f" (hint: {d.hint})" if d.hint else "")
    return f"::{level} {','.join(props)}::{_data(message)}"
