"""The ``local`` backend: processes on this machine with Azure ML's launcher environment.

- ``plan`` is pure: a job is planned by :mod:`amldist.backends.local.plan`, a pipeline by
  :mod:`amldist.backends.local.pipeline_run` (each step as a job), a sweep by
  :mod:`amldist.backends.local.sweep_run` (each trial as a job); each comes back as a
  :class:`~amldist.backends.base.Plan` that describes itself (what ``--dry-run --local`` prints);
- ``run`` creates the run folder and runs exactly the planned processes
  (:func:`amldist.backends.local.supervisor.launch`, or the pipeline's step runner), then returns
  the run's record read back from its ``status.json``;
- the job verbs read ``status.json`` under the run root (:mod:`amldist.backends.local.jobs`), jobs
  and pipelines alike.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from amldist.backends.base import (CANCELED, FAILED, RETRY_FLAGS, Backend, Flag, JobRecord, Options, Plan, ProcessLog,
                                   RunLogs, ended_record, first_failed_step, signal_name)
from amldist.backends.local import jobs, log_files, records
from amldist.backends.local.plan import LocalPlan, describe, plan
from amldist.backends.local.records import read_record
from amldist.rules.counts import count_option
from amldist.runtime.evidence import EVIDENCE_FOLDER
from amldist.rules.secrets import mask_tree
from amldist.submit.prepared import PreparedWork

DEFAULT_RUN_ROOT = ".amldist/runs"


@dataclass(frozen=True)
class LocalOptions(Options):
    run_root: str = DEFAULT_RUN_ROOT  # run folders live under it, relative to the current directory
    grace_seconds: float = 5.0  # after one rank fails, how long the others get before SIGTERM
    status_line: bool | None = None  # None: a live status line only when stdout is a terminal
    python: str | None = None  # --python: the ranks' python; None: the interpreter amldist runs in
    max_parallel: int | None = None  # --max-parallel: processes a pipeline's steps may run at once
    inject: tuple = ()  # --inject FAULT...: the fault drill (amldist.rules.faults), texts as given
    checkpoint_dir: str | None = None  # AMLDIST_CHECKPOINT_DIR for every process (--retry: the attempts share it)
    checkpoints: bool = False  # --retry: AMLDIST_CHECKPOINT_DIR = <run folder>/checkpoints unless given
    retry: int | None = None  # --retry N: read by the retry loop (amldist.diagnosis.retry), not by plan()
    retry_on: str | None = None  # --retry-on CAUSES: the same
    attempt_of: str | None = None  # a retry: the first attempt's job name (amldist.diagnosis.retry)
    attempt: int = 1  # which attempt this run is
    # run_dir -> the one line that names a failed run's culprit (`amldist submit` passes the diagnosis's);
    # None: the error line names the first process that exited
    explain: object = None


@dataclass(frozen=True)
class LocalJobPlan(Plan):
    backend = "local"
    kind = "job"
    local: LocalPlan

    @property
    def name(self) -> str:
        return self.local.job_name

    @property
    def run_dir(self) -> str:
        return self.local.run_dir

    def describe(self) -> str:
        return describe(self.local)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self.local)
        data.pop("explain", None)  # a function, not part of what the run does
        data["distribution"] = data.pop("kind")  # "kind" is job|pipeline in every plan and record
        return mask_tree({"backend": self.backend, "kind": self.kind, **data})


@dataclass(frozen=True)
class LocalPipelinePlan(Plan):
    backend = "local"
    kind = "pipeline"
    pipeline: object  # amldist.backends.local.pipeline_run.PipelinePlan (imported when running: job verbs skip it)

    @property
    def name(self) -> str:
        return self.pipeline.name

    @property
    def run_dir(self) -> str:
        return self.pipeline.run_dir

    def describe(self) -> str:
        from amldist.backends.local import pipeline_run

        return pipeline_run.describe_pipeline(self.pipeline)

    def to_json(self) -> dict:
        return mask_tree({"backend": self.backend, "kind": self.kind, **dataclasses.asdict(self.pipeline)})


@dataclass(frozen=True)
class LocalSweepPlan(Plan):
    backend = "local"
    kind = "sweep"
    sweep: object  # amldist.backends.local.sweep_run.SweepPlan

    @property
    def name(self) -> str:
        return self.sweep.name

    @property
    def run_dir(self) -> str:
        return self.sweep.run_dir

    def describe(self) -> str:
        from amldist.backends.local import sweep_run

        return sweep_run.describe_sweep(self.sweep)

    def to_json(self) -> dict:
        return mask_tree({"backend": self.backend, "kind": self.kind, **dataclasses.asdict(self.sweep)})


class LocalBackend(Backend):
    """Processes on this machine (see the module docstring); ``run_root`` is where the job verbs look."""

    name = "local"
    options_type = LocalOptions
    select_flag = "--local"
    submit_flags = (
        Flag(("--python",), "python", "the python every process runs (default: the one amldist runs in, "
             "whatever PATH says)", {"metavar": "PATH"}),
        Flag(("--max-parallel",), "max_parallel", "pipelines: processes that independent steps may run at once "
             "(default: CPUs)", {"metavar": "N", "type": count_option("max_parallel")}),
        Flag(("--inject",), "inject", "rehearse a failure (repeatable): preempt:node=N,after=S[,grace=S], "
             "kill:rank=R,after=S, hang:rank=R,after=S, slow:rank=R,factor=F[,after=S]",
             {"metavar": "FAULT", "action": "append"}),
        *RETRY_FLAGS,
    )
    job_flags = (Flag(("--run-root",), "run_root", "folder of the local runs (default: .amldist/runs)",
                      {"metavar": "DIR"}),)

    def __init__(self, *, run_root: str | None = None):
        self.run_root = os.path.abspath(run_root or DEFAULT_RUN_ROOT)

    def plan_job(self, prepared: PreparedWork, options) -> LocalJobPlan:
        return LocalJobPlan(plan(prepared, options))

    def plan_sweep(self, prepared, options) -> LocalSweepPlan:
        from amldist.backends.local import sweep_run

        return LocalSweepPlan(sweep_run.plan_sweep(prepared, options))

    def plan_pipeline(self, prepared, options) -> LocalPipelinePlan:
        from amldist.backends.local import pipeline_run

        return LocalPipelinePlan(pipeline_run.plan_pipeline(prepared, options))

    def run_job(self, p: LocalJobPlan) -> JobRecord:
        from amldist.backends.local.supervisor import launch

        return self._ended(p, launch(p.local))

    def run_sweep(self, p: LocalSweepPlan) -> JobRecord:
        from amldist.backends.local import sweep_run

        return self._ended(p, sweep_run.run_sweep(p.sweep))

    def run_pipeline(self, p: LocalPipelinePlan) -> JobRecord:
        from amldist.backends.local import pipeline_run

        return self._ended(p, pipeline_run.run_pipeline(p.pipeline))

    def _ended(self, p: LocalJobPlan | LocalPipelinePlan, code: int) -> JobRecord:
        record = read_record(p.run_dir)
        if record is not None:
            return record
        # stopped before the run folder held a status.json (a signal while the folder was made)
        stopped = code >= 128
        return JobRecord(name=p.name, backend="local", kind="pipeline" if p.kind == "sweep" else p.kind,
                         status=CANCELED if stopped else FAILED,
                         stopped_by=signal_name(code - 128) if stopped else None, details={"run_dir": p.run_dir})

    # --- the job verbs ----------------------------------------------------------------------
    def list(self, *, max_results: int | None = None) -> list[JobRecord]:
        return jobs.list_runs(self.run_root)[: max_results or None]

    def show(self, name: str) -> JobRecord:
        return jobs.get_run(self.run_root, name)

    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        return log_files.logs(self.run_root, name, step=step, rank=rank, follow=follow, out=out)

    def cancel(self, name: str, *, wait: bool = True) -> JobRecord:
        return jobs.cancel(self.run_root, name, wait=wait)

    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        return jobs.download(self.run_root, name, destination, output_name=output_name, all_outputs=all_outputs,
                             step=step)

    def show_text(self, record: JobRecord) -> str:
        return jobs.show_text(record)

    def has(self, name: str) -> bool:
        """Whether a local run called ``name`` exists under the run root."""
        return jobs.has_run(self.run_root, name)

    def has_any(self) -> bool:
        return bool(jobs.run_names(self.run_root))

    def checkpoint_dir_of(self, record: JobRecord) -> str | None:
        """The attempts of a retried local run share ``checkpoints/`` in the first attempt's run folder."""
        return os.path.join(record.details.get("run_dir") or "", "checkpoints")

    def run_logs(self, name: str, folder: str) -> RunLogs:
        """The logs where the run wrote them (``folder`` stays empty); a pipeline's: its failed step's."""
        run = ended_record(self, name)
        step = first_failed_step(run) if run.kind == "pipeline" else None
        if run.kind == "pipeline" and step is None:
            return RunLogs(name, run.status, self.name)
        job = jobs.get_step(run, step.name) if step else run
        run_dir = job.details.get("run_dir") or ""
        times = exit_times(run_dir)
        ranks = tuple(ProcessLog(r.label, r.rank, r.node, r.log, r.exit_code, times.get(r.label)) for r in job.ranks)
        launcher = job.details.get("launcher")
        if launcher is not None:
            launcher = ProcessLog(launcher.label, None, None, launcher.log, launcher.exit_code,
                                  times.get(launcher.label))
        return RunLogs(name, run.status, self.name, ranks=ranks, launcher=launcher,
                       spec_file=os.path.join(run_dir, "job.yml"), step=step.name if step else None,
                       faults=tuple(job.details.get("faults") or ()),
                       evidence_dir=os.path.join(run_dir, "user_logs", EVIDENCE_FOLDER),
                       code_copy=os.path.join(run_dir, "code"), code_source=code_source(run_dir))


def code_source(run_dir: str) -> str | None:
    """The folder the run's code was copied from (status.json's ``code_source``), None when unknown."""
    try:
        state = json.loads((records.read_bytes(run_dir) or b"{}").decode("utf-8"))
    except (ValueError, UnicodeDecodeError, records.StateError):
        return None
    source = state.get("code_source") if isinstance(state, dict) else None
    return source if isinstance(source, str) and os.path.isabs(source) else None


def exit_times(run_dir: str) -> dict:
    """{process label: exit_time} from status.json (read as records reads it: bounded, no links)."""
    try:
        state = json.loads((records.read_bytes(run_dir) or b"{}").decode("utf-8"))
    except (ValueError, UnicodeDecodeError, records.StateError):
        return {}
    entries = list(state.get("ranks") or []) + ([state["launcher"]] if state.get("launcher") else [])
    return {e.get("label"): e.get("exit_time") for e in entries if isinstance(e, dict)
            and isinstance(e.get("exit_time"), (int, float))}
