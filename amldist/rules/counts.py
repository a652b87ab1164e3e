"""Counts in a spec (nodes, processes, workers, timeouts): the one rule for what a valid count is.

A count is a whole number (``2`` or ``2.0``, as JSON Schema's ``integer`` and azure-ai-ml read it;
not ``2.5``, ``true`` or ``"4"``) of at least its minimum
(1, or 0 for ``parameter_server_count``) and at most its maximum. azure-ai-ml accepts 0, -4 and
10**100 and leaves the service to refuse them after the upload; amldist refuses them first, the
same way in the builders, ``convert``, the command-line options, the JSON Schemas (their
``minimum``/``maximum`` are these numbers; a test ties them) and submit.

The maximum, :data:`MAX_COUNT`, is a sanity bound far above any real cluster (the largest HPC
sizes have 176 cores) that keeps a typo (an extra ``000``) from planning a million processes. The
local backend starts every process on this machine and has its own, lower limit,
:data:`MAX_LOCAL_PROCESSES`.
"""

from __future__ import annotations

MAX_COUNT = 10_000
MAX_LOCAL_PROCESSES = 256


# field name (the last part of its path) -> its minimum; every other count starts at 1.
MINIMUMS = {"parameter_server_count": 0, "retry": 0}  # --retry 0: diagnose, never resubmit


def limits(field: str) -> tuple[int, int | None]:
    """(minimum, maximum) of the count called ``field`` (a name or a dotted path)."""
    return MINIMUMS.get(field.rsplit(".", 1)[-1], 1), MAX_COUNT


def field_problem(field: str, value) -> str | None:
    """:func:`count_problem` with the limits of ``field``."""
    minimum, maximum = limits(field)
    return count_problem(value, minimum=minimum, maximum=maximum)


def count_problem(value, *, minimum: int = 1, maximum: int | None = None) -> str | None:
    """Why ``value`` is not a valid count (``"must be at least 1, got 0"``), or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        return f"must be a whole number, got {_show(value)}"
    if value < minimum:
        return f"must be at least {minimum}, got {value}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum}, got {_show(value)}"
    return None


def as_count(value):
    """A valid count as an ``int`` (``2.0`` -> ``2``); anything else unchanged, for the rule to report."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def parse_count(text: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """A count typed on the command line; ValueError with the problem as its message."""
    stripped = text.strip()
    digits = stripped.lstrip("+-")
    # ASCII digits only: str.isdigit() also takes '²' and '٣', which int() then refuses or reads as 3
    if not (digits.isascii() and digits.isdigit()) or len(stripped) > 30:
        raise ValueError(f"must be a whole number, got {_show(text)}")
    value = int(stripped)
    problem = count_problem(value, minimum=minimum, maximum=maximum)
    if problem:
        raise ValueError(problem)
    return value


def _show(value) -> str:
    """A value as messages quote it, cut short (a 5,000-digit number is not worth printing)."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) else str(value) \
        if value.bit_length() < 200 else "a number with more than 60 digits"
    return text if len(text) <= 60 else text[:57] + "..."


def count_option(field: str):
    """argparse ``type=`` for the count called ``field``: the same rule as in a spec, a usage error (exit 2)
    otherwise. Here, not in the CLI, because a backend declares its flags (:class:`amldist.backends.base.Flag`)
    with it."""

    def parse(text: str) -> int:
        import argparse

        minimum, maximum = limits(field)
        try:
            return parse_count(text, minimum=minimum, maximum=maximum)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = field  # argparse names the option's type in its messages
    return parse
