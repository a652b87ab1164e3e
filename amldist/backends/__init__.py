"""Backends that run a prepared job: ``local`` (processes on this machine) and ``azureml``.

The ``amldist submit`` command does the backend-neutral part (load the file, apply
``--set``/``--input`` and the count options, convert a component to a job, validate)
and hands a :class:`Prepared` job plus the parsed :class:`SubmitOptions` to one backend:

- ``dry_run(prepared, options) -> str``: what would be sent or started, as text to
  print; needs no credentials, no network and starts nothing;
- ``submit(prepared, options) -> int``: send or run the job; returns the exit code of
  ``amldist submit``. User mistakes are raised as ``amldist.errors.UserError``.

Backends are imported lazily by :func:`get_backend`, so ``amldist --help`` never pays
for azure-ai-ml.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from amldist.spec import CommandJob

BACKENDS = {
    "local": ("amldist.backends.local.plan", "LocalBackend"),
    "azureml": ("amldist.backends.azureml.backend", "AzureMLBackend"),
}


@dataclass
class SubmitOptions:
    """Everything ``amldist submit`` parsed, independent of the backend.

    Fields a backend does not use are ignored by it (the Azure backend ignores the
    local ones and vice versa).
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


@dataclass
class Prepared:
    """A job after overrides, conversion and validation: ready for a backend."""

    job: CommandJob  # amldist.spec model; never a component or legacy spec at this point
    source: str  # the YAML file it came from (as given on the command line)
    base_dir: str  # absolute folder that relative paths (code:, input paths) resolve against
    warnings: list = field(default_factory=list)  # validator Diagnostics of severity warning/note


class Backend(Protocol):
    def dry_run(self, prepared: Prepared, options: SubmitOptions) -> str: ...

    def submit(self, prepared: Prepared, options: SubmitOptions) -> int: ...


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("local" or "azureml"), imported on first use."""
    try:
        module_name, class_name = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}") from None
    module = importlib.import_module(module_name)
    return getattr(module, class_name)()
