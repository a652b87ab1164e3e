"""``amldist job`` verbs against the fake workspace, through the real MLClient (recording transport)."""

from __future__ import annotations

import json

import pytest

import amldist.backends.azureml.backend as azureml
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_azure import FakeCredential
from tests.backends.azureml.fake_jobs import FakeJobsAzure

JOB = """\
type: command
code: src
command: python train.py
environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
compute: azureml:gpu-cluster
distribution:
  type: pytorch
  process_count_per_instance: 2
resources:
  instance_count: 2
outputs:
  model:
    type: uri_folder
    path: azureml://datastores/workspaceblobstore/paths/models/
"""
WS = ["-w", "ws", "-g", "rg", "--subscription", "00000000-0000-0000-0000-000000000000"]


@pytest.fixture
def azure(fake_azure, monkeypatch, clean_env):
    """The conftest's wiring, with the fake that also knows the job verbs' calls."""

    import azure.storage.blob._shared.base_client as blob_base

    fake = FakeJobsAzure()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=FakeCredential(), client_kwargs={"transport": fake}))
    (clean_env / "src").mkdir()
    (clean_env / "src" / "train.py").write_text("print('training')\n")
    (clean_env / "job.yml").write_text(JOB)
    yield fake
    assert fake.unexpected == [], [r.url for r in fake.unexpected]


def submit(cli, fake, name):
    code, out, err = cli("submit", "job.yml", *WS, "--name", name)
    assert code == 0, err
    return out


def test_show_gives_status_times_outputs_and_the_studio_url(cli, azure):
    submit(cli, azure, "j1")
    azure.set_status("j1", "Completed", start="2024-01-01T00:00:00Z", end="2024-01-01T00:01:30Z")
    code, out, err = cli("job", "show", "j1", *WS, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "Completed" and data["backend"] == "azureml"
    assert data["duration_seconds"] == 90.0
    assert data["outputs"]["model"]["path"] == "azureml://datastores/workspaceblobstore/paths/models/"
    assert data["studio_url"].startswith("https://ml.azure.com/runs/j1?wsid=")
    assert azure.find("GET", r"/jobs/j1$")
    code, out, _ = cli("job", "show", "-n", "j1", *WS)
    assert "status: Completed" in out and "duration: 90.0s" in out and "studio: https://ml.azure.com/runs/j1" in out


def test_list_returns_every_job(cli, azure):
    submit(cli, azure, "a1")
    submit(cli, azure, "a2")
    azure.set_status("a1", "Failed")
    code, out, err = cli("job", "list", *WS, "--format", "json")
    assert code == 0, err
    assert {(j["name"], j["status"]) for j in json.loads(out)} == {("a1", "Failed"), ("a2", "NotStarted")}
    assert azure.find("GET", r"/jobs$")
    code, out, _ = cli("job", "list", *WS)
    assert out.splitlines()[0].split() == ["name", "status", "display_name", "created"]


def test_cancel_posts_the_cancel_and_reports_canceled(cli, azure):
    submit(cli, azure, "c1")
    azure.set_status("c1", "Running")
    code, out, err = cli("job", "cancel", "c1", *WS)
    assert code == 0, err
    assert azure.canceled == ["c1"]
    assert out.strip() == "job c1: Canceled"
    code, out, err = cli("job", "cancel", "c1", *WS)  # already ended: nothing sent
    assert code == 0 and "already Canceled" in err and azure.canceled == ["c1"]


def test_logs_follow_the_run_history(cli, azure):
    submit(cli, azure, "l1")
    azure.run_statuses = ("Running", "Completed")
    azure.run_log = "rank 0: epoch 1 loss 0.5\n"
    code, out, err = cli("job", "logs", "l1", *WS)
    assert code == 0, err
    assert "epoch 1 loss 0.5" in out
    azure.run_statuses = ("Failed",)
    azure._polls.clear()
    code, out, err = cli("job", "logs", "l1", *WS)
    assert code == 1 and "job l1 failed" in err


def test_an_unknown_job_is_one_line_and_exit_2(cli, azure):
    code, out, err = cli("job", "show", "nope", *WS)
    assert code == 2
    assert err.splitlines()[0] == "error: no job named 'nope' in workspace ws"


def test_download_refuses_a_running_job(cli, azure):
    submit(cli, azure, "d1")
    azure.set_status("d1", "Running")
    code, out, err = cli("job", "download", "d1", *WS, "-o", "out")
    assert code == 1 and "Download is allowed only in states" in err
