"""The contract every backend keeps, written once (after torchx's ``Scheduler``).

A backend (``local``, ``azureml``, ``slurm``, or one an installed package registers under the entry-point
group ``amldist.backends``: see :mod:`amldist.backends`) subclasses :class:`Backend`. What it provides:

- ``options_type``: a frozen dataclass of the backend's own options, a subclass of :class:`Options`;
  :meth:`Backend.options` builds it from the parsed CLI arguments (each field from the argument of
  the same name) or from keywords, so the CLI and the Python API give a backend the same thing;
- its command-line flags, as data (:class:`Flag`): ``submit_flags`` fill its options, ``job_flags`` say
  where its jobs are (its constructor's keywords, :meth:`Backend.from_args`), ``select_flag`` picks it
  (``--local``); the CLI adds them and refuses them for a job going to another backend;
- :meth:`Backend.plan` ``(prepared, options) -> Plan``: *pure* (starts nothing, writes nothing,
  sends nothing, needs no credentials). The contract tells a :class:`~amldist.submit.prepared.PreparedJob`
  from a :class:`~amldist.submit.pipeline.PreparedPipeline` once (by type) and calls the backend's
  :meth:`~Backend.plan_job` or :meth:`~Backend.plan_pipeline`. The :class:`Plan` describes itself
  (``describe()``, what ``--dry-run`` prints, secrets masked) and serialises to JSON (``to_json()``);
- :meth:`Backend.run` ``(plan) -> JobRecord``: the only step that acts, doing what the plan says
  (:meth:`~Backend.run_job` or :meth:`~Backend.run_pipeline`, by the plan's ``kind``);
- the lifecycle verbs of ``amldist job``: :meth:`~Backend.list`, :meth:`~Backend.show`,
  :meth:`~Backend.logs`, :meth:`~Backend.cancel`, :meth:`~Backend.download`, each returning (or
  printing and returning) a :class:`JobRecord`. Where to look (a run root, a workspace, a cluster)
  is given to the backend's constructor, as ``get_backend(name, **settings)`` passes it;
- :meth:`~Backend.run_logs`: what ``amldist job diagnose`` reads (:class:`RunLogs`); by default the
  backend's own :meth:`~Backend.download` of the logs, so every backend is diagnosed.

A :class:`JobRecord` is frozen and the same for every backend and for jobs and pipelines alike:
name, ``kind`` (``"job"`` or ``"pipeline"``), the status in Azure ML's words (:data:`STATUSES`),
start and end times, ranks (a job) or steps (a pipeline), outputs and a URL. ``to_json()`` is what
``amldist job show --format json`` prints. User mistakes are raised as :class:`amldist.errors.UserError`.

``amldist submit`` and :func:`amldist.run_local` both go through :func:`amldist.backends.submit.submit`
(load once, validate once, plan, run): a backend never re-implements that sequence.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import signal
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Mapping, TypeVar

from amldist.rules.counts import count_option

# Azure ML's job statuses (azure.ai.ml.entities JobStatus); every backend reports in these words.
NOT_STARTED, STARTING, QUEUED, PREPARING, RUNNING = "NotStarted", "Starting", "Queued", "Preparing", "Running"
FINALIZING, CANCEL_REQUESTED, COMPLETED, FAILED, CANCELED = (
    "Finalizing", "CancelRequested", "Completed", "Failed", "Canceled")
PROVISIONING, NOT_RESPONDING, PAUSED, UNKNOWN = "Provisioning", "NotResponding", "Paused", "Unknown"
STATUSES = (NOT_STARTED, STARTING, PROVISIONING, PREPARING, QUEUED, RUNNING, FINALIZING, CANCEL_REQUESTED,
            COMPLETED, FAILED, CANCELED, NOT_RESPONDING, PAUSED, UNKNOWN)
TERMINAL = (COMPLETED, FAILED, CANCELED)
# In the first attempt's run folder: `amldist job cancel` stopped the retries (Backend.cancel_retries)
RETRIES_CANCELED_FILE = "retries_canceled"


@dataclass(frozen=True)
class RankRecord:
    """One process of a job: ``label`` ("rank 0", "worker 1", "mpirun"), its exit code (None while it
    runs; negative: stopped by that signal) and its log."""

    label: str
    rank: int | None = None
    node: int = 0
    exit_code: int | None = None
    log: str | None = None
    pid: int | None = None


@dataclass(frozen=True)
class StepRecord:
    """One step of a pipeline: its status in Azure ML's words and the exit code of its failing process
    (the rank's own code, not the step runner's)."""

    name: str
    status: str = NOT_STARTED
    exit_code: int | None = None
    start_time: str | None = None
    end_time: str | None = None
    duration_seconds: float | None = None
    needs: tuple[str, ...] = ()
    run_dir: str | None = None  # a local step's run folder
    note: str | None = None  # why it did not start, when it did not
    job: str | None = None  # the step's own job name, where the service gives it one (Azure ML's child job)


@dataclass(frozen=True)
class OutputRecord:
    name: str
    path: str | None = None  # a local path, or the URI on a remote backend
    type: str | None = None


@dataclass(frozen=True)
class JobRecord:
    """What a backend knows about one job or pipeline run (see the module docstring)."""

    name: str
    backend: str
    kind: str = "job"  # "job" | "pipeline"
    status: str = UNKNOWN
    start_time: str | None = None  # ISO 8601
    end_time: str | None = None
    duration_seconds: float | None = None
    ranks: tuple[RankRecord, ...] = ()
    steps: tuple[StepRecord, ...] = ()
    outputs: tuple[OutputRecord, ...] = ()
    url: str | None = None
    error: str | None = None
    stopped_by: str | None = None  # "amldist job cancel", "SIGINT", ... when Canceled
    details: Mapping[str, Any] = field(default_factory=dict)  # the backend's own fields (run_dir, compute, ...)

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL

    def output(self, name: str) -> OutputRecord | None:
        return next((o for o in self.outputs if o.name == name), None)

    def step(self, name: str) -> StepRecord | None:
        return next((s for s in self.steps if s.name == name), None)

    def to_json(self) -> dict:
        """The record as ``amldist job show --format json`` prints it (backend details included)."""
        data = {"name": self.name, "backend": self.backend, "kind": self.kind, "status": self.status,
                "start_time": self.start_time, "end_time": self.end_time,
                "duration_seconds": self.duration_seconds, "url": self.url, "error": self.error,
                "stopped_by": self.stopped_by,
                "outputs": {o.name: {"path": o.path, "type": o.type} for o in self.outputs}}
        if self.kind == "pipeline":
            data["steps"] = [dataclasses.asdict(s) | {"needs": list(s.needs)} for s in self.steps]
        else:
            data["ranks"] = [dataclasses.asdict(r) for r in self.ranks]
        details = {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for k, v in self.details.items()}
        return {**data, **details}


def signal_name(signum: int | None) -> str | None:
    """``SIGTERM`` for 15: how records name the signal that stopped a process (``stopped_by``, exit codes);
    :func:`exit_code_of` reads the name back."""
    if signum is None:
        return None
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_code_of(record: JobRecord) -> int:
    """What ``amldist submit`` exits with for a run that ended as ``record``: 0 when it completed or is
    still running remotely, 1 when it failed, 128+N when a signal N stopped it (a cancel is SIGTERM)."""
    if record.details.get("stream_interrupted"):  # Ctrl-C while following the logs; the job runs on
        return 130
    if record.status == FAILED:
        return 1
    if record.status != CANCELED:
        return 0
    stopped_by = record.stopped_by or ""
    try:
        return 128 + int(signal.Signals[stopped_by])
    except KeyError:
        return 128 + int(signal.SIGTERM)  # `amldist job cancel` sends SIGTERM


@dataclass(frozen=True)
class Options:
    """The options every backend reads; a backend's ``options_type`` subclasses it with its own fields."""

    name: str | None = None  # --name: the job's name; None lets the backend choose one
    stream: bool = False  # follow the logs while it runs
    dry_run: bool = False

    @classmethod
    def from_args(cls, args=None, **given):
        """The options from parsed CLI arguments (each field from the attribute of the same name, when
        present and not None) and then ``given`` keywords, which win."""
        values = {}
        for item in dataclasses.fields(cls):
            value = getattr(args, item.name, None) if args is not None else None
            if value is not None:
                values[item.name] = value
        values.update({k: v for k, v in given.items() if v is not None})
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"{cls.__name__} has no option(s) {', '.join(sorted(unknown))}")
        return cls(**values)


