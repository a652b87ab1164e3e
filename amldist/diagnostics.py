"""Diagnostics: what the validator (and anything that checks a spec) reports.

Kept apart from how they are printed (text, JSON, GitHub annotations) so that the
builders, convert and submit can reuse the same findings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"
NOTE = "note"


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int  # 1-based; 0 when no position applies (e.g. the file is unreadable)
    col: int  # 1-based; 0 likewise
    severity: str  # ERROR, WARNING or NOTE
    code: str  # stable identifier, e.g. "AMD101"
    message: str
    hint: str | None = None
    field: str | None = None  # dotted path of the field, e.g. "distribution.type"

    def to_text(self) -> str:
        """One line; a newline or terminal escape in a file name, key or value is shown escaped."""
        text = f"{self.file}:{self.line}:{self.col}: {self.severity} {self.code}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return escape_text(text)

    def to_dict(self) -> dict:
        return asdict(self)


def escape_text(text: str) -> str:
    """``text`` with every character that is not printable (newlines, ESC and other controls,
    bidi overrides, line separators) written as a Python escape (``\\n``, ``\\x1b``, ``\\u202e``),
    so that a name from a file can neither forge an extra ``FILE:LINE:COL:`` line nor drive
    the terminal. Printable text (any script) is kept as it is."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def errors_in(diagnostics) -> list:
    """The diagnostics that are errors (what stops a build, a conversion or a submission)."""
    return [d for d in diagnostics if d.severity == ERROR]


def has_errors(diagnostics, *, strict: bool = False) -> bool:
    bad = {ERROR, WARNING} if strict else {ERROR}
    return any(d.severity in bad for d in diagnostics)
