"""A sweep job's search space, sampling and early termination: the one rule, pure functions.

- :func:`references`: the ``${{search_space.NAME}}`` placeholders of a trial's command (Azure ML substitutes
  each with the trial's sampled value); :func:`static_findings`: what the service refuses although
  azure-ai-ml loads it (grid over a non-``choice`` parameter, bayesian with an early-termination policy or
  a distribution it does not model, a uniform range upside down, a spread that is not positive);
- :func:`trials`: the parameter sets a local sweep runs, in order: ``grid`` is the product of the
  ``choice`` values in the order written (at most ``max_total_trials``), ``random`` draws every parameter
  from its distribution with a seeded :class:`random.Random` (Azure ML's definitions: ``loguniform`` is
  ``exp(uniform(min, max))``, ``q*`` rounds to a multiple of ``q``, ``randint`` is ``0 .. upper-1``);
  ``bayesian`` is refused in one line (it needs Azure ML's service to choose the next trial);
- :func:`to_stop`: which running trials an early-termination policy stops, given every trial's logged
  metric series (bandit, median_stopping, truncation_selection, as Azure ML documents them).

Hand-written: the sampling is a few lines of :mod:`random`, and the policies are Azure ML's definitions,
which no library implements under these names. Standard library only (the validator imports it).
"""

from __future__ import annotations

import itertools
import math
import random
import re
import statistics
from dataclasses import dataclass

