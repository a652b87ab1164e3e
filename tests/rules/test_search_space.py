"""The search space rule (amldist.rules.search_space): sampling as Azure ML defines it, and the policies."""

from __future__ import annotations

import math
import random

import pytest

from amldist.rules import search_space as ss


def test_grid_is_the_product_of_the_choice_values_in_order_capped_by_max_total_trials():
    space = {"lr": {"type": "choice", "values": [0.1, 0.01]}, "bs": {"type": "Choice", "values": [16, 32, 64]}}
    assert ss.trials(space, "grid", 100) == [{"lr": a, "bs": b} for a in (0.1, 0.01) for b in (16, 32, 64)]
    assert ss.trials(space, {"type": "grid"}, 4) == [{"lr": 0.1, "bs": 16}, {"lr": 0.1, "bs": 32},
                                                     {"lr": 0.1, "bs": 64}, {"lr": 0.01, "bs": 16}]


def test_random_sampling_is_seeded_and_each_distribution_stays_in_its_support():
    space = {"u": {"type": "uniform", "min_value": 2, "max_value": 3},
             "lu": {"type": "loguniform", "min_value": -3, "max_value": -1},
             "qu": {"type": "quniform", "min_value": 0, "max_value": 10, "q": 2},
             "r": {"type": "randint", "upper": 5},
             "c": {"type": "choice", "values": ["a", "b"]},
             "n": {"type": "normal", "mu": 10, "sigma": 0.001},
             "ln": {"type": "lognormal", "mu": 0, "sigma": 0.001},
             "qn": {"type": "qnormal", "mu": 7, "sigma": 0.001, "q": 5}}
    first = ss.trials(space, "random", 50, seed=3)
    assert first == ss.trials(space, "random", 50, seed=3)  # the seed gives the same trials again
    assert first != ss.trials(space, "random", 50, seed=4)
    for t in first:
        assert 2 <= t["u"] <= 3 and math.exp(-3) <= t["lu"] <= math.exp(-1)
        assert t["qu"] % 2 == 0 and 0 <= t["qu"] <= 10 and t["r"] in range(5) and t["c"] in ("a", "b")
        assert t["n"] == pytest.approx(10, abs=0.01) and t["ln"] == pytest.approx(1, abs=0.01) and t["qn"] == 5
    assert {t["r"] for t in first} == set(range(5)) and {t["c"] for t in first} == {"a", "b"}


def test_bayesian_and_nested_choices_are_refused_with_what_to_use_instead():
    with pytest.raises(ss.SweepRefused) as refused:
        ss.trials({"x": {"type": "choice", "values": [1]}}, "Bayesian", 2)
    assert "bayesian" in str(refused.value) and "random" in refused.value.hint
    with pytest.raises(ss.SweepRefused, match="nested search spaces"):
        ss.trials({"m": {"type": "choice", "values": [{"a": 1}]}}, "random", 1)


def test_references_are_the_search_space_placeholders_once_each():
    command = "python t.py --a ${{search_space.a}} --b ${{ search_space.b }} --a2 ${{search_space.a}} ${{inputs.c}}"
    assert ss.references(command) == ["a", "b"]


def test_static_findings_name_what_the_service_refuses():
    data = {"sampling_algorithm": "grid", "search_space": {
        "x": {"type": "uniform", "min_value": 1, "max_value": 1}, "y": {"type": "normal", "mu": 0, "sigma": 0},
        "z": {"type": "choice", "values": [1]}}}
    assert {(f.path, f.code) for f in ss.static_findings(data)} == {
        (("search_space", "x", "max_value"), "empty-range"), (("search_space", "x", "type"), "grid-needs-choice"),
        (("search_space", "y", "sigma"), "not-positive"), (("search_space", "y", "type"), "grid-needs-choice")}
    bayes = {"sampling_algorithm": {"type": "bayesian"}, "early_termination": {"type": "bandit"},
             "search_space": {"r": {"type": "randint", "upper": 3}, "u": {"type": "uniform", "min_value": 0,
                                                                         "max_value": 1}}}
    assert {f.code for f in ss.static_findings(bayes)} == {"bayesian-distribution", "bayesian-early-termination"}
    assert ss.static_findings({"sampling_algorithm": "random", "search_space": data["search_space"] | {
        "x": {"type": "uniform", "min_value": 0, "max_value": 1}, "y": {"type": "normal", "mu": 0, "sigma": 1}}}) == []


def test_bandit_stops_a_trial_outside_the_slack_of_the_best_at_the_same_report():
    policy = {"type": "bandit", "slack_factor": 0.1, "evaluation_interval": 1, "delay_evaluation": 2}
    series = {"good": [1.0, 0.5], "bad": [1.0, 0.9]}
    evaluated: dict = {}
    assert ss.to_stop(policy, "minimize", {"good": [1.0], "bad": [1.0]}, {"good", "bad"}, evaluated) == []  # delay
    assert ss.to_stop(policy, "minimize", series, {"good", "bad"}, evaluated) == ["bad"]  # 0.9 > 0.5 * 1.1
    assert ss.to_stop(policy, "minimize", series, {"good", "bad"}, evaluated) == []  # once per interval
    by_amount = {"type": "bandit", "slack_amount": 0.5}
    assert ss.to_stop(by_amount, "maximize", {"a": [3.0], "b": [2.6], "c": [2.4]}, {"b", "c"}, {}) == ["c"]


def test_median_stopping_and_truncation_selection():
    series = {"a": [1.0, 1.0], "b": [2.0, 2.0], "c": [5.0, 6.0]}
    assert ss.to_stop({"type": "median_stopping"}, "minimize", series, {"c"}, {}) == ["c"]
    assert ss.to_stop({"type": "median_stopping"}, "minimize", series, {"a", "b"}, {}) == []
    policy = {"type": "truncation_selection", "truncation_percentage": 34}
    assert ss.to_stop(policy, "maximize", series, {"a", "b", "c"}, {}) == ["a"]  # the worst third, at maximize
    assert ss.to_stop(policy, "minimize", series, {"a", "b", "c"}, {}) == ["c"]
    assert ss.to_stop(None, "minimize", series, {"c"}, {}) == []


def test_sampling_matches_a_reference_draw():
    """The definitions written out independently: loguniform = exp(uniform), qlognormal rounds exp(gauss)."""
    rng = random.Random(11)
    expected_lu = math.exp(rng.uniform(-2, 0))
    expected_qln = round(math.exp(rng.gauss(1, 0.5)) / 0.5) * 0.5
    rng = random.Random(11)
    assert ss.sample({"type": "loguniform", "min_value": -2, "max_value": 0}, rng) == expected_lu
    assert ss.sample({"type": "qlognormal", "mu": 1, "sigma": 0.5, "q": 0.5}, rng) == expected_qln
