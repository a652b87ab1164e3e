"""Pipelines on Slurm: each step its own Slurm job, started by Slurm once the steps it reads from completed.

- :func:`plan_pipeline` is pure, as the local pipeline plan is: the same refusals (steps that cannot run
  outside Azure ML, each named), the run folder ``<run root>/<pipeline>/`` with one Slurm run folder per
  step (``<pipeline>/<step>/``), each step planned in the graph's order by the Slurm job plan; a step that
  reads another's output gets that step's output folder as its input path (outputs flow by folder, as
  mounts do on Azure and as in local runs);
- :func:`run_pipeline` calls ``sbatch`` once per step, in that order, each with
  ``--dependency=afterok:<the Slurm jobs of the steps it reads from>`` and ``--kill-on-invalid-dep=yes``:
  a failing step makes Slurm drop every step that reads from it, directly or not (they are
  ``NotStarted``), while the steps that do not depend on it run on;
- :func:`pipeline_record` is the pipeline's record: each step's, and the pipeline's status in Azure ML's
  words (Failed when a step failed, Completed when all completed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import signal
import threading
from dataclasses import dataclass, field
from typing import Mapping

from amldist.backends.base import (CANCELED, COMPLETED, FAILED, NOT_STARTED, QUEUED, RUNNING, TERMINAL, JobRecord,
                                   OutputRecord, Plan, StepRecord)
from amldist.backends.slurm import records
from amldist.backends.slurm.plan import SlurmJobPlan, SlurmOptions, describe, plan
from amldist.backends.slurm.records import PipelineMeta, StepMeta
from amldist.backends.slurm.submission import submit_job, withdraw
from amldist.engine.steps import plan_steps
from amldist.errors import UserError
from amldist.rules.secrets import mask_tree


@dataclass(frozen=True)
class StepPlan:
    name: str  # qualified step name ("train", "outer/inner")
    needs: tuple[str, ...]  # the steps it reads from
    plan: SlurmJobPlan


@dataclass(frozen=True)
class SlurmPipelinePlan(Plan):
    backend = "slurm"
    kind = "pipeline"
    pipeline_name: str
    run_dir: str
    source: str
    steps: tuple[StepPlan, ...]
    outputs: Mapping[str, str] = field(default_factory=dict)  # pipeline output -> the step's folder
    stream: bool = False

    @property
    def name(self) -> str:
        return self.pipeline_name

    def describe(self) -> str:
        lines = [f"pipeline {self.name} on Slurm: {len(self.steps)} step(s), each its own Slurm job; run folder "
                 f"{os.path.relpath(self.run_dir)} (not created)",
                 "order: " + " -> ".join(s.name for s in self.steps)]
        lines += [f"pipeline output {k}: {os.path.relpath(v)}" for k, v in self.outputs.items()]
        for step in self.steps:
            after = (f" (sbatch --dependency=afterok: the jobs of {', '.join(step.needs)}; "
                     "--kill-on-invalid-dep=yes)" if step.needs else "")
            lines += ["", f"== step {step.name}{after} ==", describe(step.plan)]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return mask_tree({"backend": "slurm", "kind": "pipeline", **dataclasses.asdict(self)})


def plan_pipeline(prepared, options: SlurmOptions, *, environ=None) -> SlurmPipelinePlan:
    """Everything the pipeline's sbatch calls will do (see the module docstring); starts and writes nothing.
    The steps are walked as every backend that runs them walks them (:func:`~amldist.engine.steps.plan_steps`)."""
    name, run_dir, planned, outputs = plan_steps(
        prepared, dataclasses.replace(options, stream=False),
        lambda job, step_options, pending: plan(job, step_options, environ=environ, pending_inputs=pending),
        "Slurm run")
    steps = tuple(StepPlan(node.name, tuple(node.needs), step) for node, step in planned)
    return SlurmPipelinePlan(name, run_dir, prepared.source, steps, outputs, options.stream)


def run_pipeline(pp: SlurmPipelinePlan) -> dict:
    """``sbatch`` every step with its dependencies (see the module docstring); the pipeline's meta.

    The pipeline's ``slurm.json`` is written before the first step is submitted and again after each, so
    what was queued is on record before the next ``sbatch`` (SIGKILL leaves it to ``job list``/``job
    cancel``). When Slurm refuses a step, or SIGINT/SIGTERM stops the submission, the steps already queued
    are canceled and the pipeline reads Canceled: it runs whole or not at all."""
    try:
        os.makedirs(pp.run_dir)
    except FileExistsError:
        raise UserError(f"a Slurm run named {pp.name!r} already exists", hint="pass --name NEW") from None
    ids: dict[str, str | None] = {s.name: None for s in pp.steps}
    _record(pp, ids)
    step = pp.steps[0]
    try:
        with signals_raise():
            for step in pp.steps:
                ids[step.name] = submit_job(step.plan, tuple(ids[n] for n in step.needs))["job_id"]
                _record(pp, ids)
    except BaseException as exc:
        for queued in pp.steps:
            if os.path.isdir(queued.plan.run_dir):
                withdraw(queued.plan.run_dir, ids[queued.name])
        if isinstance(exc, UserError):
            raise UserError(f"step {step.name}: {exc.message}", hint=exc.hint, exit_code=exc.exit_code) from None
        if isinstance(exc, (Stopped, KeyboardInterrupt)):
            signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
            raise UserError(f"pipeline {pp.name}: stopped by {signal.Signals(signum).name} while its steps were "
                            "submitted; the steps already queued are canceled",
                            hint=f"'amldist job show {pp.name}' shows them", exit_code=128 + signum) from None
        raise
    print(f"pipeline {pp.name}: " + ", ".join(f"{n} = Slurm job {i}" for n, i in ids.items()), flush=True)
    return _record(pp, ids)


def _record(pp: SlurmPipelinePlan, ids: dict) -> dict:
    rel = lambda path: os.path.relpath(path, pp.run_dir)  # the folder reads the same once moved
    meta = {"kind": "pipeline", "name": pp.name, "outputs": {k: rel(v) for k, v in pp.outputs.items()},
            "steps": [{"name": s.name, "needs": list(s.needs), "run_dir": rel(s.plan.run_dir), "job_id": ids[s.name]}
                      for s in pp.steps]}
    records.write_meta(pp.run_dir, meta)
    return meta


class Stopped(BaseException):
    """SIGTERM (or SIGHUP) while the steps are submitted: unwinds like Ctrl-C, so the queued steps are canceled."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_raise():
    """SIGTERM and SIGHUP raise while the steps are submitted (Ctrl-C raises KeyboardInterrupt already);
    only in the main thread, where Python can handle signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def step_record(step: StepMeta) -> StepRecord:
    """One step: its Slurm run's status; a step Slurm dropped before it started is NotStarted, as is one
    whose run folder was never made (the submission stopped before it)."""
    if records.read_meta(step.run_dir) is None:
        return StepRecord(step.name, NOT_STARTED, needs=step.needs, run_dir=step.run_dir,
                          note="not submitted: the pipeline's submission stopped before it")
    run = records.record(step.run_dir)
    status, note = run.status, None
    if status in (CANCELED, FAILED) and run.start_time is None and run.stopped_by != "amldist job cancel":
        status, note = NOT_STARTED, "not started: a step it reads from did not complete"
    codes = [r.exit_code for r in run.ranks if r.exit_code]
    return StepRecord(step.name, status, exit_code=codes[0] if codes else None, start_time=run.start_time,
                      end_time=run.end_time, duration_seconds=run.duration_seconds, needs=step.needs,
                      run_dir=step.run_dir, note=note or run.error)


def pipeline_record(meta: PipelineMeta) -> JobRecord:
    """The pipeline's record (see the module docstring)."""
    steps = tuple(step_record(s) for s in meta.steps)
    statuses = [s.status for s in steps]
    settled = all(s in TERMINAL or s == NOT_STARTED for s in statuses)
    if not settled:
        status = RUNNING if any(s not in (QUEUED, NOT_STARTED) + TERMINAL for s in statuses) else QUEUED
    else:
        status = (FAILED if FAILED in statuses else CANCELED if CANCELED in statuses
                  else COMPLETED if all(s == COMPLETED for s in statuses) else FAILED)
    failed = next((s for s in steps if s.status == FAILED), None)
    starts = [s.start_time for s in steps if s.start_time]
    ends = [s.end_time for s in steps if s.end_time]
    end = max(ends) if settled and ends else None
    return JobRecord(name=meta.name, backend="slurm", kind="pipeline", status=status,
                     start_time=min(starts) if starts else None, end_time=end,
                     duration_seconds=records.seconds_between(min(starts) if starts else None, end), steps=steps,
                     outputs=tuple(OutputRecord(k, v) for k, v in meta.outputs),
                     error=f"step {failed.name} failed: {failed.note}" if failed else None,
                     details={"run_dir": meta.run_dir, "slurm_job_ids": {s.name: s.job_id for s in meta.steps},
                              "dependencies": shlex.join(f"{s.name}<-{','.join(s.needs)}" for s in meta.steps
                                                         if s.needs)})
