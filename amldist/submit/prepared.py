"""What ``amldist submit`` hands a backend: the prepared work and the options it was given.

:func:`amldist.submit.prepare.prepare` returns a :class:`PreparedWork`: either a
:class:`PreparedJob` (loaded once, overrides applied, validated once, a typed command job) or a
:class:`~amldist.submit.pipeline.PreparedPipeline` (the same for a pipeline, plus its graph). A
backend tells them apart by their type (``isinstance`` or ``kind``), never by probing attributes.
:class:`SubmitOptions` is everything the command line said that is not about the job itself; a
backend's own typed options (:mod:`amldist.backends.base`) carry the same field names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # pragma: no cover
    from amldist.model import CommandJob


@dataclass
class SubmitOptions:
    """Everything ``amldist submit`` parsed, independent of the backend, in one mutable object.

    ``amldist submit`` and :func:`amldist.run_local` give a backend its own frozen options instead
    (:class:`amldist.backends.local.backend.LocalOptions`, ``AzureOptions``, built by
    ``Backend.options(args)``); they use the same field names, so a plan made from this object (as
    tests and older callers do) is the same plan. Fields a backend does not use are ignored by it.
    """

    dry_run: bool = False
    stream: bool = False
    name: str | None = None  # --name: the job name; None lets the backend choose one
    # Azure ML workspace flags; None means "not given" (the backend falls back to the
    # environment variables and config.json, as azure-ai-ml does).
    workspace: str | None = None
    resource_group: str | None = None
    subscription: str | None = None
    # Local backend only.
    run_root: str = ".amldist/runs"  # run folders live under it, relative to the current directory
    grace_seconds: float = 5.0  # after one rank fails, how long the others get before SIGTERM
    status_line: bool | None = None  # None: a live status line only when stdout is a terminal
    python: str | None = None  # --python: the ranks' python; None: the interpreter amldist runs in
    max_parallel: int | None = None  # --max-parallel: processes a pipeline's steps may run at once; None: CPUs
    inject: tuple = ()  # --inject FAULT...: the fault drill (amldist.rules.faults)
    checkpoint_dir: str | None = None  # AMLDIST_CHECKPOINT_DIR (--retry: the attempts share it)
    checkpoints: bool = False  # --retry: AMLDIST_CHECKPOINT_DIR = <run folder>/checkpoints unless given
    attempt_of: str | None = None  # a retry: the first attempt's job name
    attempt: int = 1


class PreparedWork:
    """What ``prepare`` returns: a job or a pipeline after overrides and validation (see the docstring).

    Every kind has ``job`` (the typed spec), ``source`` (the file, as given), ``base_dir`` (where its
    relative paths resolve) and ``warnings`` (validator diagnostics of severity warning/note)."""

    kind: ClassVar[str] = ""  # "job" | "pipeline"


@dataclass
class Prepared(PreparedWork):
    """A job after overrides, conversion and validation: ready for a backend."""

    kind: ClassVar[str] = "job"

    job: CommandJob  # amldist.model model; never a component or legacy spec at this point
    source: str  # the YAML file it came from (as given on the command line)
    base_dir: str  # absolute folder that relative paths (code:, input paths) resolve against
    warnings: list = field(default_factory=list)  # validator Diagnostics of severity warning/note
    # a component's additional_includes (amldist.rules.additional_includes.Include), added to its code snapshot
    code_includes: tuple = ()


PreparedJob = Prepared  # the name that says what it is beside PreparedPipeline
