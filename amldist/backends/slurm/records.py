"""A Slurm job's record, in Azure ML's words, from Slurm and from its run folder: data, never authority.

The run folder (``<run root>/<name>/``) holds ``slurm.json`` (the job id and the plan's shape, written
by ``run()``; its paths relative to the run folder), ``state/`` (written inside the allocation:
``started``, ``ended``, ``exit_code`` of the step, ``rank_N.exit`` of each task; ``cancel_requested`` by
``amldist job cancel``) and ``user_logs/``.
The job's own processes can write all of it, so it is read as the local backend reads ``status.json``
(:mod:`amldist.engine.state_files`): ``slurm.json`` bounded, never through a link, typed
(:func:`read_meta`: every path inside the run folder, every log a plain name, the job id one that
``sbatch`` could have answered), the state files as small regular files or nothing. A ``slurm.json``
that is not what amldist writes is one :class:`SlurmStateError` line (``job list`` warns and lists the
others). The job id it holds is used only for a job that Slurm says carries the run's marker
(:func:`amldist.backends.slurm.commands.run_marker`), so an edited id names no other job.

The status is Slurm's while the job is queued or running (``squeue``). Once it has left the queue:
the step's exit code when the batch script wrote it (0: Completed, else Failed, naming the first rank
that exited non-zero); otherwise the end state ``scontrol``/``sacct`` still know (a cancel from outside,
a node failure, the time limit), and when neither knows, Canceled if amldist asked for it, else Failed
"ended without a result". Accounting (``sacct``) is used when configured, never required. A run whose
submission was interrupted before ``sbatch`` answered has no id: its job is found by its marker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from amldist.backends.base import CANCELED, COMPLETED, FAILED, TERMINAL, JobRecord, OutputRecord, RankRecord
from amldist.backends.slurm import attempts, commands, script
from amldist.engine import state_files
from amldist.engine.state_files import StateFileError, TypedFields, read_small_text
from amldist.errors import UserError
from amldist.rules.faults import parse_fault

META = "slurm.json"
CANCEL_FILE = "cancel_requested"
# Slurm's end states that say what ended the job when it was not its processes: the diagnosis's cause
# (amldist.backends.base.RunLogs.ended_by) and a retry's class (preemption, node)
ENDED_BY = {"PREEMPTED": "preempted", "NODE_FAIL": "node-failure", "BOOT_FAIL": "node-failure",
            "TIMEOUT": "time-limit"}
TIME_LIMIT_FILE = "time_limit"  # the batch script was warned before the time limit (script.warned_launch)
STOPPED = (128 + 15, 128 + 9)  # how a task stopped by srun after another one failed exits
MAX_META_BYTES = 4 * 1024 * 1024
MAX_FAULTS = 64  # --inject is repeatable; more faults than this in one drill are not a drill amldist ran


class SlurmStateError(StateFileError):
    """A ``slurm.json`` that is not what amldist writes (exit 1: the run's record is unreadable)."""

    def __init__(self, run_dir: str, what: str):
        super().__init__(f"Slurm run {os.path.basename(os.path.normpath(run_dir))!r}: its {META} {what}", run_dir)


@dataclass(frozen=True)
class JobMeta:
    """A job's ``slurm.json``, typed."""

    run_dir: str
    name: str
    job_id: str | None  # None: the submission was interrupted before sbatch answered
    tasks: tuple[tuple[str, str, int], ...]  # (label, log path inside user_logs, node) by task id
    outputs: tuple[tuple[str, str, str | None], ...]  # (name, path inside the run folder, type)
    faults: tuple[str, ...] = ()  # --inject: the drill's faults as written (re-parsed: only ones amldist injects)
    attempt: dict | None = None  # a retry: {"number": k, "of": the first attempt's name}
    exclude: str | None = None  # the nodes this attempt was kept off (sbatch --exclude)
    partition: str | None = None  # --partition, when given (where a retry looks for another node)
    kind = "job"

    @property
    def marker(self) -> str:
        return commands.run_marker(self.run_dir)


@dataclass(frozen=True)
class StepMeta:
    name: str
    needs: tuple[str, ...]
    run_dir: str  # inside the pipeline's run folder
    job_id: str | None


@dataclass(frozen=True)
class PipelineMeta:
    """A pipeline's ``slurm.json``, typed."""

    run_dir: str
    name: str
    steps: tuple[StepMeta, ...]
    outputs: tuple[tuple[str, str], ...]  # (name, path inside the run folder)
    kind = "pipeline"


def read_meta(run_dir: str) -> JobMeta | PipelineMeta | None:
    """``run_dir``'s ``slurm.json``, typed; None when there is none; SlurmStateError when it is not one
    amldist wrote (see the module docstring)."""
    try:
        data = state_files.read_json_object(os.path.join(run_dir, META), MAX_META_BYTES)
    except ValueError as exc:
        raise SlurmStateError(run_dir, str(exc)) from None
    if data is None:
        return None
    fields = TypedFields(run_dir, lambda what: SlurmStateError(run_dir, what))
    if data.get("kind") == "pipeline":
        return _pipeline_meta(fields, data)
    return _job_meta(fields, data)


def _job_id(fields: TypedFields, entry: dict, where: str) -> str | None:
    job_id = fields.get(entry, "job_id", (str,), where)
    if job_id is not None and not commands.is_job_id(job_id):
        raise fields.error(f"has {where}job_id {job_id[:40]!r}, not a Slurm job id")
    return job_id


def _job_meta(fields: TypedFields, data: dict) -> JobMeta:
    tasks = fields.get(data, "tasks", (list,), "") or []
    logs = os.path.join(fields.run_dir, "user_logs")
    typed_tasks = []
    for i, task in enumerate(tasks):
        if not (isinstance(task, list) and len(task) == 3 and isinstance(task[0], str)
                and isinstance(task[2], int) and not isinstance(task[2], bool)):
            raise fields.error(f"has tasks[{i}] that is not [label, log, node]")
        typed_tasks.append((task[0], os.path.join(logs, fields.name(task[1], f"tasks[{i}] log")), task[2]))
    outputs = []
    for name, entry in (fields.get(data, "outputs", (dict,), "") or {}).items():
        fields.name(name, "an output named")
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and (entry[1] is None or isinstance(entry[1], str))):
            raise fields.error(f"has outputs.{name} that is not [path, type]")
        outputs.append((name, fields.inside(entry[0], f"outputs.{name}"), entry[1]))
    return JobMeta(fields.run_dir, fields.get(data, "name", (str,), "", required=True), _job_id(fields, data, ""),
                   tuple(typed_tasks), tuple(outputs), faults=_faults(fields, data), attempt=_attempt(fields, data),
                   exclude=_option_word(fields, data, "exclude"), partition=_option_word(fields, data, "partition"))


