"""The ``slurm`` backend: the same job on a Slurm cluster, one ``sbatch`` per job.

- ``plan`` is pure (:mod:`amldist.backends.slurm.plan`): the sbatch script, its options and its
  environment, what ``--dry-run --slurm`` prints;
- ``run`` makes the run folder (``.amldist/slurm/<name>/`` under the current directory, which must be on a
  filesystem every node sees, as a home or project folder is on a cluster; :mod:`amldist.backends.slurm.submission`)
  and calls ``sbatch``, once per step for a pipeline (:mod:`amldist.backends.slurm.pipeline`), then returns the
  record (Queued or Running); with ``--stream`` it follows the logs until the job ends;
- the job verbs read Slurm (``squeue``, ``scontrol``/``sacct``) and the run folder
  (:mod:`amldist.backends.slurm.records`); ``cancel`` is ``scancel``, waiting until no task is left.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time

from amldist.backends.base import (TERMINAL, Backend, Flag, JobRecord, ProcessLog, RunLogs, ended_record,
                                   first_failed_step, signal_name)
from amldist.backends.slurm import attempts, commands, pipeline, records, script
from amldist.backends.slurm.pipeline import SlurmPipelinePlan
from amldist.backends.slurm.plan import DEFAULT_RUN_ROOT, SlurmJobPlan, SlurmOptions, plan
from amldist.backends.slurm.submission import submit_job
from amldist.runtime.evidence import EVIDENCE_FOLDER
from amldist.engine.download import check_destination, copy_as_data
from amldist.engine.log_stream import LogFollower
from amldist.errors import UserError
from amldist.rules.counts import count_option

POLL_SECONDS = 0.5


class SlurmBackend(Backend):
    """Jobs on the Slurm cluster that ``sbatch`` reaches (see the module docstring)."""

    name = "slurm"
    options_type = SlurmOptions
    select_flag = "--slurm"
    submit_flags = (
        Flag(("--partition",), "partition", "Slurm partition (default: the cluster's)", {"metavar": "NAME"}),
        Flag(("--account",), "account", "Slurm account to charge", {"metavar": "NAME"}),
        Flag(("--time",), "time", "Slurm time limit, e.g. 2:00:00 (default: limits.timeout)",
             {"metavar": "LIMIT", "type": script.time_option}),
        Flag(("--python",), "python", "the python every task runs (default: the one amldist runs in)",
             {"metavar": "PATH"}),
        # shared with the local backend (the same names): the drill acted out by each task's script, on its node
        Flag(("--inject",), "inject", "rehearse a failure (repeatable): preempt:node=N,after=S[,grace=S], "
             "kill:rank=R,after=S, hang:rank=R,after=S, slow:rank=R,factor=F[,after=S]",
             {"metavar": "FAULT", "action": "append"}),
        Flag(("--retry",), "retry", "resubmit a run that failed for a cause other than its code (preemption, node "
             "fault) up to N times, keeping a failed node off where the cluster has another; the attempts share "
             "AMLDIST_CHECKPOINT_DIR", {"metavar": "N", "type": count_option("retry")}),
        Flag(("--retry-on",), "retry_on", "cause classes to retry, each with its own budget of N: preemption,node "
             "(default), hang, other; a failure of the code is never retried", {"metavar": "CAUSES"}),
    )

    def __init__(self, *, run_root: str | None = None):
        self.run_root = os.path.abspath(run_root or DEFAULT_RUN_ROOT)

    def plan_job(self, prepared, options: SlurmOptions) -> SlurmJobPlan:
        return plan(prepared, options)

    def plan_pipeline(self, prepared, options: SlurmOptions) -> SlurmPipelinePlan:
        if options.inject or options.retry is not None:
            raise UserError(f"{prepared.source}: --inject and --retry drill and retry a job on Slurm, not a "
                            "pipeline's steps", hint="submit the step's job on its own with them")
        return pipeline.plan_pipeline(prepared, options)

    def run_job(self, p: SlurmJobPlan) -> JobRecord:
        commands.tool("sbatch")  # before anything is written
        meta = submit_job(p)
        print(f"job {p.job_name}: Slurm job {meta['job_id']}, run folder {os.path.relpath(p.run_dir)}",
              file=sys.stderr)
        return self._submitted(p)

    def run_pipeline(self, p: SlurmPipelinePlan) -> JobRecord:
        commands.tool("sbatch")  # before anything is written
        pipeline.run_pipeline(p)
        return self._submitted(p)

    def _submitted(self, p: SlurmJobPlan | SlurmPipelinePlan) -> JobRecord:
        if p.stream and getattr(p, "retried", False):  # --retry: a stop while following cancels the attempt
            record = self._stoppable(p.name, p.run_dir, lambda: self.logs(p.name, follow=True))
            if record.stopped_by in ("SIGINT", "SIGTERM", "SIGHUP"):
                return record
        else:
            record = self.logs(p.name, follow=True) if p.stream else self.record(p.run_dir)
        print(end_line(record, streamed=p.stream), file=sys.stderr)  # a run ends with its status, as --local does
        return record

    def record(self, run_dir: str) -> JobRecord:
        """A job's or a pipeline's record, from its run folder and Slurm; SlurmStateError (one line) when its
        ``slurm.json`` is not one amldist wrote."""
        meta = records.read_meta(run_dir)
        if isinstance(meta, records.PipelineMeta):
            return pipeline.pipeline_record(meta)
        if meta is None:
            raise UserError(f"Slurm run {os.path.basename(run_dir)!r} has no {records.META} (it is being created)",
                            hint=f"its files are in {os.path.relpath(run_dir)}")
        return records.record(run_dir, meta=meta)

    # --- the job verbs ----------------------------------------------------------------------
    def run_dir(self, name: str) -> str:
        if not self.has(name):
            raise UserError(f"no Slurm job named {name!r} in {os.path.relpath(self.run_root)}",
                            hint="'amldist job list --slurm' lists them")
        return os.path.join(self.run_root, name)

    def has(self, name: str) -> bool:
        """Whether a run called ``name`` is under the run root (its ``slurm.json`` is not read here: a broken
        one is still that run, reported by the verb as one line)."""
        return (os.sep not in name and "\n" not in name and name not in ("", ".", "..")
                and os.path.lexists(os.path.join(self.run_root, name, records.META)))

    def list(self, *, max_results: int | None = None, err=None) -> list[JobRecord]:
        """Every run, newest first; a run whose ``slurm.json`` is unreadable is one warning line."""
        names = sorted(e.name for e in _entries(self.run_root) if e.is_dir(follow_symlinks=False) and self.has(e.name))
        names.sort(key=lambda n: _mtime(os.path.join(self.run_root, n, records.META)), reverse=True)
        found = []
        for name in names:
            if max_results and len(found) >= max_results:
                break
            try:
                found.append(self.record(os.path.join(self.run_root, name)))
            except UserError as exc:
                print(f"warning: {exc.message}; not listed", file=err or sys.stderr)
        return found

    def show(self, name: str) -> JobRecord:
        return self.record(self.run_dir(name))

    def show_text(self, record: JobRecord) -> str:
        lines = [super().show_text(record)]
        lines += [f"step {s.name}: {s.note}" for s in record.steps if s.note and s.status != "Completed"]
        ids = record.details.get("slurm_job_ids") or {"job": record.details.get("slurm_job_id")}
        lines.append("slurm job(s): " + ", ".join(f"{k} {v or '-'}" for k, v in ids.items()))
        lines.append(f"run folder: {record.details.get('run_dir')}")
        return "\n".join(lines + ([f"error: {record.error}"] if record.error else []))

    def step_dirs(self, name: str, step: str | None) -> list[tuple[str, str]]:
        """(label, run folder) of a job, or of a pipeline's steps (``step``: that one)."""
        meta = records.read_meta(self.run_dir(name))
        if not isinstance(meta, records.PipelineMeta):
            if step is not None:
                raise UserError(f"--step is for pipelines; {name} is a job")
            return [("", self.run_dir(name))]
        chosen = [(s.name, s.run_dir) for s in meta.steps if step in (None, s.name)]
        if not chosen:
            raise UserError(f"pipeline {name} has no step {step!r}",
                            hint="its steps: " + ", ".join(s.name for s in meta.steps))
        return chosen

    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        for label, folder in self.step_dirs(name, step):
            if records.read_meta(folder) is not None:  # a step never submitted has no logs
                follow_logs(folder, rank=rank, follow=follow, out=out or sys.stdout, prefix=label)
        return self.show(name)

    def cancel(self, name: str, *, wait: bool = True, timeout: float = 120.0) -> JobRecord:
        """``scancel`` the run's own jobs: each step's (or the job's) id, used only for a job that carries the
        run's marker (:func:`amldist.backends.slurm.commands.cancel`); ``cancel_requested`` is left first."""
        running = []
        for _, folder in self.step_dirs(name, None):
            meta = records.read_meta(folder)
            if isinstance(meta, records.JobMeta) and not records.record(folder, meta=meta).ended:
                running.append((meta, records.job_id_of(meta)))
        for meta, job_id in running:
            records.request_cancel(meta.run_dir)
            if job_id:
                commands.cancel(job_id, meta.marker)
        deadline = time.monotonic() + timeout
        while wait and any(j and commands.queue_state(j, m.marker) is not None for m, j in running):
            if time.monotonic() > deadline:
                raise UserError(f"job {name} was still in Slurm's queue {timeout:.0f} s after scancel", exit_code=1)
            time.sleep(POLL_SECONDS)
        return self.show(name)

    def run_logs(self, name: str, folder: str) -> RunLogs:
        """The logs in the run folder, where the tasks wrote them (``folder`` stays empty); each task's exit
        time is when it wrote its ``state/rank_N.exit``; a pipeline's: its failed step's."""
        run = ended_record(self, name)
        step = first_failed_step(run) if run.kind == "pipeline" else None
        if run.kind == "pipeline" and step is None:
            return RunLogs(name, run.status, self.name)
        ((_, run_dir),) = self.step_dirs(name, step.name if step else None)
        job = records.record(run_dir)
        ranks = tuple(ProcessLog(r.label, r.rank, r.node, r.log, r.exit_code,
                                 _exit_time(os.path.join(run_dir, "state", f"rank_{i}.exit")))
                      for i, r in enumerate(job.ranks))
        return RunLogs(name, run.status, self.name, ranks=ranks, spec_file=os.path.join(run_dir, "job.yml"),
                       step=step.name if step else None,
                       evidence_dir=os.path.join(run_dir, "user_logs", EVIDENCE_FOLDER),
                       faults=tuple(job.details.get("faults") or ()), ended_by=job.details.get("ended_by"))

    # --- retries (amldist.diagnosis.retry) -------------------------------------------------------
    def wait_for_end(self, record: JobRecord) -> JobRecord:
        """``record`` once its job has left Slurm's queue (polled). Ctrl-C or SIGTERM meanwhile cancels the job
        (``scancel``, waiting until no task is left) and returns it Canceled by that signal, which ends the
        retries."""
        if record.ended:
            return record
        run_dir = record.details["run_dir"]

        def polled() -> JobRecord:
            found = record
            while not found.ended:
                time.sleep(POLL_SECONDS)
                found = self.record(run_dir)
            return found

        ended = self._stoppable(record.name, run_dir, polled)
        if ended.stopped_by not in ("SIGINT", "SIGTERM", "SIGHUP"):
            print(end_line(ended), file=sys.stderr)
        return ended

    def _stoppable(self, name: str, run_dir: str, until_end) -> JobRecord:
        """``until_end()`` (the job's record once it has ended); Ctrl-C, SIGTERM or SIGHUP meanwhile cancels the job
        and returns its record Canceled by that signal, with one line saying no further attempt follows."""
        try:
            with pipeline.signals_raise():
                return until_end()
        except (KeyboardInterrupt, pipeline.Stopped) as exc:
            signum = exc.signum if isinstance(exc, pipeline.Stopped) else signal.SIGINT
            self.cancel(name)
            record = dataclasses.replace(self.record(run_dir), stopped_by=signal_name(signum))
            print(f"job {record.name}: {record.status}: stopped by {record.stopped_by}; no further attempt",
                  file=sys.stderr)
            return record

    def checkpoint_dir_of(self, record: JobRecord) -> str | None:
        """The attempts of a retried Slurm run share ``checkpoints/`` in the first attempt's run folder (on the
        filesystem every node sees)."""
        run_dir = record.details.get("run_dir")
        return os.path.join(run_dir, "checkpoints") if run_dir else None

    def retry_options(self, record: JobRecord, signature: str | None, scope: str | None,
                      node: int | None = None) -> dict:
        """The next attempt keeps off the hosts this one was kept off, and the host of ``node`` (the node a
        preemption or node fault was diagnosed on) when the partition has enough other nodes for the job
        (:func:`amldist.backends.slurm.attempts.next_exclude`; one line either way)."""
        meta = records.job_meta(record.details["run_dir"])
        if record.details.get("ended_by") in ("node-failure", "preempted"):
            # Slurm preempted the whole job (no node at fault), or marked a node down, which it then runs nothing on
            node = None
        names = attempts.hosts(meta.run_dir)
        host = names[node] if node is not None and 0 <= node < len(names) else None
        needed = 1 + max((task[2] for task in meta.tasks), default=0)
        where = f"partition {meta.partition}" if meta.partition else "the cluster"
        exclude, line = attempts.next_exclude(meta.exclude, host, commands.usable_nodes(meta.partition) if host
                                              else [], needed, where)
        if line:
            print(line, file=sys.stderr)
        return {"exclude": exclude} if exclude else {}

    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        """As ``az ml job download``: the logs, and the outputs asked for, copied as data
        (:func:`amldist.engine.download.copy_as_data`: links as links, FIFOs and devices skipped, never
        outside ``destination`` nor reading outside the run folder)."""
        record = self.show(name)
        if record.status not in TERMINAL:
            raise UserError(f"job {name} is {record.status}; download is allowed once it has ended", exit_code=1)
        if output_name is not None and record.output(output_name) is None:
            raise UserError(f"job {name} has no output {output_name!r}",
                            hint=f"its outputs: {', '.join(o.name for o in record.outputs) or 'none'}")
        check_destination(destination)
        written = []
        for label, folder in self.step_dirs(name, step) if output_name is None else ():
            target = os.path.join(destination, "artifacts", "user_logs", *label.split("/"))
            if copy_as_data(os.path.join(folder, "user_logs"), target, within=folder, root=destination):
                written.append(target)
        run_dir = record.details["run_dir"]
        for output in record.outputs:
            if (all_outputs or output.name == output_name) and output.path:
                target = os.path.join(destination, "named-outputs", output.name)
                if copy_as_data(output.path, target, within=run_dir, root=destination):
                    written.append(target)
        return written


