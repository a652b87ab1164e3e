"""The backend-neutral step of ``amldist submit``: load -> overrides -> validate -> job.

What FILE may be, and where each option applies:

- a v2 **command job**: ``--set`` and ``--input`` apply to the job as written, then
  ``--instance-count`` / ``--process-count-per-instance`` (they win over ``--set``, being
  the more specific options); the result is validated with positions from the file;
- a v2 **command component** or a legacy **DistributedComponent**: the file is validated as
  written first, then turned into a job with ``amldist.authoring.convert.component_to_job`` (the
  options give what a pipeline's run settings would: ``--input`` values, the counts); ``--set``
  then applies to that job (``az ml job create --set`` also edits the job), which is validated
  again.

Nothing is sent or started when the result has an error: :class:`SpecInvalid` carries the
diagnostics, printed like ``amldist validate`` prints them, exit code 1. Warnings are kept
on the :class:`Prepared` for the command to print. The file on disk is only ever read.
"""

from __future__ import annotations

import os

from amldist.submit.prepared import Prepared
from amldist.errors import UserError
from amldist.spec import overrides


class SpecInvalid(UserError):
    """The spec (after overrides) has errors; ``diagnostics`` holds every finding."""

    def __init__(self, file: str, diagnostics: list):
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__(f"{file}: {len(errors)} error(s); nothing was submitted or started",
                         hint="fix the file (or the --set/--input values) and run again", exit_code=1)
        self.diagnostics = diagnostics


def prepare(path: str, *, sets=(), inputs=(), instance_count: int | None = None,
            process_count_per_instance: int | None = None, cwd: str | None = None) -> Prepared:
    """The job ``amldist submit`` would run for ``path`` and these options (see the module docstring)."""
    from amldist.spec import from_data, read_document
    from amldist.spec.kinds import COMMAND_JOB, PIPELINE_JOB, detect_kind
    from amldist.validate import validate_data

    cwd = cwd or os.getcwd()
    file = os.fspath(path)
    text, doc = read_document(file)
    base_dir = os.path.dirname(os.path.abspath(file))
    kind = detect_kind(doc.data)
    if kind is None:
        from_data(doc.data, file=file)  # raises the loader's "not a spec" error
    if kind == PIPELINE_JOB:
        raise UserError(f"{file} is a pipeline job; amldist submit runs one command job at a time",
                        hint="submit pipelines with 'az ml job create --file' or azure-ai-ml (see samples/pipeline)")
    input_values = overrides.parse_inputs(inputs)
    kept: list = []

    if kind == COMMAND_JOB:
        data = overrides.apply_sets(doc.data, sets)
        data = overrides.apply_inputs(data, input_values, cwd=cwd, file=file)
        data = _apply_counts(data, instance_count, process_count_per_instance, file)
        # The text locates findings inside the command; only valid while --set left the command alone.
        same_command = isinstance(doc.data, dict) and data.get("command") == doc.data.get("command")
        diagnostics = validate_data(data, file, kind=COMMAND_JOB, base_dir=base_dir, doc=doc,
                                    text=text if same_command else None)
        _check(file, diagnostics, kept)
    else:
        _check(file, validate_data(doc.data, file, kind=kind, base_dir=base_dir, doc=doc, text=text), kept)
        data = _as_job(from_data(doc.data, file=file), base_dir, input_values, instance_count,
                       process_count_per_instance)
        data = overrides.apply_sets(data, sets)
        as_job = f"{file} (run as a job)"
        _check(as_job, validate_data(data, as_job, kind=COMMAND_JOB, base_dir=base_dir), kept)
    return Prepared(job=from_data(data, file=file), source=file, base_dir=base_dir, warnings=kept)


def _check(file: str, diagnostics: list, kept: list) -> None:
    """Raise :class:`SpecInvalid` on any error; otherwise keep the warnings and notes."""
    from amldist.diagnostics import has_errors

    if has_errors(diagnostics):
        raise SpecInvalid(file, diagnostics)
    kept.extend(diagnostics)


def _apply_counts(data: dict, instance_count, process_count, file: str) -> dict:
    """``data`` (prepare's own copy, changed in place) with the count options set."""
    if instance_count is not None:
        resources = data.get("resources")
        if not isinstance(resources, dict):
            resources = data["resources"] = {}
        resources["instance_count"] = instance_count
    if process_count is not None:
        dist = data.get("distribution")
        if not isinstance(dist, dict) or str(dist.get("type", "")).lower() not in ("pytorch", "mpi"):
            raise UserError(f"--process-count-per-instance applies to pytorch and mpi jobs; {file} has "
                            + (f"a {dist.get('type')!r} distribution" if isinstance(dist, dict) else "no distribution"),
                            hint="add a distribution (e.g. --set distribution.type=pytorch) or drop the option")
        dist["process_count_per_instance"] = process_count
    return data


def _as_job(spec, base_dir: str, input_values: dict, instance_count, process_count) -> dict:
    """A component or legacy spec as the job that runs it once (amldist.authoring.convert does the work)."""
    from amldist.authoring.convert import component_to_job

    # Relative --input paths are read against the current directory, as for a job file.
    job = component_to_job(spec, inputs=input_values or None, instance_count=instance_count,
                           process_count_per_instance=process_count, base_dir=base_dir)
    return job.to_dict()
