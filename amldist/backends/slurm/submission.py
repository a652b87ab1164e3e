"""One Slurm job submitted: its run folder made, then ``sbatch``.

The run folder (``<run root>/<name>/``, on a filesystem every node sees) gets ``job.yml`` (the job as run,
secrets masked), ``code/`` (the snapshot plus ``amldist/runtime/``, as the local backend copies it),
``outputs/<name>``, ``user_logs/``, ``state/``, ``bin/python`` (the plan's interpreter, as ``python`` in
every task) and ``job.sbatch``; ``slurm.json`` before ``sbatch`` runs, and with the job id once Slurm
accepted the job.
"""

from __future__ import annotations

import os
import shutil
import time

from amldist.engine import launchers
from amldist.engine.run_folder import fill_job_and_code, new_run_folder, python_wrappers
from amldist.backends.slurm import commands, records, script
from amldist.backends.slurm.plan import SlurmJobPlan
from amldist.errors import UserError


def submit_job(p: SlurmJobPlan, after: tuple[str, ...] = ()) -> dict:
    """Make ``p``'s run folder and ``sbatch`` it (after the Slurm jobs ``after`` completed, when given); the
    run's ``slurm.json``. A refusal removes the run folder: nothing was queued.

    ``slurm.json`` is written before ``sbatch`` runs, without a job id, and again with the id ``sbatch``
    answered: a submission stopped in between (a signal, SIGKILL) leaves a run that ``job list`` shows and
    ``job cancel`` reaches (its job is found by the run's marker). ``sbatch`` runs in ``<run>/code`` (the
    job's working folder: no path in the script, :func:`amldist.backends.slurm.script.sbatch_options`)."""
    fill_run_folder(p)
    env = commands.environment(launchers.clean_environ(os.environ), dict(p.environment))
    extra = script.command_line_options(p.run_dir)
    extra += (f"--dependency=afterok:{':'.join(after)}", "--kill-on-invalid-dep=yes") if after else ()
    outputs = {k: [os.path.relpath(path, p.run_dir), kind]  # relative: a moved run folder reads the same
               for k, (path, kind) in p.outputs.items()}
    meta = {"job_id": None, "name": p.job_name, "launch": p.launch, "nodes": p.nodes,
            "tasks_per_node": p.tasks_per_node, "outputs": outputs,
            "tasks": [[label, log, node] for label, log, node in p.tasks],
            "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "faults": [f.to_json() for f in p.faults], "attempt": dict(p.attempt) if p.attempt else None,
            "exclude": p.exclude, "partition": next((o.partition("=")[2] for o in p.sbatch_options
                                                     if o.startswith("--partition=")), None)}
    records.write_meta(p.run_dir, meta)
    try:
        meta["job_id"] = commands.submit(os.path.join(p.run_dir, "job.sbatch"), env, extra,
                                         cwd=os.path.join(p.run_dir, "code"))
    except UserError:
        shutil.rmtree(p.run_dir, ignore_errors=True)
        raise
    except BaseException:  # stopped while sbatch ran: what it may have queued is canceled, the run stays listed
        withdraw(p.run_dir, None)
        raise
    records.write_meta(p.run_dir, meta)
    return meta


def withdraw(run_dir: str, job_id: str | None) -> None:
    """Cancel the run's job (``job_id``, or the one carrying its marker when sbatch was stopped before it
    answered), recording the request first so the run reads Canceled; never raises (it runs on the way out)."""
    try:
        records.request_cancel(run_dir)
        marker = commands.run_marker(run_dir)
        for found in ([job_id] if job_id else commands.jobs_of(marker)):
            commands.cancel(found, marker)
    except (OSError, UserError):
        pass


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
