"""The local sweep's pure parts: a trial as a command job, the metric read from an MLflow file store, the table."""

from __future__ import annotations

import os

import pytest

from amldist.backends.local.sweep_run import read_metric, table
from amldist.errors import UserError
from amldist.model import SweepJob
from amldist.submit.sweep import trial_job

SWEEP = {"type": "sweep", "trial": {"command": "python t.py --lr ${{search_space.lr}} --n ${{ inputs.n }} "
                                               "--b ${{search_space.b}}",
                                    "environment": "azureml:e@latest", "code": "src",
                                    "distribution": {"type": "pytorch", "process_count_per_instance": 2}},
         "inputs": {"n": 3}, "resources": {"instance_count": 2}, "limits": {"max_total_trials": 2, "trial_timeout": 9},
         "outputs": {"model": {"type": "uri_folder"}}, "experiment_name": "e"}


def test_a_trial_is_the_command_job_with_its_values_as_inputs():
    job = trial_job(SweepJob.from_dict(SWEEP), {"lr": 0.5, "b": "x y"}, name="trial_3", file="s.yml")
    assert job.kind == "command_job" and job.name == "trial_3"
    assert job.command == "python t.py --lr ${{inputs.lr}} --n ${{ inputs.n }} --b ${{inputs.b}}"
    assert job.inputs == {"n": 3, "lr": 0.5, "b": "x y"}
    assert job.distribution.process_count_per_instance == 2 and job.resources.instance_count == 2  # the sweep's
    assert job.limits.timeout == 9 and job.outputs == SWEEP["outputs"] and job.experiment_name == "e"
    assert SWEEP["trial"]["command"].count("search_space") == 2  # the sweep itself is left as it was


def test_a_search_space_name_that_is_an_input_too_is_refused():
    with pytest.raises(UserError, match="search_space.n and inputs.n share a name"):
        trial_job(SweepJob.from_dict(SWEEP), {"n": 1}, name="trial_0", file="s.yml")


def write_metric(run_dir, experiment, run, name, lines):
    folder = run_dir / "mlruns" / experiment / run / "metrics"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(f"{line}\n" for line in lines))
    return folder / name


def test_the_metric_is_read_in_the_order_logged_over_every_run_of_the_store(tmp_path):
    write_metric(tmp_path, "0", "a", "loss", ["1000 0.9 0", "3000 0.5 2", "3500 0.4 2"])
    write_metric(tmp_path, "0", "b", "loss", ["2000 0.7 1", "garbage", "4000 0.3"])  # a rank's run; a torn line
    write_metric(tmp_path, "0", "a", "acc", ["1000 42 0"])
    assert read_metric(str(tmp_path), "loss") == [0.9, 0.3, 0.7, 0.5, 0.4]  # by step, then time; no step: 0
    assert read_metric(str(tmp_path), "missing") == [] and read_metric(str(tmp_path / "none"), "loss") == []


def test_a_link_in_the_store_is_not_followed(tmp_path):
    secret = tmp_path / "elsewhere"
    secret.write_text("1 123 0\n")
    folder = write_metric(tmp_path, "0", "a", "loss", ["1 1 0"]).parent
    os.symlink(secret, folder / "acc")
    assert read_metric(str(tmp_path), "acc") == []
    assert read_metric(str(tmp_path), "../../../../elsewhere") == []


def test_the_table_marks_the_best_trial():
    data = {"sweep": {"primary_metric": "loss", "best": "trial_1", "trials": [
        {"name": "trial_0", "parameters": {"lr": 0.123456789, "bs": 32}, "metric": 0.5, "status": "Completed"},
        {"name": "trial_1", "parameters": {"lr": 0.2, "bs": 64}, "metric": 0.25, "status": "Completed"},
        {"name": "trial_2", "parameters": {"lr": 0.3, "bs": 64}, "metric": None, "status": "Canceled"}]}}
    lines = table(data).splitlines()
    assert lines[0].split() == ["trial", "parameters", "loss", "status"]
    assert lines[1].split() == ["trial_0", "lr=0.123457,", "bs=32", "0.5", "Completed"]
    assert lines[2].split() == ["*", "trial_1", "lr=0.2,", "bs=64", "0.25", "Completed"]
    assert lines[3].split() == ["trial_2", "lr=0.3,", "bs=64", "-", "Canceled"]
