"""A local run's ``status.json`` read back as a :class:`~amldist.backends.base.JobRecord`: data, not authority.

The file is read bounded (at most :data:`MAX_STATE_BYTES`), only when it is a regular file reached
without following a link (a FIFO, a device, a link to ``/dev/zero`` are refused at once, never read),
and typed: every field is checked against what amldist writes (:mod:`amldist.backends.local.run_state`),
and every path it names (logs, outputs, step folders) must lie inside the run folder it was read
from. Anything else raises :class:`StateError`, one line naming the run and the field, so that
``amldist job list`` can report that run on one line and still list the others.

Whether a ``Running`` run still runs is decided by the process it recorded *proving* to be its own
(:func:`amldist.backends.local.proc.belongs_to_run`), not by the pid in the file: a run whose
supervisor is gone (or was never the process the file names) reads as ``Failed``.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

from amldist.backends.base import (FAILED, RUNNING, STATUSES, JobRecord, OutputRecord, RankRecord,
                                   StepRecord)
from amldist.backends.local import proc
from amldist.backends.local.run_state import STATUS_FILE
from amldist.engine.state_files import MAX_STATE_BYTES, TypedFields, read_bounded, read_json_object
from amldist.errors import UserError
from amldist.rules.faults import parse_fault

_TEXT, _INT, _NUM = (str,), (int,), (int, float)


class StateError(UserError):
    """A status.json that is not what amldist writes (exit 1: the run's record is unreadable)."""

    def __init__(self, run_dir: str, what: str):
        super().__init__(f"local run {os.path.basename(run_dir)!r}: its {STATUS_FILE} {what}",
                         hint=f"the run's files are in {os.path.relpath(run_dir)}; remove the folder if it is not "
                         "a run", exit_code=1)


def read_bytes(run_dir: str) -> bytes | None:
    """The bytes of ``run_dir/status.json`` (None when there is none); StateError for anything but a
    regular file of at most MAX_STATE_BYTES reached without a link (:func:`amldist.engine.state_files.read_bounded`)."""
    try:
        return read_bounded(os.path.join(run_dir, STATUS_FILE), MAX_STATE_BYTES)
    except ValueError as exc:
        raise StateError(run_dir, str(exc)) from None


def read_record(run_dir: str) -> JobRecord | None:
    """The run in ``run_dir`` as a record (its status as a reader should see it), None when it has no
    status.json yet; StateError when the file is not one amldist wrote.

    A ``Running`` file whose process is gone is read a second time before it counts as ``Failed``:
    the owner writes its end *before* it lets go of the run folder, so the file read before the
    proof failed may predate an end that is on disk now (a cancel that polls while the run ends)."""
    record = _read_once(run_dir)
    return None if record is None else effective(record, reread=lambda: _read_once(run_dir))


def _read_once(run_dir: str) -> JobRecord | None:
    try:
        state = read_json_object(os.path.join(run_dir, STATUS_FILE), MAX_STATE_BYTES)
    except ValueError as exc:
        raise StateError(run_dir, str(exc)) from None
    return None if state is None else _Reader(run_dir, state).record()


def alive(record: JobRecord) -> bool:
    """Whether the process ``record`` names is provably that run's (same start time, holds its folder)."""
    details = record.details
    return proc.belongs_to_run(details.get("pid"), details.get("pid_start_time"), details["run_dir"])


def effective(record: JobRecord, reread=None) -> JobRecord:
    """``record`` as a reader should see it: a ``Running`` run whose own process is gone is ``Failed``
    (nothing will ever record its end). ``reread()``, when given, reads the file again before that
    verdict (see :func:`read_record`); the proof of life runs once on a live run."""
    import dataclasses

    if record.status != RUNNING:
        return record
    if alive(record):
        return dataclasses.replace(record, duration_seconds=_since(record.start_time))
    again = reread() if reread is not None else None
    if again is not None:
        return effective(again)
    return dataclasses.replace(record, status=FAILED,
                               error="amldist stopped without recording the end of the run (killed or crashed)")


def _since(start_time: str | None) -> float | None:
    try:
        started = datetime.fromisoformat(start_time or "")
    except ValueError:
        return None
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    return round(time.time() - started.timestamp(), 3)


def nodes_of(ranks) -> list[dict]:
    """Each node's exit code: its first failing process's (one that exited by itself before one amldist
    stopped with a signal), 0 when all exited 0, None while one still runs."""
    nodes: dict[int, list] = {}
    for entry in ranks:
        nodes.setdefault(entry.node, []).append(entry.exit_code)
    return [{"node": node, "exit_code": first_failure(codes)} for node, codes in sorted(nodes.items())]


def first_failure(codes) -> int | None:
    failing = sorted((c for c in codes if c not in (None, 0)), key=lambda c: c < 0)
    if failing:
        return failing[0]
    return 0 if codes and all(c == 0 for c in codes) else None


def step_exit_code(step_run_dir: str, runner_code: int | None) -> int | None:
    """A pipeline step's exit code: its failing process's own (a rank that exited 3 is exit 3), read
    from the step's status.json; the step runner's code when that file says nothing."""
    try:
        record = read_record(step_run_dir)
    except UserError:
        record = None
    if record is not None:
        code = first_failure([r.exit_code for r in record.ranks]
                             + ([record.details["launcher"].exit_code] if record.details.get("launcher") else []))
        if code not in (None, 0) or runner_code == 0:
            return code
    return runner_code


class _Reader(TypedFields):
    """Typed access to one status.json mapping; every mistake is a StateError naming the field."""

    def __init__(self, run_dir: str, state: dict):
        super().__init__(run_dir, lambda what: StateError(run_dir, what))
        self.state = state

    def rank(self, entry: dict, where: str) -> RankRecord:
        return RankRecord(label=self.get(entry, "label", _TEXT, where, required=True),
                          rank=self.get(entry, "rank", _INT, where), node=self.get(entry, "node", _INT, where) or 0,
                          exit_code=self.get(entry, "exit_code", _INT, where), log=self.path(entry, "log", where),
                          pid=self.get(entry, "pid", _INT, where))

    def step(self, entry: dict, where: str) -> StepRecord:
        needs = self.get(entry, "needs", (list,), where) or []
        if not all(isinstance(n, str) for n in needs):
            raise StateError(self.run_dir, f"has {where}needs that are not all names")
        return StepRecord(name=self.get(entry, "name", _TEXT, where, required=True),
                          status=self.status(entry, where), exit_code=self.get(entry, "exit_code", _INT, where),
                          start_time=self.get(entry, "start_time", _TEXT, where),
                          end_time=self.get(entry, "end_time", _TEXT, where),
                          duration_seconds=self.get(entry, "duration_seconds", _NUM, where), needs=tuple(needs),
                          run_dir=self.path(entry, "run_dir", where), note=self.get(entry, "note", _TEXT, where))

    def status(self, mapping: dict, where: str) -> str:
        value = self.get(mapping, "status", _TEXT, where, required=True)
        if value not in STATUSES:
            raise StateError(self.run_dir, f"has {where}status {value[:40]!r}, not one of Azure ML's statuses")
        return value

    def fault(self, entry: dict, where: str) -> dict:
        """A fault of the drill as recorded: its text (re-parsed, so only a fault amldist could have injected
        is believed), when it fired and on which processes."""
        text = self.get(entry, "text", _TEXT, where, required=True)
        try:
            parse_fault(text)
        except UserError:
            raise StateError(self.run_dir, f"has {where}text that is not a fault amldist injects") from None
        labels = self.get(entry, "processes", (list,), where) or []
        if not all(isinstance(label, str) for label in labels):
            raise StateError(self.run_dir, f"has {where}processes that are not all labels")
        return {"text": text, "kind": text.partition(":")[0], "fired_at": self.get(entry, "fired_at", _NUM, where),
                "seconds": self.get(entry, "seconds", _NUM, where), "processes": tuple(labels[:100_000])}

    def attempt(self) -> dict | None:
        entry = self.get(self.state, "attempt", (dict,), "")
        if entry is None:
            return None
        number = self.get(entry, "number", _INT, "attempt.", required=True)
        first = self.get(entry, "of", _TEXT, "attempt.", required=True)
        return {"number": number, "of": self.name(first, "attempt.of")}

    def outputs(self) -> tuple[OutputRecord, ...]:
        entries = self.items(self.state, "outputs", dict)
        for name, _ in entries:
            self.name(name, "an output named")
        return tuple(OutputRecord(str(name), self.path(entry, "path", f"outputs.{name}."),
                                  self.get(entry, "type", _TEXT, f"outputs.{name}."))
                     for name, entry in entries)

    def sweep(self) -> dict | None:
        """A sweep's ``sweep`` block (amldist.backends.local.sweep_run): each trial's name, parameters (plain
        values), metric and status, and the best trial; None for any other run."""
        block = self.get(self.state, "sweep", (dict,), "")
        if block is None:
            return None
        trials = []
        for i, entry in enumerate(self.get(block, "trials", (list,), "sweep.") or []):
            where = f"sweep.trials[{i}]."
            if not isinstance(entry, dict):
                raise StateError(self.run_dir, f"has {where[:-1]} that is not an object")
            parameters = self.get(entry, "parameters", (dict,), where) or {}
            if not all(isinstance(v, (str, int, float)) for v in parameters.values()):
                raise StateError(self.run_dir, f"has {where}parameters that are not plain values")
            trials.append({"name": self.get(entry, "name", _TEXT, where, required=True), "parameters": parameters,
                           "metric": self.get(entry, "metric", _NUM, where), "status": self.status(entry, where)})
        return {"primary_metric": self.get(block, "primary_metric", _TEXT, "sweep."),
                "goal": self.get(block, "goal", _TEXT, "sweep."), "best": self.get(block, "best", _TEXT, "sweep."),
                "algorithm": self.get(block, "algorithm", _TEXT, "sweep."),
                "seed": self.get(block, "seed", _INT, "sweep."), "trials": trials}

    def record(self) -> JobRecord:
        s = self.state
        kind = "pipeline" if s.get("kind") == "pipeline" else "job"  # older files put the distribution there
        ranks = tuple(self.rank(e, f"ranks[{i}].") for i, e in enumerate(self.items(s, "ranks", list)))
        steps = tuple(self.step(e, f"steps[{i}].") for i, e in enumerate(self.items(s, "steps", list)))
        launcher = self.get(s, "launcher", (dict,), "")
        details = {"run_dir": self.run_dir, "logs": self.path(s, "logs", ""), "pid": self.get(s, "pid", _INT, ""),
                   "pid_start_time": self.get(s, "pid_start_time", _INT, ""),
                   "launcher": None if launcher is None else self.rank(launcher, "launcher.")}
        if kind == "job":
            details["nodes"] = nodes_of(ranks)
            details["faults"] = tuple(self.fault(e, f"faults[{i}].") for i, e in enumerate(self.items(s, "faults", list)))
            details["attempt"] = self.attempt()
        sweep = self.sweep()
        if sweep is not None:
            details["sweep"] = sweep
        record = JobRecord(
            name=self.get(s, "name", _TEXT, "", required=True), backend="local", kind=kind,
            status=self.status(s, ""), start_time=self.get(s, "start_time", _TEXT, ""),
            end_time=self.get(s, "end_time", _TEXT, ""), duration_seconds=self.get(s, "duration_seconds", _NUM, ""),
            ranks=ranks, steps=steps, outputs=self.outputs(), error=self.get(s, "error", _TEXT, ""),
            stopped_by=self.get(s, "stopped_by", _TEXT, ""), details=details)
        return record
