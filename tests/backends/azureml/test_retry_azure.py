"""``amldist submit JOB --retry N`` on Azure ML, through the real MLClient up to the HTTP boundary
(tests/backends/azureml/fake_retry.py): the attempts, the checkpoint output they share, the diagnosis that decides,
and Ctrl-C. Polling is instant (``poll_seconds=0``): nothing sleeps."""

from __future__ import annotations

import io
import json

import pytest

import amldist.backends.azureml.backend as azureml
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_azure import FakeCredential
from tests.backends.azureml.fake_retry import PREEMPTED, USER_FAILED, FakeRetryAzure

WS = ["-w", "ws", "-g", "rg", "--subscription", "00000000-0000-0000-0000-000000000000"]
JOB = """\
type: command
code: src
command: python train.py --epochs 3
environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
compute: azureml:spot-cluster
distribution:
  type: pytorch
  process_count_per_instance: 2
resources:
  instance_count: 2
outputs:
  model:
    type: uri_folder
"""
SHARED = "azureml://datastores/workspaceblobstore/paths/amldist/checkpoints/{}/"
RAISED = ("2024-05-02 10:00:05,200 INFO train: epoch 0 step 20 loss 2.12\nTraceback (most recent call last):\n"
          '  File "/mnt/azureml/cr/j/abc/exe/wd/train.py", line 33, in main\n    batch = next(loader)\n'
          "KeyError: 'label'\n")
PEER_LOST = ("2024-05-02 10:00:05,100 INFO train: epoch 0 step 20 loss 2.12\n[rank0]: RuntimeError: [../third_party/"
             "gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.5]:29500\n")


@pytest.fixture
def azure(fake_azure, monkeypatch, clean_env):
    import azure.storage.blob._shared.base_client as blob_base

    fake = FakeRetryAzure()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=FakeCredential(), client_kwargs={"transport": fake}, poll_seconds=0))
    (clean_env / "src").mkdir()
    (clean_env / "src" / "train.py").write_text("print('training')\n")
    (clean_env / "job.yml").write_text(JOB)
    yield fake
    assert fake.unexpected == [], [r.url for r in fake.unexpected]


def put_bodies(fake) -> dict:
    return {put.path.rsplit("/", 1)[1]: put.json()["properties"] for put in fake.job_puts()}


def azure_ai_mls_own(name: str, first: str, attempt: int) -> dict:
    """What azure-ai-ml itself builds for the attempt, from a YAML written by hand: its load_job, its REST object."""
    from azure.ai.ml import load_job
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object

    from amldist.azure_sdk.entities import _to_json

    text = (JOB.replace("python train.py", "export AMLDIST_CHECKPOINT_DIR=${{outputs.amldist_checkpoints}}; "
                                           "python train.py")
            + f"  amldist_checkpoints:\n    type: uri_folder\n    mode: rw_mount\n    path: {SHARED.format(first)}\n"
            + f"name: {name}\nproperties:\n  amldist.attempt_of: {first}\n  amldist.attempt: '{attempt}'\n")
    return _to_json(to_rest_job_object(load_job(io.StringIO(text))))["properties"]