def _faults(fields: TypedFields, data: dict) -> tuple[str, ...]:
    """The drill's faults, each a text amldist could have injected (parsed again), at most MAX_FAULTS."""
    texts = []
    for i, entry in enumerate(fields.items(data, "faults", list)[:MAX_FAULTS]):
        text = fields.get(entry, "text", (str,), f"faults[{i}].", required=True)
        try:
            parse_fault(text)
        except UserError:
            raise fields.error(f"has faults[{i}].text that is not a fault amldist injects") from None
        texts.append(text)
    return tuple(texts)


def _attempt(fields: TypedFields, data: dict) -> dict | None:
    entry = fields.get(data, "attempt", (dict,), "")
    if entry is None:
        return None
    number = fields.get(entry, "number", (int,), "attempt.", required=True)
    first = fields.get(entry, "of", (str,), "attempt.", required=True)
    return {"number": number, "of": fields.name(first, "attempt.of")}


def _option_word(fields: TypedFields, data: dict, key: str) -> str | None:
    """An sbatch option's value as amldist wrote it: one word (script.check_option's), else the file is not ours."""
    value = fields.get(data, key, (str,), "")
    if value is not None and not script.OPTION_VALUE.match(value):
        raise fields.error(f"has {key} {value[:40]!r}, not one sbatch word")
    return value


