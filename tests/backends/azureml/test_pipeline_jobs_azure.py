"""An Azure ML pipeline under ``amldist job``: its steps (child jobs) in show, ``--step`` for logs and download,
through the real MLClient and the recording transport (fake_logs.py)."""

from __future__ import annotations

import json
import os

import pytest

import amldist.backends.azureml.backend as azureml
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_azure import FakeCredential
from tests.backends.azureml.fake_logs import FakeLogsAzure
from tests.backends.azureml.test_diagnose_azure import WS, command_job


@pytest.fixture
def azure(fake_azure, monkeypatch, clean_env):
    import azure.storage.blob._shared.base_client as blob_base

    fake = FakeLogsAzure()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=FakeCredential(), client_kwargs={"transport": fake}))
    fake.jobs["p1"] = {"properties": {"jobType": "Pipeline", "status": "Failed", "jobs": {}, "properties": {},
                                      "outputs": {}, "inputs": {}, "settings": {}}}
    ok, bad = command_job(2, "Standard_NC24rs_v3", status="Completed"), command_job(2, "Standard_NC24rs_v3")
    ok["parent"], bad["parent"] = "p1", "p1"
    ok["properties"]["displayName"], bad["properties"]["displayName"] = "prep", "train"
    fake.jobs["p1-prep"], fake.jobs["p1-train"] = ok, bad
    fake.add_logs("p1-train", {"user_logs/std_log_process_00.txt": "train rank 0\n"})
    yield fake
    assert fake.unexpected == [], [r.url for r in fake.unexpected]


def test_show_gives_a_pipeline_its_steps(cli, azure):
    code, out, err = cli("job", "show", "p1", *WS, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["kind"], data["status"]) == ("pipeline", "Failed")
    assert sorted((s["name"], s["status"], s["job"]) for s in data["steps"]) == [
        ("prep", "Completed", "p1-prep"), ("train", "Failed", "p1-train")]
    code, out, err = cli("job", "show", "p1", *WS)
    assert "step train: Failed (job p1-train)" in out


def test_step_picks_a_child_job_and_an_unknown_step_is_one_line(cli, azure, tmp_path):
    code, out, err = cli("job", "download", "p1", "--step", "train", "-o", str(tmp_path / "dl"), *WS)
    assert code == 0, err
    found = [os.path.join(d, f) for d, _, files in os.walk(tmp_path / "dl") for f in files]
    assert any(open(p).read() == "train rank 0\n" for p in found), found
    code, out, err = cli("job", "logs", "p1", "--step", "nope", *WS)
    assert code == 2 and err.count("\n") == 2 and "has no step 'nope'" in err and "prep" in err
