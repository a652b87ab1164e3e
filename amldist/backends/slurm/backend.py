"""The ``slurm`` backend: the same job on a Slurm cluster, one ``sbatch`` per job.

- ``plan`` is pure (:mod:`amldist.backends.slurm.plan`): the sbatch script, its options and its
  environment, what ``--dry-run --slurm`` prints;
- ``run`` makes the run folder (``.amldist/slurm/<name>/`` under the current directory, which must be
  on a filesystem every node sees, as a home or project folder is on a cluster): ``job.yml``, the code
  snapshot with ``amldist/runtime/``, ``outputs/``, ``user_logs/``, ``bin/python``; then calls
  ``sbatch`` and returns the record (Queued or Running); with ``--stream`` it follows the logs until
  the job ends;
- the job verbs read Slurm (``squeue``, ``scontrol``/``sacct``) and the run folder
  (:mod:`amldist.backends.slurm.records`); ``cancel`` is ``scancel``, waiting until no task is left.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time

from amldist.backends.base import TERMINAL, Backend, JobRecord
from amldist.backends.local import launchers
from amldist.backends.local.code_copy import copy_code
from amldist.backends.slurm import commands, records
from amldist.backends.slurm.plan import DEFAULT_RUN_ROOT, SlurmJobPlan, SlurmOptions, plan
from amldist.errors import UserError
from amldist.rules.runtime_bundle import add_runtime

POLL_SECONDS = 0.5


class SlurmBackend(Backend):
    """Jobs on the Slurm cluster that ``sbatch`` reaches (see the module docstring)."""

    name = "slurm"
    options_type = SlurmOptions

    def __init__(self, *, run_root: str | None = None):
        self.run_root = os.path.abspath(run_root or DEFAULT_RUN_ROOT)

    def plan(self, prepared, options: SlurmOptions) -> SlurmJobPlan:
        from amldist.submit.prepared import PreparedJob

        if not isinstance(prepared, PreparedJob):
            raise UserError(f"{prepared.source}: pipelines do not run on Slurm yet",
                            hint="submit each step's job with --slurm, or run the pipeline --local")
        return plan(prepared, options)

    def run(self, p: SlurmJobPlan) -> JobRecord:
        commands.tool("sbatch")  # before anything is written
        fill_run_folder(p)
        env = commands.environment(launchers.clean_environ(os.environ), dict(p.environment))
        try:
            job_id = commands.submit(os.path.join(p.run_dir, "job.sbatch"), env)
        except UserError:
            shutil.rmtree(p.run_dir, ignore_errors=True)  # nothing was queued: leave no run behind
            raise
        meta = {"job_id": job_id, "name": p.job_name, "launch": p.launch, "nodes": p.nodes,
                "tasks_per_node": p.tasks_per_node, "outputs": {k: list(v) for k, v in p.outputs.items()},
                "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with open(os.path.join(p.run_dir, records.META), "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2)
        print(f"job {p.job_name}: Slurm job {job_id}, run folder {os.path.relpath(p.run_dir)}", file=sys.stderr)
        if p.stream:
            return self.logs(p.job_name, follow=True)
        return records.record(p.run_dir, meta=meta)

    # --- the job verbs ----------------------------------------------------------------------
    def run_dir(self, name: str) -> str:
        folder = os.path.join(self.run_root, name)
        if os.sep in name or name in ("", ".", "..") or records.read_meta(folder) is None:
            raise UserError(f"no Slurm job named {name!r} in {os.path.relpath(self.run_root)}",
                            hint="'amldist job list --slurm' lists them")
        return folder

    def has(self, name: str) -> bool:
        return os.sep not in name and records.read_meta(os.path.join(self.run_root, name)) is not None

    def list(self, *, max_results: int | None = None) -> list[JobRecord]:
        names = os.listdir(self.run_root) if os.path.isdir(self.run_root) else []
        folders = [os.path.join(self.run_root, n) for n in names if self.has(n)]
        folders.sort(key=lambda f: os.path.getmtime(os.path.join(f, records.META)), reverse=True)
        return [records.record(f) for f in folders[: max_results or None]]

    def show(self, name: str) -> JobRecord:
        return records.record(self.run_dir(name))

    def show_text(self, record: JobRecord) -> str:
        text = super().show_text(record)
        extra = [f"slurm job: {record.details.get('slurm_job_id')}", f"run folder: {record.details.get('run_dir')}"]
        return "\n".join([text, *extra] + ([f"error: {record.error}"] if record.error else []))

    def logs(self, name: str, *, step: str | None = None, rank: int | None = None, follow: bool = False,
             out=None) -> JobRecord:
        if step is not None:
            raise UserError("--step is for pipelines; a Slurm job has no steps")
        return follow_logs(self.run_dir(name), rank=rank, follow=follow, out=out or sys.stdout)

    def cancel(self, name: str, *, wait: bool = True, timeout: float = 120.0) -> JobRecord:
        folder = self.run_dir(name)
        record = records.record(folder)
        if record.ended:
            return record
        open(os.path.join(folder, "state", "cancel_requested"), "w").close()
        commands.cancel(record.details["slurm_job_id"])
        deadline = time.monotonic() + timeout
        while wait and commands.queue_state(record.details["slurm_job_id"]) is not None:
            if time.monotonic() > deadline:
                raise UserError(f"job {name} was still in Slurm's queue {timeout:.0f} s after scancel", exit_code=1)
            time.sleep(POLL_SECONDS)
        return records.record(folder)

    def download(self, name: str, destination: str, *, output_name: str | None = None,
                 all_outputs: bool = False, step: str | None = None) -> list[str]:
        record = self.show(name)
        if record.status not in TERMINAL:
            raise UserError(f"job {name} is {record.status}; download is allowed once it has ended", exit_code=1)
        written = []
        if output_name is None:
            target = os.path.join(destination, "artifacts", "user_logs")
            shutil.copytree(record.details["logs"], target, dirs_exist_ok=True)
            written.append(target)
        for output in record.outputs:
            if (all_outputs or output.name == output_name) and output.path and os.path.exists(output.path):
                target = os.path.join(destination, "named-outputs", output.name)
                copy = shutil.copytree if os.path.isdir(output.path) else shutil.copyfile
                os.makedirs(os.path.dirname(target), exist_ok=True)
                copy(output.path, target, **({"dirs_exist_ok": True} if copy is shutil.copytree else {}))
                written.append(target)
        return written


def fill_run_folder(p: SlurmJobPlan) -> None:
    """The run folder as the module docstring lists it (a folder that exists already is an error)."""
    try:
        os.makedirs(p.run_dir)
    except FileExistsError:
        raise UserError(f"a Slurm run named {p.job_name!r} already exists", hint="pass --name NEW") from None
    for sub in ("user_logs", "state", "bin"):
        os.makedirs(os.path.join(p.run_dir, sub))
    for name in ("python", "python3"):  # `python` is the plan's interpreter in every task, as locally
        path = os.path.join(p.run_dir, "bin", name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'#!/bin/sh\nexec {shlex.quote(p.python)} "$@"\n')
        os.chmod(path, 0o755)
    job_file = os.open(os.path.join(p.run_dir, "job.yml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(job_file, "w", encoding="utf-8") as fh:
        fh.write(p.job_yaml)
    code = os.path.join(p.run_dir, "code")
    copy_code(p.code_source, code, skip=(os.path.dirname(p.run_dir),)) if p.code_source else os.makedirs(code)
    if p.add_runtime:
        add_runtime(code)
    for path, out_type in p.outputs.values():
        os.makedirs(os.path.dirname(path) if out_type == "uri_file" else path, exist_ok=True)
    with open(os.path.join(p.run_dir, "job.sbatch"), "w", encoding="utf-8") as fh:
        fh.write(p.script)


def follow_logs(run_dir: str, *, rank: int | None, follow: bool, out) -> JobRecord:
    """Print each task's log, lines prefixed ``[rank N]``; with ``follow`` until the job ends."""
    offsets: dict[str, int] = {}
    while True:
        record = records.record(run_dir)
        chosen = [r for r in record.ranks if r.log and (rank is None or r.rank == rank)]
        for entry in chosen:
            with open(entry.log, "rb") as fh:
                fh.seek(offsets.get(entry.log, 0))
                data = fh.read()
            complete = data[: data.rfind(b"\n") + 1] if not record.ended else data
            offsets[entry.log] = offsets.get(entry.log, 0) + len(complete)
            for line in complete.decode("utf-8", "replace").splitlines():
                out.write(f"[{entry.label}] {line}\n" if len(chosen) > 1 else line + "\n")
        out.flush()
        if not follow or record.ended:
            if record.error:
                print(f"job {record.name}: {record.status}: {record.error}", file=sys.stderr)
            return record
        time.sleep(POLL_SECONDS)