def _pipeline_meta(fields: TypedFields, data: dict) -> PipelineMeta:
    steps = []
    for i, entry in enumerate(fields.items(data, "steps", list)):
        where = f"steps[{i}]."
        needs = fields.get(entry, "needs", (list,), where) or []
        if not all(isinstance(n, str) for n in needs):
            raise fields.error(f"has {where}needs that are not all names")
        steps.append(StepMeta(fields.get(entry, "name", (str,), where, required=True), tuple(needs),
                              fields.path(entry, "run_dir", where, required=True), _job_id(fields, entry, where)))
    outputs = []
    for name, path in (fields.get(data, "outputs", (dict,), "") or {}).items():
        fields.name(name, "an output named")
        if not isinstance(path, str):
            raise fields.error(f"has outputs.{name} that is not a path")
        outputs.append((name, fields.inside(path, f"outputs.{name}")))
    return PipelineMeta(fields.run_dir, fields.get(data, "name", (str,), "", required=True), tuple(steps),
                        tuple(outputs))


def write_meta(run_dir: str, meta: dict) -> None:
    """``slurm.json``, replaced whole (a reader never sees half of it; a link there is replaced, never
    written through)."""
    state_files.write_state(run_dir, meta, META)


def request_cancel(run_dir: str) -> None:
    """``state/cancel_requested``, never through a link or a file already there."""
    state = os.path.join(run_dir, "state")
    if os.path.isdir(state) and not os.path.islink(state):
        state_files.create_marker(state, CANCEL_FILE, "amldist job cancel\n")


def cancel_requested(run_dir: str) -> bool:
    return state_files.marker_present(os.path.join(run_dir, "state"), CANCEL_FILE)


def rank_exits(meta: JobMeta) -> dict[int, int]:
    """rank -> exit code, for the tasks that wrote one (only the run's own tasks' files are read)."""
    found = {}
    for rank in range(len(meta.tasks)):
        code = read_small_text(os.path.join(meta.run_dir, "state", f"rank_{rank}.exit"))
        try:
            found[rank] = int(code or "")
        except ValueError:
            continue
    return found


def job_id_of(meta: JobMeta) -> str | None:
    """The run's Slurm job: the recorded id, else (an interrupted submission) the one carrying its marker."""
    if meta.job_id is not None:
        return meta.job_id
    found = commands.jobs_of(meta.marker)
    return found[0] if found else None


def status_of(meta: JobMeta) -> tuple[str, str | None, str | None, str | None]:
    """(status, error, stopped_by, Slurm's end state) as the module docstring says; the end state only when
    Slurm was asked: the batch script never wrote the step's exit code, or every task that failed was stopped
    from outside (143, 137: a preemption, a node failure, a cancel), or srun said 0 while a task did not."""
    state = os.path.join(meta.run_dir, "state")
    job_id = job_id_of(meta)
    queued = commands.queue_state(job_id, meta.marker) if job_id else None
    if queued is not None and queued != "CG":
        return commands.QUEUE_STATES.get(queued, "Running"), None, None, None
    code = read_small_text(os.path.join(state, "exit_code"))
    canceled = cancel_requested(meta.run_dir)
    exits = rank_exits(meta)
    if code is not None and not canceled:
        if code == "0" and len(exits) == len(meta.tasks) and not any(exits.values()):
            return COMPLETED, None, None, None
        if code != "0" and any(c not in STOPPED for c in exits.values() if c != 0):
            return FAILED, failure(meta, code), None, None  # a task failed on its own: the job's own failure
    if queued == "CG":
        return "Finalizing", None, None, None
    final = commands.final_state(job_id, meta.marker, meta.name) if job_id else None
    if canceled:
        return CANCELED, None, "amldist job cancel", final
    if final in commands.FINAL_STATES and (code is None or final not in ("COMPLETED", "FAILED")):
        status, why = commands.FINAL_STATES[final]
        if status == CANCELED:
            return CANCELED, "the Slurm job was canceled (scancel)", "scancel", final
        return status, why or failure(meta, None), None, final
    if code is not None:
        return FAILED, failure(meta, code), None, final
    if job_id is None:
        return FAILED, "the submission was interrupted before sbatch gave a job id", None, None
    return FAILED, f"Slurm job {job_id} ended without a result (canceled or its node failed)", None, None