def test_a_preempted_attempt_is_resubmitted_with_the_same_checkpoint_output(cli, azure):
    azure.script("j1", ("Running", "Failed"), error=("UserError", PREEMPTED),
                 logs={"user_logs/std_log_process_00.txt": PEER_LOST, "user_logs/std_log_process_01.txt": "step 20\n"})
    azure.script("j1-attempt2", ("Running", "Completed"))
    code, out, err = cli("submit", "job.yml", *WS, "--name", "j1", "--retry", "1", "--format", "json")
    assert code == 0, err
    final = json.loads(out)  # the last attempt's
    assert (final["name"], final["status"], final["attempt"]) == ("j1-attempt2", "Completed", {"number": 2, "of": "j1"})
    bodies = put_bodies(azure)
    assert list(bodies) == ["j1", "j1-attempt2"]
    for name, attempt in (("j1", 1), ("j1-attempt2", 2)):
        sent, own = bodies[name], azure_ai_mls_own(name, "j1", attempt)
        for key in ("outputs", "command", "properties", "environmentVariables", "distribution"):
            assert sent.get(key) == own.get(key), (name, key)
    assert bodies["j1-attempt2"]["outputs"]["amldist_checkpoints"] == {
        "jobOutputType": "uri_folder", "mode": "ReadWriteMount", "uri": SHARED.format("j1")}
    assert bodies["j1-attempt2"]["properties"] == {"amldist.attempt_of": "j1", "amldist.attempt": "2"}
    assert "attempt 1 (j1) failed: preempted: the service: UserError: AzureMLCompute job failed. PreemptionError" \
        in err
    assert "retrying: the failure was diagnosed as preempted (preemption)" in err
    assert "job j1-attempt2: Completed" in err

    for shown in ("j1-attempt2", "j1"):  # any attempt lists them all
        code, out, err = cli("job", "show", shown, *WS)
        assert code == 0, err
        attempts = out.split("attempts:\n", 1)[1].splitlines()
        assert attempts[0].startswith("  1. j1: Failed: preempted: the service: UserError: AzureMLCompute job failed")
        assert attempts[1] == "  2. j1-attempt2: Completed"
    listed = azure.find("GET", r"/jobs$")
    assert listed and all(r.query.get("properties") == "amldist.attempt_of=j1" for r in listed)  # one filtered ask

    code, out, err = cli("job", "diagnose", "j1", *WS)  # the platform's word, not rank 0's lost peer
    assert code == 0, err
    assert "cause: preempted: the service: UserError: AzureMLCompute job failed. PreemptionError" in out
    assert "first failure: rank" not in out


def test_a_python_exception_is_not_retried_and_says_why_in_one_line(cli, azure):
    azure.script("j2", ("Running", "Failed"), error=("UserError", USER_FAILED),
                 logs={"user_logs/std_log_process_00.txt": "step 20\n", "user_logs/std_log_process_01.txt": RAISED})
    code, out, err = cli("submit", "job.yml", *WS, "--name", "j2", "--retry", "3", "--retry-on", "preemption,other")
    assert code == 1
    assert list(put_bodies(azure)) == ["j2"]
    (why,) = [line for line in err.splitlines() if line.startswith("not retried")]
    assert why == ("not retried: the failure was diagnosed as python-exception (user), a failure of the training "
                   "code; a retry would fail again")
    assert "attempt 1 (j2) failed: rank 1: python-exception: KeyError: 'label'" in err


def test_ctrl_c_while_an_attempt_runs_cancels_it_and_ends_the_retries(cli, azure):
    azure.script("j3", ("Running",))
    azure.interrupt = ("j3", 3)  # the third poll: the job has been Running for a while
    code, out, err = cli("submit", "job.yml", *WS, "--name", "j3", "--retry", "2", "--format", "json")
    assert code == 130, err
    assert azure.canceled == ["j3"] and list(put_bodies(azure)) == ["j3"]
    assert "interrupted: cancelling job j3; no further attempt is made" in err
    result = json.loads(out)
    assert (result["status"], result["stopped_by"], result["exit_code"]) == ("Canceled", "SIGINT", 130)


def test_what_azure_ml_does_not_retry_is_one_line_before_anything_is_sent(cli, azure, clean_env):
    (clean_env / "pipe.yml").write_text("type: pipeline\njobs:\n  a:\n    type: command\n    command: echo hi\n"
                                        "    environment: azureml:env:1\n    compute: azureml:c\n")
    code, out, err = cli("submit", "pipe.yml", *WS, "--retry", "1")
    assert code == 2 and "--retry resubmits a command job on Azure ML, and this is a pipeline" in err
    (clean_env / "own.yml").write_text(JOB + "  amldist_checkpoints:\n    type: uri_folder\n")
    code, out, err = cli("submit", "own.yml", *WS, "--retry", "1")
    assert code == 2 and "outputs.amldist_checkpoints is the output --retry adds" in err
    assert put_bodies(azure) == {}


