"""What every rule needs: the file, positions, the folder for relative paths, and an output list."""

from __future__ import annotations

from amldist.diagnostics import Diagnostic
from amldist.model.field_paths import field_path


class Context:
    def __init__(self, file: str, doc=None, base_dir: str | None = None, text: str | None = None):
        self.file = file
        self.doc = doc
        self.base_dir = base_dir
        self.text = text
        self._lines = None
        self.out: list[Diagnostic] = []

    @property
    def lines(self):
        if self._lines is None and self.text is not None:
            self._lines = self.text.splitlines()  # only when a placeholder must be located
        return self._lines

    def where(self, path) -> tuple[int, int]:
        return self.doc.where(path) if self.doc is not None else (0, 0)

    def locate(self, path, needle: str) -> tuple[int, int]:
        """Position of ``needle`` at or after the value at ``path`` (placeholders in block scalars)."""
        line, col = self.where(path)
        if self.lines is None or line <= 0 or not needle:
            return line, col
        for number in range(line - 1, min(len(self.lines), line + 400)):
            start = col - 1 if number == line - 1 else 0
            found = self.lines[number].find(needle, start)
            if found >= 0:
                return number + 1, found + 1
        return line, col

    def emit(self, path, severity: str, code: str, message: str, hint: str | None = None, *,
             position=None, field=None) -> None:
        line, col = position if position is not None else self.where(path)
        name = field_path(field if field is not None else path)
        self.out.append(Diagnostic(self.file, line, col, severity, code, message, hint, name or None))
