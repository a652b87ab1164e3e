"""A run's place among the attempts of ``--retry`` (:mod:`amldist.diagnosis.retry`), as every backend that
keeps run folders records it: written once here so that local and Slurm records say it alike."""

from __future__ import annotations


def attempt_of(options, name: str) -> dict | None:
    """The run's place among the attempts of ``--retry``: a retry names the first attempt, and the first
    attempt names itself (``checkpoints``: it runs under ``--retry``), so ``amldist job cancel`` of any
    attempt knows the run is retried and stops the retries too; None for a run without ``--retry``."""
    first = getattr(options, "attempt_of", None)
    if first:
        return {"number": getattr(options, "attempt", 1), "of": first}
    return {"number": 1, "of": name} if getattr(options, "checkpoints", False) else None
