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

import os
import shutil
import sys
import time

from amldist.backends.base import TERMINAL, Backend, JobRecord
from amldist.backends.slurm import commands, pipeline, records
from amldist.backends.slurm.pipeline import SlurmPipelinePlan
from amldist.backends.slurm.plan import DEFAULT_RUN_ROOT, SlurmJobPlan, SlurmOptions, plan
from amldist.backends.slurm.submission import submit_job
from amldist.errors import UserError

POLL_SECONDS = 0.5


class SlurmBackend(Backend):
    """Jobs on the Slurm cluster that ``sbatch`` reaches (see the module docstring)."""

    name = "slurm"
    options_type = SlurmOptions

    def __init__(self, *, run_root: str | None = None):
        self.run_root = os.path.abspath(run_root or DEFAULT_RUN_ROOT)

    def plan(self, prepared, options: SlurmOptions) -> SlurmJobPlan | SlurmPipelinePlan:
        from amldist.submit.pipeline import PreparedPipeline

        if isinstance(prepared, PreparedPipeline):
            return pipeline.plan_pipeline(prepared, options)
        return plan(prepared, options)

    def run(self, p: SlurmJobPlan | SlurmPipelinePlan) -> JobRecord:
        commands.tool("sbatch")  # before anything is written
        if isinstance(p, SlurmPipelinePlan):
            pipeline.run_pipeline(p)
        else:
            meta = submit_job(p)
            print(f"job {p.job_name}: Slurm job {meta['job_id']}, run folder {os.path.relpath(p.run_dir)}",
                  file=sys.stderr)
        record = self.logs(p.name, follow=True) if p.stream else self.record(p.run_dir)
        print(end_line(record, streamed=p.stream), file=sys.stderr)  # a run ends with its status, as --local does
        return record

    def record(self, run_dir: str) -> JobRecord:
        """A job's or a pipeline's record, from its run folder and Slurm."""
        meta = records.read_meta(run_dir)
        if meta is not None and meta.get("kind") == "pipeline":
            return pipeline.pipeline_record(run_dir, meta)
        return records.record(run_dir, meta=meta)

    # --- the job verbs ----------------------------------------------------------------------
    def run_dir(self, name: str) -> str:
        if not self.has(name):
            raise UserError(f"no Slurm job named {name!r} in {os.path.relpath(self.run_root)}",
                            hint="'amldist job list --slurm' lists them")
        return os.path.join(self.run_root, name)

    def has(self, name: str) -> bool:
        return (os.sep not in name and name not in ("", ".", "..")
                and records.read_meta(os.path.join(self.run_root, name)) is not None)

    def list(self, *, max_results: int | None = None) -> list[JobRecord]:
        names = os.listdir(self.run_root) if os.path.isdir(self.run_root) else []
        folders = [os.path.join(self.run_root, n) for n in names if self.has(n)]
        folders.sort(key=lambda f: os.path.getmtime(os.path.join(f, records.META)), reverse=True)
        return [self.record(f) for f in folders[: max_results or None]]

    def show(self, name: str) -> JobRecord:
        return self.record(self.run_dir(name))

    def show_text(self, record: JobRecord) -> str:
        lines = [super().show_text(record)]
        lines += [f"step {s.name}: {s.note}" for s in record.steps if s.note and s.status != "Completed"]
        ids = record.details.get("slurm_job_ids") or {"job": record.details.get("slurm_job_id")}
        lines.append("slurm job(s): " + ", ".join(f"{k} {v}" for k, v in ids.items()))
        lines.append(f"run folder: {record.details.get('run_dir')}")
        return "\n".join(lines + ([f"error: {record.error}"] if record.error else []))

    def step_dirs(self, name: str, step: str | None) -> list[tuple[str, str]]:
        """(label, run folder) of a job, or of a pipeline's steps (``step``: that one)."""
        meta = records.read_meta(self.run_dir(name))
        if meta.get("kind") != "pipeline":
            if step is not None:
                raise UserError(f"--step is for pipelines; {name} is a job")
            return [("", self.run_dir(name))]
        chosen = [(s["name"], s["run_dir"]) for s in meta["steps"] if step in (None, s["name"])]
        if not chosen:
            raise UserError(f"pipeline {name} has no step {step!r}",
                            hint="its steps: " + ", ".join(s["name"] for s in meta["steps"]))
        return chosen

    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        for label, folder in self.step_dirs(name, step):
            follow_logs(folder, rank=rank, follow=follow, out=out or sys.stdout, prefix=label)
        return self.show(name)

    def cancel(self, name: str, *, wait: bool = True, timeout: float = 120.0) -> JobRecord:
        running = [records.record(folder) for _, folder in self.step_dirs(name, None)]
        running = [r for r in running if not r.ended]
        for record in running:
            open(os.path.join(record.details["run_dir"], "state", "cancel_requested"), "w").close()
            commands.cancel(record.details["slurm_job_id"])
        deadline = time.monotonic() + timeout
        while wait and any(commands.queue_state(r.details["slurm_job_id"]) is not None for r in running):
            if time.monotonic() > deadline:
                raise UserError(f"job {name} was still in Slurm's queue {timeout:.0f} s after scancel", exit_code=1)
            time.sleep(POLL_SECONDS)
        return self.show(name)

    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        record = self.show(name)
        if record.status not in TERMINAL:
            raise UserError(f"job {name} is {record.status}; download is allowed once it has ended", exit_code=1)
        written = []
        for label, folder in self.step_dirs(name, step) if output_name is None else ():
            target = os.path.join(destination, "artifacts", "user_logs", label)
            shutil.copytree(os.path.join(folder, "user_logs"), target, dirs_exist_ok=True)
            written.append(target)
        for output in record.outputs:
            if (all_outputs or output.name == output_name) and output.path and os.path.exists(output.path):
                written.append(copy_output(output.path, os.path.join(destination, "named-outputs", output.name)))
        return written


