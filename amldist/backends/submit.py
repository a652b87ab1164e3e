"""Submit, written once: load once, validate once, choose the backend, plan (pure), run (acts).

Both ``amldist submit`` (:mod:`amldist.cli.submit`) and the Python API (:func:`run_local`, and
:func:`submit` itself) come here; a backend only plans and runs. It lives with the backends, not in
:mod:`amldist.submit`, because it needs one (the layers go cli > backends > submit): the
backend-neutral half (loading, ``--set``/``--input``, validation) is :func:`amldist.submit.prepare.prepare`.

What may be submitted: a YAML path (a command job, a command component, a legacy
DistributedComponent or a pipeline), an amldist job or pipeline object (a builder's), or an
azure-ai-ml ``PipelineJob`` built with ``@dsl.pipeline``. An object is written as YAML (its local
paths made absolute against the current directory, so they mean what they meant) and then read
back like a file, so it is validated exactly as ``amldist submit`` validates a file.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass

from amldist.backends import get_backend
from amldist.backends.base import Backend, JobRecord, Plan, exit_code_of
from amldist.model.yamlio import dump_yaml
from amldist.rules import paths
from amldist.submit.prepare import SpecInvalid, prepare
from amldist.submit.prepared import PreparedWork


@dataclass(frozen=True)
class Submission:
    """What one submit did: the backend, its plan, and the run's record (None for a dry run)."""

    backend: Backend
    plan: Plan
    record: JobRecord | None

    @property
    def exit_code(self) -> int:
        return 0 if self.record is None else exit_code_of(self.record)


def choose_backend(job, *, local: bool = False) -> str:
    """``local`` for --local or ``compute: local`` (any case), else ``azureml``."""
    return chosen_backend(job, local=local)[0]


def chosen_backend(job, *, local: bool = False, backend: str | None = None) -> tuple[str, str]:
    """(the backend's name, what chose it): ``backend`` as named, ``local`` for --local or ``compute: local``
    (any case), else ``azureml``, the default."""
    if backend:
        return backend, "--backend " + backend
    if local:
        return "local", "--local"
    compute = getattr(job, "compute", None)
    if isinstance(compute, str) and compute.strip().lower() in ("local", "azureml:local"):
        return "local", f"compute: {compute.strip()}"
    return "azureml", "the default"


def submit(source, *, local: bool = False, backend: str | None = None, dry_run: bool = False, sets=(), inputs=(),
           instance_count: int | None = None, process_count_per_instance: int | None = None, args=None,
           out=None, err=None, before_plan=None, **options) -> Submission:
    """Prepare ``source`` (see the module docstring), plan it on ``backend`` (default: chosen as
    :func:`choose_backend` says) with the options from ``args`` (parsed CLI arguments) and ``options``,
    then print the plan (``dry_run``) or run it. Diagnostics and warnings go to ``err``; the dry run's
    text to ``out``. SpecInvalid (exit 1) when the spec has errors: nothing is started or sent.
    ``before_plan(name, why)`` is called with the chosen backend before it plans (the CLI refuses another
    backend's flags there)."""
    err = err or sys.stderr
    with _as_file(source) as path:
        try:
            prepared = prepare(path, sets=list(sets), inputs=list(inputs), instance_count=instance_count,
                               process_count_per_instance=process_count_per_instance)
        except SpecInvalid as exc:
            for diagnostic in exc.diagnostics:
                print(diagnostic.to_text(), file=err)
            raise
        for diagnostic in prepared.warnings:
            print(diagnostic.to_text(), file=err)
        name, why = chosen_backend(prepared.job, local=local, backend=backend)
        if before_plan is not None:
            before_plan(name, why)
        chosen = get_backend(name)
        plan = chosen.plan(prepared, chosen.options(args, dry_run=dry_run or None, **options))
        if dry_run:
            print(plan.describe(), file=out or sys.stdout)
            return Submission(chosen, plan, None)
        return Submission(chosen, plan, chosen.run(plan))


def run_local(source, *, name: str | None = None, dry_run: bool = False, sets=(), inputs=(), **options):
    """Run a job or a pipeline on this machine from Python, as ``amldist submit SOURCE --local`` does.

    ``source`` is a YAML path, a builder's job (``amldist.pytorch_job(...)``), an amldist
    ``PipelineJob`` or an azure-ai-ml ``PipelineJob``. ``options`` are the local backend's
    (:class:`amldist.backends.local.backend.LocalOptions`: ``run_root``, ``max_parallel``,
    ``grace_seconds``, ``python``, ``stream``...). Returns the run's
    :class:`~amldist.backends.base.JobRecord` (``record.status``: ``Completed``, ``Failed``,
    ``Canceled``); with ``dry_run`` prints the plan and returns it.
    """
    done = submit(source, local=True, dry_run=dry_run, sets=sets, inputs=inputs, name=name, **options)
    return done.plan if dry_run else done.record


@contextlib.contextmanager
def _as_file(source):
    """A path as it is; an object written to a temporary YAML file for the time of the submit."""
    if isinstance(source, (str, os.PathLike)):
        yield os.fspath(source)
        return
    if isinstance(source, PreparedWork):
        raise TypeError("submit() takes a YAML path or a job/pipeline object, not a prepared one")
    to_dict = getattr(source, "_to_dict", None) or getattr(source, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"cannot submit a {type(source).__name__}: give a YAML path, a job or a pipeline")
    data = _absolute_paths(to_dict(), os.getcwd())
    with tempfile.TemporaryDirectory(prefix="amldist-submit-") as folder:
        name = str(getattr(source, "name", None) or "job").replace(os.sep, "_")
        path = os.path.join(folder, f"{name}.yml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(dump_yaml(data))
        yield path


def _absolute_paths(data: dict, cwd: str) -> dict:
    """``code:`` and local input paths made absolute, so that the YAML means the same from any folder."""
    data = dict(data)
    if isinstance(data.get("code"), str) and paths.is_local(data["code"]):
        data["code"] = paths.local_path(data["code"], cwd)
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        data["inputs"] = {k: ({**v, "path": paths.local_path(v["path"], cwd)}
                              if isinstance(v, dict) and isinstance(v.get("path"), str) and paths.is_local(v["path"])
                              else v) for k, v in inputs.items()}
    return data
