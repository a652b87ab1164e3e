"""Backends that run a prepared job or pipeline: the registry, built-in and installed alike.

Every backend subclasses :class:`amldist.backends.base.Backend` (the contract, written once: typed
options and the flags that fill them, a pure ``plan()``, ``run(plan) -> JobRecord`` as the only step that
acts, the job verbs ``list/show/logs/cancel/download`` returning a frozen
:class:`~amldist.backends.base.JobRecord`, and ``run_logs`` for ``amldist job diagnose``). The submit
sequence (load once, validate once, choose a backend, plan, run) is written once in
:mod:`amldist.backends.submit`; ``amldist submit`` and :func:`amldist.run_local` both call it.

One registry, one format: a name -> ``"module:Class"``. The built-in three are listed in :data:`BUILT_IN`;
any installed package adds its own under the entry-point group ``amldist.backends`` (in its
``pyproject.toml``: ``[project.entry-points."amldist.backends"]`` ``mine = "my_pkg.backend:MyBackend"``),
and both are loaded the same way (:func:`load`). A built-in name cannot be taken by an entry point. A
backend is imported on first use only, so ``amldist --help`` and ``validate`` never pay for azure-ai-ml,
and a broken entry point (an import error, a class that is not a Backend) is one line naming it.
"""

from __future__ import annotations

import importlib

from amldist.backends.base import Backend, JobRecord, Options, Plan
from amldist.errors import UserError

__all__ = ["BACKENDS", "BUILT_IN", "ENTRY_POINT_GROUP", "Backend", "JobRecord", "Options", "Plan", "get_backend",
           "load", "names", "register"]

ENTRY_POINT_GROUP = "amldist.backends"

BUILT_IN: dict[str, str] = {
    "local": "amldist.backends.local.backend:LocalBackend",
    "azureml": "amldist.backends.azureml.backend:AzureMLBackend",
    "slurm": "amldist.backends.slurm.backend:SlurmBackend",
}

# name -> "module:Class": the built-in ones, then what register() added; entry points are merged on first use
BACKENDS: dict[str, str] = dict(BUILT_IN)
_SOURCES: dict[str, str] = {}  # name -> the distribution that registered it by entry point
_discovered = False


def register(name: str, target: str) -> None:
    """Add a backend from code: ``get_backend(name)`` then imports ``target`` (``"module:Class"``)."""
    BACKENDS[name] = target


def _discover() -> None:
    """Merge the entry points of group ``amldist.backends`` into :data:`BACKENDS` (once per process)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in BUILT_IN or point.name in BACKENDS:
            continue  # built-in names stay amldist's; the first distribution to claim a name keeps it
        BACKENDS[point.name] = point.value
        _SOURCES[point.name] = getattr(point.dist, "name", None) or "an installed package"


def names() -> list[str]:
    """Every backend's name: the built-in ones first, then those installed packages registered."""
    _discover()
    return list(BACKENDS)


def load(name: str) -> type[Backend]:
    """The class of backend ``name``; UserError (exit 2, one line) for an unknown name, a target that does
    not import, or a class that is not a :class:`Backend` subclass."""
    _discover()
    try:
        target = BACKENDS[name]
    except KeyError:
        raise UserError(f"no backend named {name!r}", hint="the backends: " + ", ".join(BACKENDS)) from None
    where = f"backend {name!r} ({target}" + (f", entry point of {_SOURCES[name]})" if name in _SOURCES else ")")
    module_name, _, class_name = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except Exception as exc:  # an installed package's bug is its own: one line, never amldist's traceback
        raise UserError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}".splitlines()[0],
                        hint="fix or uninstall the package that registers it") from None
    if not (isinstance(found, type) and issubclass(found, Backend)):
        raise UserError(f"{where} is not a subclass of amldist.backends.base.Backend",
                        hint="an entry point of group amldist.backends names such a class as module:Class")
    return found


def get_backend(name: str, **settings) -> Backend:
    """The backend called ``name``, imported on first use; ``settings`` go to its constructor (where to
    look: ``run_root=`` for local, ``workspace=``/``resource_group=``/``subscription=`` for azureml)."""
    return load(name)(**settings)