class Plan(abc.ABC):
    """Everything one submission will do, made by :meth:`Backend.plan` (pure) and acted on by
    :meth:`Backend.run`. Subclasses are frozen dataclasses."""

    backend: ClassVar[str] = ""
    kind: ClassVar[str] = "job"  # "job" | "pipeline"

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        """The job's name as planned (None when the service will choose it)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """What ``--dry-run`` prints (secrets masked)."""

    @abc.abstractmethod
    def to_json(self) -> dict:
        """The plan as JSON-ready data (secrets masked)."""


@dataclass(frozen=True)
class Flag:
    """One command-line flag a backend owns, declared as data so that ``amldist submit`` and ``amldist job``
    add it to their parsers, in the backend's own group, and refuse it when the job goes to another backend.

    ``names`` are the option strings (``("-w", "--workspace")``); ``dest`` is the field of the backend's
    options (``submit``) or the keyword of its constructor (``job`` verbs) that gets the value; ``kwargs``
    are argparse's (``metavar``, ``type``, ``action="store_true"``...). Two backends declaring the same
    names share the flag (``--python`` is local's and Slurm's)."""

    names: tuple[str, ...]
    dest: str
    help: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)


# ``--retry N`` and ``--retry-on CAUSES``, declared once for every backend whose runs the retry loop
# (amldist.diagnosis.retry) can resubmit: it lists them in its ``submit_flags`` and gives its options the fields
# the loop passes (checkpoints, checkpoint_dir, attempt_of, attempt, inject, retry, retry_on).
RETRY_FLAGS = (
    Flag(("--retry",), "retry", "resubmit a run that failed for a cause other than its code (preemption, node "
         "fault) up to N times; the attempts share AMLDIST_CHECKPOINT_DIR", {"metavar": "N",
                                                                            "type": count_option("retry")}),
    Flag(("--retry-on",), "retry_on", "cause classes to retry, each with its own budget of N: preemption,node "
         "(default), hang, other; a failure of the code is never retried", {"metavar": "CAUSES"}),
)


@dataclass(frozen=True)
class ProcessLog:
    """One process of an ended job as ``amldist job diagnose`` reads it: its log on this machine, its exit
    code and when the backend saw it end (seconds since the epoch; None when it does not know)."""

    label: str
    rank: int | None
    node: int | None
    log: str | None
    exit_code: int | None = None
    exit_time: float | None = None


@dataclass(frozen=True)
class RunLogs:
    """What a backend hands ``amldist job diagnose`` about one ended job (:meth:`Backend.run_logs`).

    Either ``ranks`` (each process with its log, read in place) or ``folder``: logs downloaded in Azure ML's
    layout (``user_logs/std_log_process_NN.txt``, the MPI launcher's log), found there by name. ``launcher``
    is mpirun's own log (it names the failing rank under MPI). ``spec`` is the job's fields as its YAML has
    them (``distribution``, ``resources``, ``environment_variables``), or ``spec_file`` a YAML file holding
    them. ``log_times``: whether a log's modification time is when its process last wrote it (logs read
    where they were written), not when they were downloaded. ``step``: a pipeline's step these logs are of.
    ``faults``: what ``--inject`` did to the run (:mod:`amldist.rules.faults`), which is then the cause.
    ``service_error``: what the service said about the failure; a preemption it names is the cause
    (:mod:`amldist.diagnosis.service`).
    ``ended_by``: what the platform says ended the run when its processes did not (``preempted``,
    ``node-failure``, ``time-limit``: Slurm's PREEMPTED, NODE_FAIL, TIMEOUT or its warning before it), which is
    then the cause unless the drill struck first.
    """

    name: str
    status: str
    backend: str = ""
    ranks: tuple[ProcessLog, ...] = ()
    folder: str | None = None
    launcher: ProcessLog | None = None
    spec: Mapping[str, Any] | None = None
    spec_file: str | None = None
    log_times: bool = True
    step: str | None = None
    faults: tuple = ()  # the fault drill's faults as recorded ({"text", "kind", "fired_at", "processes", ...})
    evidence_dir: str | None = None  # the ranks' Flight Recorder dumps and error files (amldist.runtime.evidence)
    code_copy: str | None = None  # the run's copy of the code, whose paths the diagnosis shows as ...
    code_source: str | None = None  # ... the user's own folder it was copied from
    service_error: str | None = None  # the service's own words on why the run failed (Azure ML's run error)
    ended_by: str | None = None  # "preempted" | "node-failure" | "time-limit": the platform ended the run


def first_failed_step(record: JobRecord) -> StepRecord | None:
    """The failed step of a pipeline that started first (the one whose failure the others followed)."""
    failed = [s for s in record.steps if s.status == FAILED]
    return min(failed, key=lambda s: s.start_time or "") if failed else None


O = TypeVar("O", bound=Options)
P = TypeVar("P", bound=Plan)


class Backend(abc.ABC, Generic[O, P]):
    """A place jobs run (see the module docstring). Subclasses set ``name`` and ``options_type``, and may
    declare their flags (``submit_flags``, ``job_flags``, ``select_flag``)."""

    name: ClassVar[str] = ""
    options_type: ClassVar[type[Options]] = Options
    select_flag: ClassVar[str | None] = None  # a flag that picks this backend: an alias of --backend NAME
    submit_flags: ClassVar[tuple[Flag, ...]] = ()  # `amldist submit`'s flags that fill options_type's fields
    job_flags: ClassVar[tuple[Flag, ...]] = ()  # `amldist job VERB`'s flags: where to look (constructor keywords)

    @classmethod
    def from_args(cls, args) -> "Backend":
        """The backend the job verbs use, built from its ``job_flags`` (each ``dest`` a constructor keyword)."""
        return cls(**{f.dest: getattr(args, f.dest) for f in cls.job_flags if getattr(args, f.dest, None) is not None})

    def options(self, args=None, **given) -> O:
        """This backend's typed options, from CLI arguments and/or keywords."""
        return self.options_type.from_args(args, **given)

    # --- submit: plan (pure), then run (acts); jobs and pipelines told apart here, once -------------
    def plan(self, prepared, options: O) -> P:
        """Everything the run will do; starts, writes and sends nothing. A pipeline goes to
        :meth:`plan_pipeline` (its steps already typed jobs), anything else to :meth:`plan_job`."""
        from amldist.submit.pipeline import PreparedPipeline
        from amldist.submit.sweep import PreparedSweep

        if isinstance(prepared, PreparedPipeline):
            return self.plan_pipeline(prepared, options)
        if isinstance(prepared, PreparedSweep):
            return self.plan_sweep(prepared, options)
        return self.plan_job(prepared, options)

    def run(self, plan: P) -> JobRecord:
        """Do what ``plan`` says (:meth:`run_pipeline` for a pipeline's plan, else :meth:`run_job`); the
        record of the run as it stands at the end of the call."""
        if plan.kind == "sweep":
            return self.run_sweep(plan)
        return self.run_pipeline(plan) if plan.kind == "pipeline" else self.run_job(plan)

    @abc.abstractmethod
    def plan_job(self, prepared, options: O) -> P:
        """The plan of one command job (:class:`~amldist.submit.prepared.PreparedJob`)."""

    @abc.abstractmethod
    def run_job(self, plan: P) -> JobRecord:
        """Run a job's plan."""

    def plan_pipeline(self, prepared, options: O) -> P:
        """The plan of a pipeline (:class:`~amldist.submit.pipeline.PreparedPipeline`); by default refused."""
        from amldist.errors import UserError

        raise UserError(f"the {self.name} backend runs single jobs, not pipelines",
                        hint="submit each step's job, or choose a backend that runs pipelines")

    def run_pipeline(self, plan: P) -> JobRecord:
        raise NotImplementedError(f"{type(self).__name__} plans pipelines but does not run them")

    def plan_sweep(self, prepared, options: O) -> P:
        """The plan of a sweep job (:class:`~amldist.submit.sweep.PreparedSweep`); by default refused."""
        from amldist.errors import UserError

        raise UserError(f"{prepared.source}: a sweep job runs on Azure ML or locally (--local); the {self.name} "
                        "backend runs command jobs and pipelines", hint="submit it with --local, or to Azure ML")

    def run_sweep(self, plan: P) -> JobRecord:
        raise NotImplementedError(f"{type(self).__name__} plans sweeps but does not run them")

    def describe(self, plan: P) -> str:
        return plan.describe()

    def has(self, name: str) -> bool:
        """Whether this backend knows a job called ``name`` without asking a service (``amldist job NAME``
        goes to the backend that has it); False unless a backend can tell cheaply."""
        return False

    def has_any(self) -> bool:
        """Whether this backend holds jobs it can list without asking a service (``amldist job list`` with no
        flag lists the first backend that does)."""
        return False

    def can_look_up(self) -> bool:
        """Whether a NAME that no backend ``has`` may still be this backend's (a configured service to ask)."""
        return False

    def show_text(self, record: JobRecord) -> str:
        """``amldist job show`` in text; a backend may say more."""
        lines = [f"name: {record.name}", f"kind: {record.kind}", f"status: {record.status}",
                 f"start: {record.start_time or '-'}", f"end: {record.end_time or '-'}"]
        lines += [f"step {s.name}: {s.status}" for s in record.steps]
        lines += [f"output {o.name}: {o.path or '-'}" for o in record.outputs]
        return "\n".join(lines + ([f"url: {record.url}"] if record.url else []))

    # --- the lifecycle verbs of `amldist job` -------------------------------------------------
    @abc.abstractmethod
    def list(self, *, max_results: int | None = None) -> list[JobRecord]:
        """The jobs this backend knows, newest first."""

    @abc.abstractmethod
    def show(self, name: str) -> JobRecord:
        """One job; UserError (exit 2) naming it when there is none."""

    @abc.abstractmethod
    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        """Print a job's logs (a pipeline's: each step's, or ``step``'s alone) to ``out``; the record."""

    @abc.abstractmethod
    def cancel(self, name: str, *, wait: bool = True) -> JobRecord:
        """Stop a running job (a pipeline: every running step); the record afterwards."""

    @abc.abstractmethod
    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        """Copy the logs (and outputs) as ``az ml job download`` does; the paths written."""

    # --- retries (amldist.diagnosis.retry): what a backend that can retry a run adds ---------------
    def wait_for_end(self, record: JobRecord) -> JobRecord:
        """``record`` once its run has ended. A backend whose ``run`` returns only when the run has ended
        (local, Slurm) returns it as it is; one that returns once the job is sent (Azure ML) watches it here."""
        return record

    def retry_options(self, record: JobRecord, signature: str | None, scope: str | None,
                      node: int | None = None) -> dict:
        """Options for the attempt after ``record`` failed with the diagnosed ``signature`` (of ``scope``),
        beyond the name, the attempt's place and the shared checkpoint folder; keys are fields of
        ``options_type``. ``node``: the index of the node a preemption or node fault was diagnosed on (None
        for another cause, or when the diagnosis names no node), which a backend may keep the next attempt
        off (Slurm: ``--exclude``)."""
        return {}

    def list_attempts(self, first: str) -> list[JobRecord]:
        """At least every attempt of the run whose first attempt is ``first`` (``job show`` lists them); by default
        every job :meth:`list` gives. A backend that can ask its service for them alone does (Azure ML: by the
        jobs' properties), so ``job show`` does not read a whole workspace."""
        return self.list()

    def cancel_retries(self, first: JobRecord) -> bool:
        """Record that no further attempt of the run whose first attempt is ``first`` may start (``amldist job
        cancel`` while ``--retry`` runs; the retry loop asks :meth:`retries_canceled` before each attempt). By
        default a marker in the first attempt's run folder, where its record names one on this machine (local,
        Slurm); False where there is none (the attempts running are canceled all the same)."""
        run_dir = first.details.get("run_dir")
        if not isinstance(run_dir, str) or not os.path.isdir(run_dir):
            return False
        from amldist.engine import state_files

        state_files.create_marker(run_dir, RETRIES_CANCELED_FILE, "amldist job cancel\n")
        return True

    def retries_canceled(self, first: JobRecord) -> bool:
        """Whether :meth:`cancel_retries` was asked for the run whose first attempt is ``first``."""
        from amldist.engine import state_files

        run_dir = first.details.get("run_dir")
        return isinstance(run_dir, str) and state_files.marker_present(run_dir, RETRIES_CANCELED_FILE)

    def checkpoint_dir_of(self, record: JobRecord) -> str | None:
        """Where the attempts after ``record`` (the first) find its checkpoints; None when the backend keeps
        no shared checkpoint folder, which means it cannot retry (see :func:`amldist.diagnosis.retry`)."""
        return None

    # --- what `amldist job diagnose` reads -----------------------------------------------------
    def run_logs(self, name: str, folder: str) -> RunLogs:
        """The logs of ended job ``name`` (a pipeline: of its failed step that started first), for the
        diagnosis. By default :meth:`download` fetches them into ``folder`` (a fresh temporary folder) in
        Azure ML's layout, and the record's ranks give each rank's exit code; a backend whose logs are on
        this machine returns them in place instead."""
        record = ended_record(self, name)
        step = first_failed_step(record) if record.kind == "pipeline" else None
        if record.kind == "pipeline" and step is None:
            return RunLogs(name, record.status, self.name)
        self.download(name, folder, step=step.name if step else None)
        ranks = tuple(ProcessLog(r.label, r.rank, r.node, None, r.exit_code) for r in record.ranks)
        return RunLogs(name, record.status, self.name, ranks=ranks, folder=folder, log_times=False,
                       step=step.name if step else None)


def ended_record(backend: Backend, name: str) -> JobRecord:
    """``name``'s record once it has ended; one line (exit 1) while it runs: a diagnosis reads what it left."""
    record = backend.show(name)
    if not record.ended:
        from amldist.errors import UserError

        raise UserError(f"job {name} is {record.status}; its logs can be diagnosed once it has ended", exit_code=1,
                        hint="'amldist job cancel NAME' ends a job that hangs; with AMLDIST_STALL_TIMEOUT set "
                        "it ends by itself, naming the stuck rank")
    return record
