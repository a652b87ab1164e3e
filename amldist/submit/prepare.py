"""The backend-neutral step of ``amldist submit``: load once -> overrides -> validate once -> a typed job.

What FILE may be, and where each option applies:

- a v2 **command job**: ``--set`` and ``--input`` apply to the loaded document (the YAML as
  written, positions kept), then ``--instance-count`` / ``--process-count-per-instance`` (they
  win over ``--set``, being the more specific options); the result is validated once, with
  positions from the file, and becomes one :class:`~amldist.model.CommandJob`;
- a v2 **command component** or a legacy **DistributedComponent**: the file is validated once,
  as written, and the typed spec is turned into a typed job by
  :func:`amldist.authoring.component_job.component_to_job` (the options give what a pipeline's
  run settings would: ``--input`` values, the counts; that function checks what it adds). No
  second validation: the job is built from a valid component by amldist's own conversion.
  ``--set`` edits that job (``az ml job create --set`` also edits the job); only then is the
  edited job validated as a job, since a ``--set`` value can break it.

The job handed on is normalised: ``distribution.type`` in Azure ML's lower case. Nothing is
sent or started when the result has an error: :class:`SpecInvalid` carries the diagnostics,
printed like ``amldist validate`` prints them, exit code 1. Warnings are kept on the
:class:`~amldist.submit.prepared.Prepared` for the command to print. The file on disk is only
ever read.
"""

from __future__ import annotations

import copy
import os

from amldist.diagnostics import errors_in
from amldist.errors import UserError
from amldist.rules import counts
from amldist.rules.secrets import remember_tree
from amldist.submit import overrides
from amldist.submit.prepared import Prepared


class SpecInvalid(UserError):
    """The spec (after overrides) has errors; ``diagnostics`` holds every finding."""

    def __init__(self, file: str, diagnostics: list):
        errors = errors_in(diagnostics)
        super().__init__(f"{file}: {len(errors)} error(s); nothing was submitted or started",
                         hint="fix the file (or the --set/--input values) and run again", exit_code=1)
        self.diagnostics = diagnostics


def prepare(path: str, *, sets=(), inputs=(), instance_count: int | None = None,
            process_count_per_instance: int | None = None, cwd: str | None = None) -> Prepared:
    """The job ``amldist submit`` would run for ``path`` and these options (see the module docstring)."""
    from amldist.model import from_data, read_document
    from amldist.model.kinds import COMMAND_JOB, PIPELINE_JOB, SWEEP_JOB, detect_kind
    from amldist.validate import validate_data

    cwd = cwd or os.getcwd()
    file = os.fspath(path)
    text, doc = read_document(file)
    input_values = overrides.parse_inputs(inputs)
    remember_tree(doc.data)  # from here on a secret's value is masked in every message and file,
    remember_tree(input_values)  # whatever name a binding passes it under
    base_dir = os.path.dirname(os.path.abspath(file))
    kind = detect_kind(doc.data)
    if kind is None:
        from_data(doc.data, file=file)  # raises the loader's "not a spec" error
    if kind == PIPELINE_JOB:  # a graph of steps: amldist.submit.pipeline resolves it
        from amldist.submit.pipeline import prepare_pipeline

        return prepare_pipeline(file, doc, text, sets=sets, inputs=inputs, cwd=cwd, instance_count=instance_count,
                                process_count_per_instance=process_count_per_instance, check=check_findings)
    if kind == SWEEP_JOB:  # trials of one command: amldist.submit.sweep
        from amldist.submit.sweep import prepare_sweep

        def counts(data: dict) -> None:  # the count options size each trial, as they size a command job
            if isinstance(data.get("trial"), dict):
                _apply_counts(data["trial"], instance_count, process_count_per_instance, file)

        return prepare_sweep(file, doc, text, sets=sets, input_values=input_values, cwd=cwd, check=check_findings,
                             apply_counts=counts)
    kept: list = []
    includes: tuple = ()

    if kind == COMMAND_JOB:
        data = overrides.apply_sets(doc.data, sets)
        data = overrides.apply_inputs(data, input_values, cwd=cwd, file=file)
        _apply_counts(data, instance_count, process_count_per_instance, file)
        # The text locates findings inside the command; only valid while --set left the command alone.
        same_command = data.get("command") == doc.data.get("command")
        check_findings(file, overrides.blame_sets(validate_data(data, file, kind=COMMAND_JOB, base_dir=base_dir,
                                                                doc=doc, text=text if same_command else None),
                                                  sets), kept)
        job = from_data(data, file=file)
    else:
        check_findings(file, validate_data(doc.data, file, kind=kind, base_dir=base_dir, doc=doc, text=text), kept)
        spec = from_data(doc.data, file=file)
        includes = _includes(spec, base_dir, file)
        job = _as_job(spec, base_dir, input_values, instance_count, process_count_per_instance)
        if sets:
            data = overrides.apply_sets(job.to_dict(), sets)
            as_job = f"{file} (run as a job, after --set)"
            check_findings(as_job, overrides.blame_sets(validate_data(data, as_job, kind=COMMAND_JOB,
                                                                      base_dir=base_dir), sets), kept)
            job = from_data(data, file=file)
    _normalise(job)
    return Prepared(job=job, source=file, base_dir=base_dir, warnings=_once_per_input(kept), code_includes=includes)