def failure(meta: JobMeta, step_code: str | None) -> str:
    """The fault drill's first fault that fired, when one did (the drill, not the script, ended the run); else
    which rank failed, with its exit code and log: the first by rank that exited non-zero on its own, before
    those that the step's end stopped (SIGTERM, SIGKILL: 143, 137)."""
    fired = [f for f in attempts.fired_faults(meta) if f["fired_at"] is not None]
    if fired:
        first = min(fired, key=lambda f: f["fired_at"])
        return (f"the fault drill's --inject {first['text']} struck {', '.join(first['processes'])} "
                f"{first['seconds']:.1f} s after it started")
    if warned(meta):
        return "the job's time limit was near: Slurm's warning (sbatch --signal) stopped its tasks with SIGTERM"
    bad = sorted(((c in STOPPED, r), c) for r, c in rank_exits(meta).items() if c != 0)
    if bad:
        (_, rank), code = bad[0]
        return (f"{meta.tasks[rank][0]} of job {meta.name} exited with code {code}; see its log in "
                f"{meta.run_dir}/user_logs")
    if step_code == "0":  # the step said 0, yet a task never wrote its exit code
        return "a task ended without an exit code (killed with its node, or from outside)"
    return f"the job step exited with code {step_code[:20]}" if step_code else "the job failed"


def seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end.replace("Z", "+00:00"))
                - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return None


def job_meta(run_dir: str) -> JobMeta:
    """The job's typed ``slurm.json``; SlurmStateError when there is none or it is a pipeline's."""
    meta = read_meta(run_dir)
    if not isinstance(meta, JobMeta):
        raise SlurmStateError(run_dir, "is missing" if meta is None else "is a pipeline's, not a job's")
    return meta


def record(run_dir: str, *, meta: JobMeta | None = None) -> JobRecord:
    """The record of the Slurm run in ``run_dir``; SlurmStateError when it is not one."""
    meta = meta or job_meta(run_dir)
    status, error, stopped_by, final = status_of(meta)
    exits = rank_exits(meta)
    ranks = tuple(RankRecord(label=label, rank=i if label.startswith("rank") else None, node=node,
                             exit_code=exits.get(i), log=log)
                  for i, (label, log, node) in enumerate(meta.tasks))
    outputs = tuple(OutputRecord(name, path, kind) for name, path, kind in meta.outputs)
    state = os.path.join(run_dir, "state")
    start = _time_text(os.path.join(state, "started"))
    end = _time_text(os.path.join(state, "ended")) if status in TERMINAL else None
    return JobRecord(name=meta.name, backend="slurm", status=status, start_time=start, end_time=end,
                     duration_seconds=seconds_between(start, end),
                     ranks=ranks, outputs=outputs, error=error, stopped_by=stopped_by,
                     details={"run_dir": meta.run_dir, "slurm_job_id": meta.job_id,
                              "logs": os.path.join(meta.run_dir, "user_logs"),
                              "faults": attempts.fired_faults(meta), "attempt": meta.attempt,
                              "exclude": meta.exclude,
                              "ended_by": ENDED_BY.get(final or "") or (
                                  "time-limit" if status == FAILED and warned(meta) else None)})


def warned(meta: JobMeta) -> bool:
    """Whether Slurm warned the batch script that the time limit was near (``state/time_limit``)."""
    return read_small_text(os.path.join(meta.run_dir, "state", TIME_LIMIT_FILE), 64) is not None


def _time_text(path: str) -> str | None:
    """A time the batch script wrote (``date -u +%Y-%m-%dT%H:%M:%SZ``), None when the file holds anything else."""
    text = read_small_text(path, 64)
    return text if text and seconds_between(text, text) == 0 else None