REFERENCE = re.compile(r"\$\{\{\s*search_space\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
BAYESIAN_TYPES = ("choice", "uniform", "quniform")
BAYESIAN_HINT = ("run it with sampling_algorithm: random (or grid over choice values) here; bayesian sampling "
                 "runs on Azure ML (submit without --local)")


def word(value) -> str | None:
    """A ``type:`` or ``sampling_algorithm`` as Azure ML matches it (lower case); an object's ``type``."""
    if isinstance(value, dict):
        value = value.get("type")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def references(command) -> list[str]:
    """The search-space names a trial's command reads, in order, each once."""
    return list(dict.fromkeys(REFERENCE.findall(command))) if isinstance(command, str) else []


@dataclass(frozen=True)
class Finding:
    path: tuple  # the field, from the sweep job's root
    code: str
    message: str
    hint: str | None = None


def static_findings(data: dict) -> list[Finding]:
    """Errors the service would give a sweep job that azure-ai-ml accepts (see the module docstring)."""
    space = data.get("search_space") if isinstance(data.get("search_space"), dict) else {}
    algorithm = word(data.get("sampling_algorithm"))
    found = []
    for name, param in space.items():
        found += _parameter_findings(name, param)
        kind = word(param) if isinstance(param, dict) else None
        if algorithm == "grid" and kind not in (None, "choice"):
            found.append(Finding(("search_space", name, "type"), "grid-needs-choice",
                                 f"search_space.{name}: grid sampling takes only choice parameters, not {kind} "
                                 "(Azure ML refuses the job)",
                                 "list the values to try (type: choice, values: [...]) or use sampling_algorithm: "
                                 "random"))
        if algorithm == "bayesian" and kind not in (None, *BAYESIAN_TYPES):
            found.append(Finding(("search_space", name, "type"), "bayesian-distribution",
                                 f"search_space.{name}: bayesian sampling takes choice, uniform and quniform only, "
                                 f"not {kind} (Azure ML refuses the job)", "use sampling_algorithm: random"))
    if algorithm == "bayesian" and isinstance(data.get("early_termination"), dict):
        found.append(Finding(("early_termination",), "bayesian-early-termination",
                             "early_termination: bayesian sampling takes no early-termination policy "
                             "(Azure ML refuses the job)", "remove early_termination or use random sampling"))
    return found


def _parameter_findings(name: str, param) -> list[Finding]:
    if not isinstance(param, dict):
        return []
    kind, where = word(param), ("search_space", name)
    low, high = param.get("min_value"), param.get("max_value")
    if kind in ("uniform", "loguniform", "quniform", "qloguniform") and _numbers(low, high) and low >= high:
        return [Finding(where + ("max_value",), "empty-range", f"search_space.{name}: max_value ({high}) must be "
                        f"greater than min_value ({low})", "swap them or widen the range")]
    for key in ("sigma", "q"):
        value = param.get(key)
        if key in param and _numbers(value) and value <= 0:
            return [Finding(where + (key,), "not-positive", f"search_space.{name}.{key}: {value} must be greater "
                            "than 0", "write a positive number")]
    return []


def _numbers(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


class SweepRefused(ValueError):
    """A search space a local sweep cannot sample (the message is one line; ``hint`` what to do)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def trials(space: dict, algorithm, max_total: int, *, seed: int | None = None) -> list[dict]:
    """The parameter sets to run, in order (see the module docstring)."""
    kind = word(algorithm) or "random"
    if kind == "bayesian":
        raise SweepRefused("bayesian sampling chooses each trial from the results so far on Azure ML's service; "
                           "amldist does not run it locally", BAYESIAN_HINT)
    for name, param in space.items():
        if word(param) == "choice" and any(isinstance(v, dict) for v in param.get("values") or ()):
            raise SweepRefused(f"search_space.{name}: a choice of nested search spaces runs only on Azure ML",
                               "list plain values, or submit without --local")
    if kind == "grid":
        names = list(space)
        grid = itertools.product(*(space[n]["values"] for n in names))
        return [dict(zip(names, values)) for values in itertools.islice(grid, max_total)]
    rng = random.Random(seed)
    return [{name: sample(param, rng) for name, param in space.items()} for _ in range(max_total)]


def sample(param: dict, rng: random.Random):
    """One value of a parameter, drawn as Azure ML defines its distribution."""
    kind = word(param)
    if kind == "choice":
        return rng.choice(list(param["values"]))
    if kind == "randint":
        return rng.randrange(int(param["upper"]))
    if kind in ("uniform", "loguniform", "quniform", "qloguniform"):
        value = rng.uniform(param["min_value"], param["max_value"])
    else:  # normal, lognormal, qnormal, qlognormal
        value = rng.gauss(param["mu"], param["sigma"])
    if "log" in kind:
        value = math.exp(value)
    if kind.startswith("q"):
        value = round(value / param["q"]) * param["q"]
    return value


# --- early termination ---------------------------------------------------------------------------
def better(a: float, b: float, goal: str) -> bool:
    return a > b if goal == "maximize" else a < b


def best_of(values, goal: str):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return max(values) if goal == "maximize" else min(values)


def to_stop(policy: dict | None, goal: str, series: dict, running: set, evaluated: dict) -> list[str]:
    """The running trials ``policy`` stops now. ``series``: trial -> its metric values in the order logged
    (every trial, ended ones too); ``evaluated``: trial -> how many values it had at its last evaluation
    (updated here), so that a trial is judged once per ``evaluation_interval`` reports, after
    ``delay_evaluation`` reports."""
    kind = word(policy)
    if kind not in ("bandit", "median_stopping", "truncation_selection"):
        return []
    interval = max(int(policy.get("evaluation_interval") or 1), 1)
    delay = int(policy.get("delay_evaluation") or 0)
    stop = []
    for trial in sorted(running):
        count = len(series.get(trial, ()))
        due = count >= max(delay, 1) and count - evaluated.get(trial, 0) >= interval
        if not due:
            continue
        evaluated[trial] = count
        if _stops(kind, policy, goal, trial, count, series):
            stop.append(trial)
    return stop


def _stops(kind: str, policy: dict, goal: str, trial: str, count: int, series: dict) -> bool:
    """Whether ``trial`` is stopped at its ``count``-th report, compared with the others at the same report."""
    peers = {name: values[:count] for name, values in series.items() if len(values) >= count}
    mine = series[trial][count - 1]
    if kind == "bandit":
        best = best_of((values[-1] for values in peers.values()), goal)
        factor, amount = policy.get("slack_factor"), policy.get("slack_amount")
        if factor is not None:
            limit = best / (1 + factor) if goal == "maximize" else best * (1 + factor)
        else:
            limit = best - (amount or 0) if goal == "maximize" else best + (amount or 0)
        return better(limit, mine, goal)
    if kind == "median_stopping":
        others = [statistics.fmean(values) for name, values in peers.items() if name != trial]
        return bool(others) and better(statistics.median(others), best_of(series[trial][:count], goal), goal)
    ranked = sorted(peers, key=lambda name: peers[name][-1], reverse=goal == "maximize")
    cut = len(ranked) * int(policy.get("truncation_percentage") or 0) // 100
    return len(ranked) > 1 and trial in ranked[len(ranked) - cut:]
