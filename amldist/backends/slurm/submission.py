"""One Slurm job submitted: its run folder made, then ``sbatch``.

The run folder (``<run root>/<name>/``, on a filesystem every node sees) gets ``job.yml`` (the job as run,
secrets masked), ``code/`` (the snapshot plus ``amldist/runtime/``, as the local backend copies it),
``outputs/<name>``, ``user_logs/``, ``state/``, ``bin/python`` (the plan's interpreter, as ``python`` in
every task) and ``job.sbatch``; ``slurm.json`` once Slurm accepted the job.
"""

from __future__ import annotations

import os
import shutil
import time

from amldist.backends.local import launchers
from amldist.backends.local.code_copy import copy_code, copy_includes
from amldist.backends.local.supervisor import ignore_runs, python_wrappers
from amldist.backends.slurm import commands, records
from amldist.backends.slurm.plan import SlurmJobPlan
from amldist.errors import UserError
from amldist.model.files import make_folder
from amldist.rules.runtime_bundle import add_runtime


def submit_job(p: SlurmJobPlan, after: tuple[str, ...] = ()) -> dict:
    """Make ``p``'s run folder and ``sbatch`` it (after the Slurm jobs ``after`` completed, when given); the
    run's ``slurm.json``. A refusal removes the run folder: nothing was queued."""
    fill_run_folder(p)
    env = commands.environment(launchers.clean_environ(os.environ), dict(p.environment))
    extra = (f"--dependency=afterok:{':'.join(after)}", "--kill-on-invalid-dep=yes") if after else ()
    try:
        job_id = commands.submit(os.path.join(p.run_dir, "job.sbatch"), env, extra)
    except UserError:
        shutil.rmtree(p.run_dir, ignore_errors=True)
        raise
    meta = {"job_id": job_id, "name": p.job_name, "launch": p.launch, "nodes": p.nodes,
            "tasks_per_node": p.tasks_per_node, "outputs": {k: list(v) for k, v in p.outputs.items()},
            "tasks": [list(t) for t in p.tasks],
            "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    records.write_meta(p.run_dir, meta)
    return meta


def fill_run_folder(p: SlurmJobPlan) -> None:
    """The run folder as the module docstring lists it: never one that exists already, and removed again
    when making it fails half way (a partial snapshot is never submitted later)."""
    os.makedirs(os.path.dirname(p.run_dir), exist_ok=True)
    ignore_runs(os.path.dirname(p.run_dir))  # .amldist/.gitignore, as for local runs
    try:
        os.mkdir(p.run_dir, 0o700)
    except FileExistsError:
        raise UserError(f"a Slurm run named {p.job_name!r} already exists", hint="pass --name NEW") from None
    try:
        _fill(p)
    except BaseException:
        shutil.rmtree(p.run_dir, ignore_errors=True)
        raise


def _fill(p: SlurmJobPlan) -> None:
    for sub in ("user_logs", "state"):
        os.makedirs(os.path.join(p.run_dir, sub))
    python_wrappers(p)  # bin/python: the plan's interpreter in every task, as locally
    job_file = os.open(os.path.join(p.run_dir, "job.yml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(job_file, "w", encoding="utf-8") as fh:
        fh.write(p.job_yaml)
    code = os.path.join(p.run_dir, "code")
    copy_code(p.code_source, code, skip=(os.path.dirname(p.run_dir),)) if p.code_source else os.makedirs(code)
    copy_includes(p.includes, code)  # a component's additional_includes, laid out as Azure ML lays them out
    if p.add_runtime:
        add_runtime(code)
    for path, out_type in p.outputs.values():  # each checked to stay in the run folder, as locally
        make_folder(p.run_dir, os.path.dirname(path) if out_type == "uri_file" else path)
    with open(os.path.join(p.run_dir, "job.sbatch"), "w", encoding="utf-8") as fh:
        fh.write(p.script)
