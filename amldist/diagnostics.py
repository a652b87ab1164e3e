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
        text = f"{self.file}:{self.line}:{self.col}: {self.severity} {self.code}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def to_dict(self) -> dict:
        return asdict(self)


def errors_in(diagnostics) -> list:
    """The diagnostics that are errors (what stops a build, a conversion or a submission)."""
    return [d for d in diagnostics if d.severity == ERROR]


def has_errors(diagnostics, *, strict: bool = False) -> bool:
    bad = {ERROR, WARNING} if strict else {ERROR}
    return any(d.severity in bad for d in diagnostics)