def _entries(folder: str) -> list:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def _exit_time(path: str) -> float | None:
    """When a task wrote its exit file (lstat: a link planted there is not followed), None without one."""
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return None


def end_line(record: JobRecord, *, streamed: bool = False) -> str:
    """The last line of ``submit --slurm``: the status (and duration) once ended, else where to follow it;
    the error too, unless following the logs already printed it."""
    what = f"{record.kind} {record.name}: {record.status}"
    if not record.ended:
        return f"{what} (amldist job logs {record.name} --follow follows it; amldist job show {record.name})"
    took = f" in {record.duration_seconds:.1f}s" if record.duration_seconds is not None else ""
    return what + took + (f": {record.error}" if record.error and not streamed else "")


def follow_logs(run_dir: str, *, rank: int | None, follow: bool, out, prefix: str = "") -> JobRecord:
    """Print each task's log, lines prefixed ``[rank N]`` (``[STEP rank N]`` for a pipeline's step); with
    ``follow`` until the job ends. Logs are read by the engine's follower (chunks, constant memory, regular
    files only, never through a link or outside the run folder)."""
    follower = LogFollower(out.write, raw=True)
    while True:
        record = records.record(run_dir)
        wanted = [r for r in record.ranks if r.log and (rank is None or r.rank == rank)]
        for entry in wanted:
            label = " ".join(x for x in (prefix, entry.label if len(wanted) > 1 else "") if x)
            follower.copy(entry.log, f"[{label}] " if label else "", final=record.ended or not follow,
                          within=run_dir)
        out.flush()
        if not follow or record.ended:
            if record.error:
                print(f"job {record.name}: {record.status}: {record.error}", file=sys.stderr)
            return record
        time.sleep(POLL_SECONDS)
