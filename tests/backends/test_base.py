"""The backend contract: typed options from CLI arguments, plans that describe and serialise themselves,
frozen records, and the exit code a record gives ``amldist submit``."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from amldist.backends import BACKENDS, get_backend, register
from amldist.backends.base import Backend, JobRecord, exit_code_of
from amldist.backends.local.backend import LocalOptions
from amldist.submit.prepare import prepare

JOB = """\
command: python -c "print(1)"
environment: azureml:x@latest
environment_variables: {API_TOKEN: s3cret-value}
distribution: {type: pytorch, process_count_per_instance: 2}
"""
PIPELINE = """\
type: pipeline
name: two
jobs:
  a: {command: echo a, environment: "azureml:x@latest"}
  b: {command: echo b, environment: "azureml:x@latest"}
"""


def test_options_come_from_cli_arguments_and_keywords():
    args = SimpleNamespace(name="n1", stream=True, run_root=None, python="/py", unrelated=1)
    options = LocalOptions.from_args(args, max_parallel=3)
    assert (options.name, options.stream, options.python, options.max_parallel) == ("n1", True, "/py", 3)
    assert options.run_root == ".amldist/runs"  # None on the command line: the default
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.name = "other"
    with pytest.raises(TypeError, match="no option"):
        LocalOptions.from_args(None, workspace="ws")


@pytest.mark.parametrize("text, kind", [(JOB, "job"), (PIPELINE, "pipeline")])
def test_a_local_plan_describes_itself_and_serialises_masked(tmp_path, text, kind):
    (tmp_path / "spec.yml").write_text(text)
    backend = get_backend("local", run_root=str(tmp_path / "runs"))
    plan = backend.plan(prepare(str(tmp_path / "spec.yml")), backend.options(run_root=str(tmp_path / "runs")))
    assert plan.kind == kind and plan.backend == "local"
    data = json.loads(json.dumps(plan.to_json()))
    assert data["kind"] == kind
    assert "s3cret-value" not in json.dumps(data) + plan.describe()
    assert not (tmp_path / "runs").exists()  # planning wrote nothing


def test_records_are_frozen_and_give_the_submit_exit_code():
    record = JobRecord(name="j", backend="local", status="Completed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = "Failed"
    codes = [exit_code_of(dataclasses.replace(record, status=s, stopped_by=by)) for s, by in (
        ("Completed", None), ("Running", None), ("Failed", None), ("Canceled", "SIGINT"),
        ("Canceled", "amldist job cancel"))]
    assert codes == [0, 0, 1, 130, 143]
    assert record.to_json()["ranks"] == [] and "steps" not in record.to_json()


def test_the_registry_takes_a_new_backend(monkeypatch):
    class Dummy(Backend):
        name = "dummy"

        def __init__(self, **settings):
            self.settings = settings

        plan = run = list = show = logs = cancel = download = lambda self, *a, **k: None

    monkeypatch.setitem(BACKENDS, "dummy", ("", ""))
    monkeypatch.setattr("importlib.import_module", lambda name: SimpleNamespace(Dummy=Dummy))
    register("dummy", "tests.anywhere", "Dummy")
    made = get_backend("dummy", where="x")
    assert isinstance(made, Dummy) and made.settings == {"where": "x"} and not made.has("job")
