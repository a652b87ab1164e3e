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
from amldist.errors import UserError
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


class Dummy(Backend):
    """A backend for the registry's tests: every verb a no-op."""

    name = "dummy"

    def __init__(self, **settings):
        self.settings = settings

    plan_job = run_job = list = show = logs = cancel = download = lambda self, *a, **k: None


NOT_A_BACKEND = object()


def test_the_registry_takes_a_new_backend(monkeypatch):
    monkeypatch.setitem(BACKENDS, "dummy", "")
    register("dummy", "tests.backends.test_base:Dummy")
    made = get_backend("dummy", where="x")
    assert isinstance(made, Dummy) and made.settings == {"where": "x"} and not made.has("job")


@pytest.mark.parametrize("target, says", [
    ("tests.backends.no_such_module:Dummy", "cannot be loaded: ModuleNotFoundError"),
    ("tests.backends.test_base:NOT_A_BACKEND", "is not a subclass of amldist.backends.base.Backend"),
    ("tests.backends.test_base:Missing", "cannot be loaded: AttributeError"),
])
def test_a_broken_registration_is_one_user_error_naming_it(monkeypatch, target, says):
    monkeypatch.setitem(BACKENDS, "broken", target)
    with pytest.raises(UserError) as caught:
        get_backend("broken")
    assert caught.value.exit_code == 2 and says in caught.value.message and "'broken'" in caught.value.message
    assert "\n" not in caught.value.message
    with pytest.raises(UserError, match="no backend named 'nope'"):
        get_backend("nope")


def test_the_contract_dispatches_jobs_and_pipelines(tmp_path):
    (tmp_path / "job.yml").write_text(JOB)
    (tmp_path / "pipe.yml").write_text(PIPELINE)
    made = []

    class Recording(Dummy):
        def plan_job(self, prepared, options):
            made.append(("job", type(prepared).__name__))

    backend = Recording()
    backend.plan(prepare(str(tmp_path / "job.yml")), backend.options())
    with pytest.raises(UserError, match="the dummy backend runs single jobs, not pipelines"):
        backend.plan(prepare(str(tmp_path / "pipe.yml")), backend.options())
    assert made == [("job", "Prepared")]
