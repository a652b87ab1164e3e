"""What :func:`amldist.validate.check` returns: each file's diagnostics and the totals, apart from how
they are printed (:mod:`amldist.validate.reporter`), as check-jsonschema keeps its ``result.py``."""

from __future__ import annotations

from typing import NamedTuple

from amldist.diagnostics import ERROR, NOTE, WARNING, Diagnostic, has_errors


# NamedTuples, not frozen dataclasses: as immutable and comparable, and about 0.5 ms less at start-up
# (a dataclass writes and compiles its methods when the module loads; `amldist validate one.yaml` pays it).
class FileResult(NamedTuple):
    """One file's diagnostics; ``file`` is the name reported (``<stdin>`` or ``--stdin-name`` for ``-``)."""

    file: str
    diagnostics: tuple[Diagnostic, ...]

    def count(self, severity: str) -> int:
        return sum(d.severity == severity for d in self.diagnostics)


class CheckResult(NamedTuple):
    """Every file checked, in the order the targets named them, each file once."""

    files: tuple[FileResult, ...]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for result in self.files for d in result.diagnostics]

    def count(self, severity: str) -> int:
        return sum(result.count(severity) for result in self.files)

    def ok(self, *, strict: bool = False) -> bool:
        """No error (and, when ``strict``, no warning either)."""
        return not has_errors(self.diagnostics, strict=strict)

    def exit_code(self, *, strict: bool = False) -> int:
        """The CLI's answer: 0 when :meth:`ok`, 1 otherwise (usage mistakes never get this far)."""
        return 0 if self.ok(strict=strict) else 1

    def summary(self) -> str:
        """``3 files, 1 errors, 0 warnings`` (notes only when there are some)."""
        notes = f", {self.count(NOTE)} notes" if self.count(NOTE) else ""
        return f"{len(self.files)} files, {self.count(ERROR)} errors, {self.count(WARNING)} warnings{notes}"
