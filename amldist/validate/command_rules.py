"""Placeholders, optional groups and shell contexts in commands, reported at their field and position.

The rule itself is :mod:`amldist.rules.command_checks` (the builders and convert use it too);
this module places each finding at the command's field, and at the reference inside the
command when the file's text is known.
"""

from __future__ import annotations

from amldist.rules.command_checks import command_findings, shell_findings
from amldist.model.field_paths import field_path


def check_command(ctx, path, command, inputs: dict | None, outputs: dict | None, *, legacy: bool = False) -> None:
    """Placeholders and optional groups of one command (``None``: a malformed section, not checked)."""
    findings = command_findings(command, inputs, outputs, legacy=legacy)
    if not legacy and not any(f.severity == "error" for f in findings):
        findings += shell_findings(command, inputs)  # where the shell reads each value: warnings
    for found in findings:
        ctx.emit(path, found.severity, found.code, f"{field_path(path)}: {found.message}", found.hint,
                 position=ctx.locate(path, found.text) if found.text else None)
