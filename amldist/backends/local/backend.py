"""The ``local`` backend: processes on this machine with Azure ML's launcher environment.

- ``plan`` is pure: a job is planned by :mod:`amldist.backends.local.plan`, a pipeline by
  :mod:`amldist.backends.local.pipeline_run` (each step as a job); both come back as a
  :class:`~amldist.backends.base.Plan` that describes itself (what ``--dry-run --local`` prints);
- ``run`` creates the run folder and runs exactly the planned processes
  (:func:`amldist.backends.local.supervisor.launch`, or the pipeline's step runner), then returns
  the run's record read back from its ``status.json``;
- the job verbs read ``status.json`` under the run root (:mod:`amldist.backends.local.jobs`), jobs
  and pipelines alike.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from amldist.backends.base import CANCELED, FAILED, Backend, JobRecord, Options, Plan
from amldist.backends.local import jobs, log_files
from amldist.backends.local.plan import LocalPlan, describe, plan
from amldist.backends.local.records import read_record
from amldist.backends.local.run_state import signal_name
from amldist.rules.secrets import mask_tree
from amldist.submit.pipeline import PreparedPipeline
from amldist.submit.prepared import PreparedWork

DEFAULT_RUN_ROOT = ".amldist/runs"


@dataclass(frozen=True)
class LocalOptions(Options):
    run_root: str = DEFAULT_RUN_ROOT  # run folders live under it, relative to the current directory
    grace_seconds: float = 5.0  # after one rank fails, how long the others get before SIGTERM
    status_line: bool | None = None  # None: a live status line only when stdout is a terminal
    python: str | None = None  # --python: the ranks' python; None: the interpreter amldist runs in
    max_parallel: int | None = None  # --max-parallel: processes a pipeline's steps may run at once
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


class LocalBackend(Backend):
    """Processes on this machine (see the module docstring); ``run_root`` is where the job verbs look."""

    name = "local"
    options_type = LocalOptions

    def __init__(self, *, run_root: str | None = None):
        self.run_root = os.path.abspath(run_root or DEFAULT_RUN_ROOT)

    def plan(self, prepared: PreparedWork, options) -> LocalJobPlan | LocalPipelinePlan:
        if isinstance(prepared, PreparedPipeline):
            from amldist.backends.local import pipeline_run

            return LocalPipelinePlan(pipeline_run.plan_pipeline(prepared, options))
        return LocalJobPlan(plan(prepared, options))

    def run(self, p: LocalJobPlan | LocalPipelinePlan) -> JobRecord:
        from amldist.backends.local import pipeline_run
        from amldist.backends.local.supervisor import launch

        if isinstance(p, LocalPipelinePlan):
            code = pipeline_run.run_pipeline(p.pipeline)
        else:
            code = launch(p.local)
        record = read_record(p.run_dir)
        if record is not None:
            return record
        # stopped before the run folder held a status.json (a signal while the folder was made)
        stopped = code >= 128
        return JobRecord(name=p.name, backend="local", kind=p.kind, status=CANCELED if stopped else FAILED,
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