def end_line(record: JobRecord, *, streamed: bool = False) -> str:
    """The last line of ``submit --slurm``: the status (and duration) once ended, else where to follow it;
    the error too, unless following the logs already printed it."""
    what = f"{record.kind} {record.name}: {record.status}"
    if not record.ended:
        return f"{what} (amldist job logs {record.name} --follow follows it; amldist job show {record.name})"
    took = f" in {record.duration_seconds:.1f}s" if record.duration_seconds is not None else ""
    return what + took + (f": {record.error}" if record.error and not streamed else "")


def copy_output(source: str, target: str) -> str:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(source):
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, target)
    return target


def follow_logs(run_dir: str, *, rank: int | None, follow: bool, out, prefix: str = "") -> JobRecord:
    """Print each task's log, lines prefixed ``[rank N]`` (``[STEP rank N]`` for a pipeline's step); with
    ``follow`` until the job ends."""
    offsets: dict[str, int] = {}
    while True:
        record = records.record(run_dir)
        wanted = [r for r in record.ranks if r.log and (rank is None or r.rank == rank)]
        chosen = [r for r in wanted if os.path.exists(r.log)]
        for entry in chosen:
            with open(entry.log, "rb") as fh:
                fh.seek(offsets.get(entry.log, 0))
                data = fh.read()
            complete = data[: data.rfind(b"\n") + 1] if not record.ended else data
            offsets[entry.log] = offsets.get(entry.log, 0) + len(complete)
            for line in complete.decode("utf-8", "replace").splitlines():
                label = " ".join(x for x in (prefix, entry.label if len(wanted) > 1 else "") if x)
                out.write(f"[{label}] {line}\n" if label else line + "\n")
        out.flush()
        if not follow or record.ended:
            if record.error:
                print(f"job {record.name}: {record.status}: {record.error}", file=sys.stderr)
            return record
        time.sleep(POLL_SECONDS)
