"""The one home of the pytorch/mpi-only rule: ``process_count_per_instance`` (processes per node) exists
for the ``pytorch`` and ``mpi`` distributions only.

tensorflow counts tasks with ``worker_count``/``parameter_server_count`` and ray starts its own
workers; azure-ai-ml drops the key for them without a word. The JSON Schema refuses it there (each
distribution type takes only its own keys); ``amldist submit --process-count-per-instance`` and
``component_to_job(process_count_per_instance=...)`` refuse it with :func:`message` and :data:`HINT`;
the builders offer the argument only on ``pytorch_job`` and ``mpi_job``.
"""

from __future__ import annotations

from amldist.model.kinds import distribution_kind

PROCESS_COUNT_KINDS = ("pytorch", "mpi")
HINT = "set a pytorch or mpi distribution (e.g. --set distribution.type=pytorch), or drop the option"


def takes_process_count(distribution_type) -> bool:
    """Whether a distribution of this ``type`` (any letter case) takes ``process_count_per_instance``."""
    return distribution_kind(distribution_type) in PROCESS_COUNT_KINDS


def message(option: str, distribution_type, where: str) -> str:
    """``option`` refused for ``where``, whose distribution type is ``distribution_type`` (None: none)."""
    has = f"a {distribution_type!r} distribution" if distribution_type is not None else "no distribution"
    return f"{option} applies to pytorch and mpi distributions only; {where} has {has}"
