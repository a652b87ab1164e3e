"""A :class:`~amldist.diagnosis.analysis.Diagnosis` as text (for people) and as one JSON object."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from amldist.diagnosis.analysis import Diagnosis
from amldist.diagnosis.signatures import signal_text
from amldist.diagnostics import escape_text


def when(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")


MAX_SHOWN = 1000  # characters of one line shown (a log line can be megabytes)


def shown(text: str | None, limit: int = MAX_SHOWN) -> str | None:
    """A line from a log as it may be shown: at most ``limit`` characters, said to be cut, and every character
    that is not printable (ESC and other terminal controls) written as an escape, so a log cannot drive the
    terminal (amldist.diagnostics.escape_text, the one rule for text from a file)."""
    if text is None:
        return None
    return escape_text(cut(text, limit))


def cut(text: str | None, limit: int = MAX_SHOWN) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f" [{len(text) - limit:,} characters cut]"


def tail_lines(d: Diagnosis) -> list[str]:
    return [shown(line) for line in d.tail().splitlines()]


def to_json(d: Diagnosis) -> dict:
    first = None
    if d.rank is not None:
        f = d.finding
        first = {"rank": d.rank.rank, "label": d.rank.label, "node": d.rank.node, "host": d.rank.host,
                 "exit_code": d.rank.exit_code,
                 "ended": when(d.rank.ended), "signature": f.signature if f else None,
                 "line": cut(f.line) if f else None, "log": d.rank.log, "hint": f.hint if f else None,
                 "field": f.field if f else None, "frame": cut(f.frame) if f else None,
                 "ranks": f.ranks if f else [], "tail": "\n".join(tail_lines(d)) if f is None else None}
    elif d.finding is not None:  # the service named the cause (a preemption), no rank did
        first = dict.fromkeys(("rank", "label", "node", "host", "exit_code", "ended", "log", "field", "frame", "tail"))
        first.update(signature=d.finding.signature, line=cut(d.finding.line), hint=d.finding.hint, ranks=[])
    return {"job": d.job, "backend": d.backend, "status": d.status, "step": d.step, "found_cause": d.exit_code == 0,
            "first_failure": first, "evidence": d.evidence,
            "notes": [{"signature": n.signature, "line": n.line, "hint": n.hint, "field": n.field} for n in d.notes],
            "ranks": [{"rank": r.rank, "label": r.label, "node": r.node, "host": r.host, "exit_code": r.exit_code,
                       "ended": when(r.ended), "signature": r.signature, "log": r.log} for r in d.ranks]}


def to_text(d: Diagnosis, *, cwd: str | None = None) -> str:
    rel = lambda path: os.path.relpath(path, cwd or os.getcwd()) if os.path.isabs(path) else path
    head = f"job {shown(d.job)}" + (f", step {shown(d.step)}" if d.step else "") + f": {d.status or 'unknown status'}"
    lines = [head]
    if d.rank is None and d.finding is not None:  # the service named the cause (a preemption), no rank did
        lines += [f"cause: {d.finding.signature}: {shown(d.finding.line)}", f"fix: {shown(d.finding.hint)}"]
    elif d.rank is None:
        lines.append("no rank failed" + ("" if d.status in ("Completed", None) else " (yet)"))
        if d.status == "Running":
            lines.append("a job that hangs: AMLDIST_STALL_TIMEOUT in environment_variables names the stuck rank, "
                         "with every rank's stack in its log")
    else:
        r, f = d.rank, d.finding
        node = (f" on node {r.node}" if r.node is not None else "") + (f" (host {shown(r.host)})" if r.host else "")
        ended = f" at {when(r.ended)}" if r.ended is not None else ""
        code = signal_text(r.exit_code) if r.exit_code is not None else "exit code unknown"
        lines.append(f"first failure: {r.label}{node}, {code}{ended}")
        if f is None:
            lines.append("cause: not one amldist knows; the last lines of its log:")
            lines += [f"  | {line}" for line in tail_lines(d)]
        else:
            lines.append(f"cause: {f.signature}: {shown(f.line)}")
            if f.frame:
                lines.append(f"  where: {shown(f.frame)}")
            lines.append(f"fix: {shown(f.hint)}" + (f" [spec: {f.field}]" if f.field else ""))
        lines.append(f"log: {shown(rel(r.log))}")
        if d.evidence:
            lines.append(f"evidence: {shown(d.evidence)}")
        others = [f"{o.label} {o.signature or signal_text(o.exit_code)}" for o in d.ranks
                  if o is not r and (o.signature or o.exit_code not in (None, 0))]
        if others:
            lines.append("the other ranks: " + ", ".join(others))
    for note in d.notes:
        spec = f" [spec: {note.field}]" if note.field else ""
        lines.append(f"note: {note.signature}: {shown(note.line)}; {note.hint}{spec}")
    return "\n".join(lines)
