"""The spec model: plain dataclasses for the documents amldist handles.

- ``CommandJob`` and ``CommandComponent``: ML v2 ``type: command``;
- ``PipelineJob``: ML v2 ``type: pipeline`` (its ``jobs`` stay plain mappings);
- ``DistributedComponent``: the legacy spec with a ``launcher``;
- ``SweepJob``: ML v2 ``type: sweep`` (its ``trial`` and search space stay plain mappings).

Every class keeps the keys it does not model in ``extra``, in their original
order, so load -> dump -> load is the identity on any valid file. ``to_dict``
writes the modelled keys in the order the fields are declared (a stable order
close to Azure's own examples), then ``extra``. ``None`` means "not given" and is
never written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

from amldist.errors import UserError
from amldist.model.files import write_atomic
from amldist.model.kinds import distribution_kind
from amldist.model.yamlio import dump_yaml

_SCHEMA = {"key": "$schema"}


def _nested(cls):
    return {"nested": cls}


def from_dict(cls, data: dict):
    """Build ``cls`` from a mapping; unknown keys go to ``extra``.

    Nested parts (distribution, resources, ...) become their dataclass only when
    they are mappings: a malformed value is kept as it is, for the validator to report.
    """
    by_key = {f.metadata.get("key", f.name): f for f in fields(cls) if f.name != "extra"}
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        f = by_key.get(key)
        if f is None:
            extra[key] = value
            continue
        nested = f.metadata.get("nested")
        if nested is not None and isinstance(value, dict):
            value = from_dict(nested, value)
        kwargs[f.name] = value
    return cls(**kwargs, extra=extra)


def to_dict(obj) -> dict:
    out: dict[str, Any] = {}
    for f in fields(obj):
        if f.name == "extra":
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        out[f.metadata.get("key", f.name)] = to_dict(value) if is_dataclass(value) else value
    for key, value in obj.extra.items():
        out.setdefault(key, value)
    return out


class _Part:
    """Common methods of every modelled mapping."""

    def to_dict(self) -> dict:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: dict):
        return from_dict(cls, data)


@dataclass
class Distribution(_Part):
    type: str | None = None  # pytorch | mpi | tensorflow | ray (case-insensitive in v2)
    process_count_per_instance: int | None = None  # pytorch, mpi
    worker_count: int | None = None  # tensorflow
    parameter_server_count: int | None = None  # tensorflow
    extra: dict = field(default_factory=dict)

    @property
    def kind(self) -> str | None:
        """``type`` as Azure ML reads it (case-insensitive): ``"pytorch"`` for ``PyTorch``; None when unset."""
        return distribution_kind(self.type)



@dataclass
class Resources(_Part):
    instance_count: int | None = None
    instance_type: str | None = None
    shm_size: str | None = None
    docker_args: str | None = None
    properties: dict | None = None
    locations: list | None = None
    max_instance_count: int | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class Limits(_Part):
    timeout: int | None = None  # seconds
    extra: dict = field(default_factory=dict)


@dataclass
class Launcher(_Part):
    type: str | None = None  # mpi | torch.distributed
    additional_arguments: str | None = None
    extra: dict = field(default_factory=dict)


class Spec(_Part):
    """Methods shared by the four documents."""

    kind: ClassVar[str]

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict())

    def save(self, path, *, overwrite: bool = False) -> str:
        """Write the YAML to ``path``; an existing file is kept unless ``overwrite``."""
        path = os.fspath(path)
        if os.path.exists(path) and not overwrite:
            raise UserError(f"{path} already exists", hint="pass overwrite=True (or --force) to replace it")
        return write_atomic(path, self.to_yaml())  # never leaves a half-written spec behind


@dataclass
class CommandJob(Spec):
    kind: ClassVar[str] = "command_job"
    schema: str | None = field(default=None, metadata=_SCHEMA)
    type: str | None = None
    name: str | None = None
    display_name: str | None = None
    experiment_name: str | None = None
    description: str | None = None
    tags: dict | None = None
    properties: dict | None = None
    code: str | None = None
    command: str | None = None
    environment: Any = None  # "azureml:name:version" or an inline mapping
    environment_variables: dict | None = None
    compute: str | None = None
    inputs: dict | None = None
    outputs: dict | None = None
    distribution: Distribution | None = field(default=None, metadata=_nested(Distribution))
    resources: Resources | None = field(default=None, metadata=_nested(Resources))
    limits: Limits | None = field(default=None, metadata=_nested(Limits))
    queue_settings: dict | None = None
    services: dict | None = None
    identity: dict | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class CommandComponent(Spec):
    kind: ClassVar[str] = "command_component"
    schema: str | None = field(default=None, metadata=_SCHEMA)
    type: str | None = None
    name: str | None = None
    version: Any = None
    display_name: str | None = None
    description: str | None = None
    tags: dict | None = None
    is_deterministic: bool | None = None
    code: str | None = None
    command: str | None = None
    environment: Any = None
    inputs: dict | None = None
    outputs: dict | None = None
    distribution: Distribution | None = field(default=None, metadata=_nested(Distribution))
    resources: Resources | None = field(default=None, metadata=_nested(Resources))
    extra: dict = field(default_factory=dict)


@dataclass
class PipelineJob(Spec):
    kind: ClassVar[str] = "pipeline_job"
    schema: str | None = field(default=None, metadata=_SCHEMA)
    type: str | None = None
    name: str | None = None
    display_name: str | None = None
    experiment_name: str | None = None
    description: str | None = None
    tags: dict | None = None
    properties: dict | None = None
    compute: str | None = None
    settings: dict | None = None
    inputs: dict | None = None
    outputs: dict | None = None
    jobs: dict | None = None  # node name -> mapping, kept as written
    extra: dict = field(default_factory=dict)


@dataclass
class DistributedComponent(Spec):
    kind: ClassVar[str] = "distributed_component"
    schema: str | None = field(default=None, metadata=_SCHEMA)
    name: str | None = None
    version: Any = None
    display_name: str | None = None
    type: str | None = None  # DistributedComponent or DistributedComponent@1-legacy
    description: str | None = None
    tags: dict | None = None
    is_deterministic: bool | None = None
    inputs: dict | None = None
    outputs: dict | None = None
    code: str | None = None
    environment: Any = None
    launcher: Launcher | None = field(default=None, metadata=_nested(Launcher))
    extra: dict = field(default_factory=dict)


@dataclass
class SweepJob(Spec):
    """A hyperparameter sweep (``type: sweep``): trials of one command (``trial``, kept as written: a
    command job's command, code, environment, distribution and resources) over ``search_space``."""

    kind: ClassVar[str] = "sweep_job"
    schema: str | None = field(default=None, metadata=_SCHEMA)
    type: str | None = None
    name: str | None = None
    display_name: str | None = None
    experiment_name: str | None = None
    description: str | None = None
    tags: dict | None = None
    properties: dict | None = None
    compute: str | None = None
    trial: dict | None = None
    inputs: dict | None = None
    outputs: dict | None = None
    sampling_algorithm: Any = None  # random | grid | bayesian, or {type: ..., seed: ...}
    search_space: dict | None = None
    objective: dict | None = None
    early_termination: dict | None = None
    limits: dict | None = None  # max_total_trials, max_concurrent_trials, timeout, trial_timeout
    resources: dict | None = None
    extra: dict = field(default_factory=dict)


SPEC_CLASSES = {cls.kind: cls for cls in (CommandJob, CommandComponent, PipelineJob, DistributedComponent, SweepJob)}