_SHELL_CODES = ("shell-divergence", "shell-value", "shell-context", "interpreter-code")


def _once_per_input(diagnostics: list) -> list:
    """One shell warning per input: a component's default, then the job's own value after --set,
    would say it twice; the later one (about the value that runs) is kept."""
    import re

    def key(d):
        found = re.search(r"inputs\.[A-Za-z_][A-Za-z0-9_.]*", d.message) if d.code in _SHELL_CODES else None
        return (d.code, found.group()) if found else id(d)

    last = {key(d): i for i, d in enumerate(diagnostics)}
    return [d for i, d in enumerate(diagnostics) if last[key(d)] == i]


def check_findings(file: str, diagnostics: list, kept: list) -> None:
    """Raise :class:`SpecInvalid` on any error; otherwise keep the warnings and notes."""
    if errors_in(diagnostics):
        raise SpecInvalid(file, diagnostics)
    kept.extend(diagnostics)


def _apply_counts(data: dict, instance_count, process_count, file: str) -> None:
    """Set the count options in ``data`` (prepare's own copy, changed in place)."""
    from amldist.rules import process_counts

    if instance_count is not None:
        resources = data.get("resources")
        if not isinstance(resources, dict):
            resources = data["resources"] = {}
        resources["instance_count"] = instance_count
    if process_count is not None:
        dist = data.get("distribution")
        kind = dist.get("type") if isinstance(dist, dict) else None
        if not process_counts.takes_process_count(kind):
            raise UserError(process_counts.message("--process-count-per-instance", kind, file),
                            hint=process_counts.HINT)
        dist["process_count_per_instance"] = process_count


def _includes(spec, base_dir: str, file: str) -> tuple:
    """A component's ``additional_includes``, resolved from its own folder (see
    :mod:`amldist.rules.additional_includes`); the backends add them to the code snapshot."""
    from amldist.rules import additional_includes, paths

    entries = getattr(spec, "extra", {}).get("additional_includes")
    code = getattr(spec, "code", None)
    code_dir = paths.local_path(str(code), base_dir) if isinstance(code, str) and paths.is_local(code) else None
    return additional_includes.resolve(entries, base_dir, code_dir, file)


def _as_job(spec, base_dir: str, input_values: dict, instance_count, process_count):
    """A (validated) component or legacy spec as the typed job that runs it once."""
    from amldist.authoring.component_job import component_to_job

    # Relative --input paths are read against the current directory, as for a job file.
    return component_to_job(spec, inputs=input_values or None, instance_count=instance_count,
                            process_count_per_instance=process_count, base_dir=base_dir, checked=True,
                            keep_includes=True)


def _normalise(job) -> None:
    """Fold what Azure ML reads loosely (the distribution type's case, ``2.0`` for a count), so that
    nothing after this step reads it loosely again."""
    dist, resources = job.distribution, job.resources
    if dist is not None and not isinstance(dist, dict):
        job.distribution = dist = copy.copy(dist)
        dist.type = dist.kind or dist.type
        for name in ("process_count_per_instance", "worker_count", "parameter_server_count"):
            setattr(dist, name, counts.as_count(getattr(dist, name)))
    if resources is not None and not isinstance(resources, dict):
        job.resources = resources = copy.copy(resources)
        resources.instance_count = counts.as_count(resources.instance_count)
