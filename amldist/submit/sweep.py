"""A sweep job (``type: sweep``) prepared for a backend, and each of its trials as a command job.

``prepare`` applies ``--set`` and ``--input`` to the sweep document as written (``--set
trial.command=...``, ``--set limits.max_total_trials=2``), then ``--instance-count`` and
``--process-count-per-instance`` to the trial, validates it once as a sweep job, and hands
on a :class:`PreparedSweep`. Azure ML receives the sweep itself; a local run turns each sampled
parameter set into one command job with :func:`trial_job`:

- the trial's ``command``, ``code``, ``environment``, ``environment_variables``, ``distribution`` and
  ``resources`` (the sweep's ``resources`` when the trial has none), the sweep's ``inputs`` and
  ``outputs``, and ``limits.timeout`` = the sweep's ``trial_timeout``;
- each ``${{search_space.NAME}}`` becomes ``${{inputs.NAME}}`` with the sampled value as a literal input
  (an integer, number, boolean or text, as sampled), so the value reaches the command as any input's does
  (the local backend's injection rule applies to it) and as Azure ML pastes it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import ClassVar

from amldist.errors import UserError
from amldist.rules import search_space
from amldist.submit.prepared import PreparedWork

_TRIAL_KEYS = ("command", "code", "environment", "environment_variables", "distribution", "resources",
               "queue_settings")


@dataclass
class PreparedSweep(PreparedWork):
    """A sweep job after overrides and validation: ``job`` is the typed :class:`~amldist.model.SweepJob`."""

    kind: ClassVar[str] = "sweep"

    job: object  # amldist.model.SweepJob
    source: str
    base_dir: str
    warnings: list = field(default_factory=list)


def prepare_sweep(file: str, doc, text: str, *, sets, input_values: dict, cwd: str, check,
                  apply_counts=None) -> PreparedSweep:
    """The sweep of ``file`` with ``--set``/``--input`` applied (then ``apply_counts(data)``: the count options,
    on the trial), validated once (``check``: prepare's check_findings, which raises SpecInvalid on an error)."""
    import os

    from amldist.model import from_data
    from amldist.model.kinds import SWEEP_JOB
    from amldist.submit import overrides
    from amldist.validate import validate_data

    data = overrides.apply_sets(doc.data, sets)
    data = overrides.apply_inputs(data, input_values, cwd=cwd, file=file)
    if apply_counts is not None:
        data = copy.deepcopy(data)  # the document as read stays as it was
        apply_counts(data)
    same = data.get("trial") == doc.data.get("trial")
    kept: list = []
    base_dir = os.path.dirname(os.path.abspath(file))
    check(file, validate_data(data, file, kind=SWEEP_JOB, base_dir=base_dir, doc=doc, text=text if same else None),
          kept)
    return PreparedSweep(job=from_data(data, file=file), source=file, base_dir=base_dir, warnings=kept)


def trial_job(sweep, parameters: dict, *, name: str, file: str):
    """Trial ``name`` of ``sweep`` with ``parameters`` as the command job that runs it (see the docstring)."""
    from amldist.model import from_data

    trial = copy.deepcopy(sweep.trial or {})
    inputs = copy.deepcopy(sweep.inputs or {})
    clash = sorted(set(parameters) & set(inputs))
    if clash:
        raise UserError(f"{file}: search_space.{clash[0]} and inputs.{clash[0]} share a name; a local trial passes "
                        "each sampled value as an input of the same name", hint=f"rename one of them")
    command = search_space.REFERENCE.sub(lambda m: "${{inputs." + m.group(1) + "}}", trial.get("command") or "")
    inputs.update(parameters)  # literal inputs: an integer, number, boolean or text as sampled
    data = {"type": "command", "name": name, **{k: trial[k] for k in _TRIAL_KEYS if k in trial},
            "command": command, "inputs": inputs}
    if "resources" not in trial and sweep.resources:
        data["resources"] = copy.deepcopy(sweep.resources)
    for key in ("outputs", "display_name", "experiment_name", "tags"):
        if getattr(sweep, key):
            data[key] = copy.deepcopy(getattr(sweep, key))
    trial_timeout = (sweep.limits or {}).get("trial_timeout")
    if trial_timeout:
        data["limits"] = {"timeout": trial_timeout}
    return from_data(data, file=file)

