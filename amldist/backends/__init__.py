"""Backends that run a prepared job or pipeline: ``local`` (processes on this machine) and ``azureml``.

Every backend subclasses :class:`amldist.backends.base.Backend` (the contract, written once: typed
options, a pure ``plan()``, ``run(plan) -> JobRecord`` as the only step that acts, and the job verbs
``list/show/logs/cancel/download`` returning a frozen :class:`~amldist.backends.base.JobRecord`).
The submit sequence (load once, validate once, choose a backend, plan, run) is written once in
:mod:`amldist.backends.submit`; ``amldist submit`` and :func:`amldist.run_local` both call it.

:data:`BACKENDS` maps a name to ``(module, class)``; a new backend adds one entry (or calls
:func:`register`). Backends are imported lazily by :func:`get_backend`, so ``amldist --help``
never pays for azure-ai-ml.
"""

from __future__ import annotations

import importlib

from amldist.backends.base import Backend, JobRecord, Options, Plan

__all__ = ["BACKENDS", "Backend", "JobRecord", "Options", "Plan", "get_backend", "register"]

BACKENDS: dict[str, tuple[str, str]] = {
    "local": ("amldist.backends.local.backend", "LocalBackend"),
    "azureml": ("amldist.backends.azureml.backend", "AzureMLBackend"),
    "slurm": ("amldist.backends.slurm.backend", "SlurmBackend"),
}


def register(name: str, module: str, class_name: str) -> None:
    """Add a backend: ``get_backend(name)`` then imports ``module`` and builds ``class_name``."""
    BACKENDS[name] = (module, class_name)


def get_backend(name: str, **settings) -> Backend:
    """The backend called ``name``, imported on first use; ``settings`` go to its constructor (where to
    look: ``run_root=`` for local, ``workspace=``/``resource_group=``/``subscription=`` for azureml)."""
    try:
        module_name, class_name = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}") from None
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(**settings)
