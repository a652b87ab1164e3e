"""Backends that run a prepared job: ``local`` (processes on this machine) and ``azureml``.

The ``amldist submit`` command does the backend-neutral part (:mod:`amldist.submit`: load
the file, apply ``--set``/``--input`` and the count options, convert a component to a job,
validate) and hands an :class:`~amldist.submit.prepared.Prepared` job plus the parsed
:class:`~amldist.submit.prepared.SubmitOptions` to one backend, in torchx's two steps:

- ``plan(prepared, options) -> plan``: pure (starts nothing, writes nothing, sends
  nothing, needs no credentials): a typed plan of *everything* the run will do (locally:
  each process with its argv, environment, working folder and log; Azure: the workspace,
  the snapshot's files and the REST body);
- ``describe(plan) -> str``: the plan as text, what ``--dry-run`` prints (secrets masked);
- ``run(plan) -> int``: the only step that acts, doing exactly what the plan says; returns
  the exit code of ``amldist submit``. User mistakes are raised as ``amldist.errors.UserError``.

Backends are imported lazily by :func:`get_backend`, so ``amldist --help`` never pays
for azure-ai-ml.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from amldist.submit.prepared import Prepared, SubmitOptions

BACKENDS = {
    "local": ("amldist.backends.local.backend", "LocalBackend"),
    "azureml": ("amldist.backends.azureml.backend", "AzureMLBackend"),
}


class Backend(Protocol):
    def plan(self, prepared: Prepared, options: SubmitOptions) -> Any: ...

    def describe(self, plan: Any) -> str: ...

    def run(self, plan: Any) -> int: ...


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("local" or "azureml"), imported on first use."""
    try:
        module_name, class_name = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}") from None
    module = importlib.import_module(module_name)
    return getattr(module, class_name)()