def test_the_jobs_own_checkpoint_variable_wins_and_no_retry_adds_nothing(cli, azure, clean_env):
    (clean_env / "env.yml").write_text(JOB + "environment_variables:\n  AMLDIST_CHECKPOINT_DIR: /mnt/mine\n")
    azure.script("j4", ("Completed",))
    code, out, err = cli("submit", "env.yml", *WS, "--name", "j4", "--retry", "1")
    assert code == 0, err
    sent = put_bodies(azure)["j4"]
    assert sent["command"] == "python train.py --epochs 3" and "amldist_checkpoints" in sent["outputs"]
    azure.script("j5", ("Completed",))
    code, out, err = cli("submit", "job.yml", *WS, "--name", "j5")
    assert code == 0, err
    plain = put_bodies(azure)["j5"]
    assert "amldist_checkpoints" not in plain["outputs"]
    assert not any(key.startswith("amldist.") for key in plain.get("properties") or {})
    assert azure.gets("j5") == 0  # without --retry, submit returns once the job is sent


def test_a_dry_run_with_retry_shows_the_first_attempts_checkpoint_output(cli, azure):
    code, out, err = cli("submit", "job.yml", *WS, "--name", "d1", "--retry", "1", "--dry-run")
    assert code == 0, err
    body = json.loads(out)["request"]["body"]["properties"]
    assert body["outputs"]["amldist_checkpoints"]["uri"] == SHARED.format("d1")
    assert body["command"].startswith("export AMLDIST_CHECKPOINT_DIR=${{outputs.amldist_checkpoints}}; python ")
    assert azure.job_puts() == []


def test_the_drill_is_refused_for_azure_ml_also_from_python(azure):
    from amldist.backends.submit import submit
    from amldist.errors import UserError

    with pytest.raises(UserError, match="--inject rehearses a failure on processes amldist starts"):
        submit("job.yml", backend="azureml", inject=("kill:rank=0,after=1",), workspace="ws", resource_group="rg",
               subscription="00000000-0000-0000-0000-000000000000")
    assert azure.job_puts() == []


def test_with_stream_a_failed_attempt_is_weighed_by_the_loop_not_raised(cli, azure):
    azure.script("s1", ("Running", "Failed"), error=("UserError", PREEMPTED),
                 logs={"user_logs/std_log_process_00.txt": "step 20\n"})
    azure.script("s1-attempt2", ("Running", "Completed"))
    code, out, err = cli("submit", "job.yml", *WS, "--name", "s1", "--retry", "1", "--stream")
    assert code == 0, err
    assert list(put_bodies(azure)) == ["s1", "s1-attempt2"]
    assert "retrying: the failure was diagnosed as preempted (preemption)" in err


def test_the_watch_rides_out_polls_that_cannot_reach_azure(cli, azure, monkeypatch):
    from amldist.backends.azureml import retries

    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=FakeCredential(), client_kwargs={"transport": azure, "retry_total": 0}, poll_seconds=0))
    azure.script("n1", ("Running", "Running", "Running", "Completed"))
    azure.unreachable["n1"] = (2, 3)  # two polls in a row find no network, then it is back
    code, out, err = cli("submit", "job.yml", *WS, "--name", "n1", "--retry", "1")
    assert code == 0, err
    assert "job n1: Completed" in err and azure.gets("n1") >= 6
    monkeypatch.setattr(retries, "UNREACHABLE_POLLS", 3)
    azure.script("n2", ("Running",))
    azure.unreachable["n2"] = (2, 3, 4)
    code, out, err = cli("submit", "job.yml", *WS, "--name", "n2", "--retry", "1")
    assert code == 1 and "Azure could not be reached for 3 polls in a row while watching job n2; it runs on" in err
    assert list(put_bodies(azure)) == ["n1", "n2"] and azure.canceled == []


def test_ctrl_c_as_the_attempt_fails_by_itself_still_ends_the_retries(cli, azure):
    azure.script("j6", ("Running", "Failed"), error=("UserError", PREEMPTED))
    azure.interrupt = ("j6", 2)  # Ctrl-C on the second poll; the cancel's own look then finds the job Failed
    code, out, err = cli("submit", "job.yml", *WS, "--name", "j6", "--retry", "2")
    assert code == 130 and "interrupted" in err
    assert list(put_bodies(azure)) == ["j6"] and azure.canceled == []  # nothing to cancel, nothing resubmitted
