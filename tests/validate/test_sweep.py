"""Sweep jobs (type: sweep): the schema and the trial's rules, against azure-ai-ml's own load_job verdict."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import pytest
import yaml

from amldist.validate import validate_data, validate_file

CORPUS = Path(__file__).parents[1] / "fixtures" / "real_specs"
REAL = sorted(p for p in CORPUS.rglob("*.yml") if "sweepJob.schema" in p.read_text() or "type: sweep\n" in
              p.read_text() and "jobs:" not in p.read_text())
SAMPLE = Path(__file__).parents[2] / "samples" / "sweep" / "job.yml"

BASE = {"type": "sweep", "trial": {"command": "python t.py --lr ${{search_space.lr}} --n ${{inputs.n}}",
                                   "environment": "azureml:AzureML-sklearn-1.5@latest"},
        "inputs": {"n": 3}, "compute": "azureml:cpu", "sampling_algorithm": "random",
        "search_space": {"lr": {"type": "uniform", "min_value": 0.01, "max_value": 0.1}},
        "objective": {"goal": "maximize", "primary_metric": "acc"}, "limits": {"max_total_trials": 4}}


def changed(path: str, value):
    data = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last)
    else:
        node[last] = value
    return data


def azure_accepts(data: dict, tmp_path) -> bool:
    from azure.ai.ml import load_job
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object

    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)
    path = tmp_path / "sweep.yml"
    path.write_text(yaml.safe_dump(data))
    try:
        to_rest_job_object(load_job(path))  # a SweepJob has no _validate: its body is built
    except Exception:  # noqa: BLE001 - any refusal of azure-ai-ml's is its verdict
        return False
    return True


def codes(data: dict, severity="error") -> set:
    return {d.code for d in validate_data(data, "sweep.yml") if d.severity == severity}


def test_the_real_sweep_jobs_and_the_sample_validate_cleanly():
    assert len(REAL) >= 3
    for path in [*REAL, SAMPLE]:
        found = [d for d in validate_file(path) if d.severity == "error"]
        assert found == [], (path, found)


AGREED = [  # (change, amldist's error codes): azure-ai-ml refuses each too, or accepts when None
    (("trial.distribution", {"type": "pytorch", "process_count_per_instance": 2}), None),
    (("early_termination", {"type": "bandit", "slack_factor": 0.2, "evaluation_interval": 1}), None),
    (("sampling_algorithm", {"type": "random", "seed": 3, "rule": "sobol"}), None),
    (("search_space.lr", {"type": "qlognormal", "mu": 1, "sigma": 2, "q": 1}), None),
    (("limits.max_concurrent_trials", 2), None),
    (("limits.trial_timeout", 60), None),
    (("objective", None), {"missing-key"}),
    (("trial", None), {"missing-key"}),
    (("limits", None), {"missing-key"}),
    (("trial.environment", None), {"missing-key"}),
    (("trial.command", None), {"missing-key"}),
    (("objective.goal", "best"), {"invalid-value"}),
    (("sampling_algorithm", "sobol"), {"invalid-value"}),
    (("search_space.lr", {"type": "beta", "a": 1}), {"invalid-value"}),
    (("search_space.lr", {"type": "uniform", "min_value": 0.1}), {"missing-key"}),
    (("early_termination", {"type": "never"}), {"invalid-value"}),
    (("trial.distribution", {"type": "tensorflow", "process_count_per_instance": 2}), {"unknown-key"}),
    (("trial.unknown", 1), {"unknown-key"}),
]


@pytest.mark.parametrize("change, expected", AGREED, ids=[c[0][0] + "=" + str(c[0][1]) for c in AGREED])
def test_verdicts_agree_with_azure_ai_ml(change, expected, tmp_path):
    data = changed(*change)
    ours = codes(data)
    assert azure_accepts(data, tmp_path) is (expected is None)
    assert (ours == set()) is (expected is None), ours
    if expected:
        assert ours & expected, ours


def test_stricter_than_azure_ai_ml_where_the_service_refuses(tmp_path):
    """azure-ai-ml loads these; Azure ML's service refuses them (grid needs choice, bayesian takes no policy,
    counts are at least 1, the REST SweepJob requires samplingAlgorithm), so amldist says so before anything is
    sent."""
    cases = {
        "grid-needs-choice": changed("sampling_algorithm", "grid"),
        "bayesian-early-termination": changed("early_termination", {"type": "median_stopping"}) | {
            "sampling_algorithm": "bayesian"},
        "empty-range": changed("search_space.lr", {"type": "uniform", "min_value": 1, "max_value": 0.5}),
        "out-of-range": changed("limits.max_total_trials", 0),
        "missing-key": changed("sampling_algorithm", None),
    }
    for code, data in cases.items():
        assert azure_accepts(data, tmp_path), code
        assert code in codes(data), (code, codes(data))


def test_the_trial_gets_a_command_jobs_rules():
    assert "undeclared-search-space" in codes(changed("trial.command", "python t.py --lr ${{search_space.lx}}"))
    assert "undeclared-input" in codes(changed("trial.command", "python t.py ${{search_space.lr}} ${{inputs.m}}"))
    unused = changed("search_space.bs", {"type": "choice", "values": [1, 2]})
    assert "unused-search-space" in codes(unused, "warning")
    sized = changed("trial.resources", {"instance_type": "Standard_NC6s_v3", "instance_count": 1}) | {
        "trial": BASE["trial"] | {"distribution": {"type": "pytorch", "process_count_per_instance": 4},
                                  "resources": {"instance_type": "Standard_NC6s_v3"}}}
    assert "too-many-processes" in codes(sized)  # one V100 on NC6s_v3, 4 processes asked
    assert "invalid-environment" in codes(changed("trial.environment", "my-env:1"))
