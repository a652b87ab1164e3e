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

from amldist.engine import launchers
from amldist.engine.run_folder import fill_job_and_code, new_run_folder, python_wrappers
from amldist.backends.slurm import commands, records
from amldist.backends.slurm.plan import SlurmJobPlan
from amldist.errors import UserError


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
    """The run folder as the module docstring lists it, made as a local run's is
    (:func:`amldist.engine.run_folder.new_run_folder`)."""
    new_run_folder(p.run_dir, f"a Slurm run named {p.job_name!r} already exists", "pass --name NEW",
                   lambda: _fill(p))


def _fill(p: SlurmJobPlan) -> None:
    for sub in ("user_logs", "state"):
        os.makedirs(os.path.join(p.run_dir, sub))
    python_wrappers(p)  # bin/python: the plan's interpreter in every task, as locally
    fill_job_and_code(p)
    with open(os.path.join(p.run_dir, "job.sbatch"), "w", encoding="utf-8") as fh:
        fh.write(p.script)
