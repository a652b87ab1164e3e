"""AzureMLBackend through the real MLClient, up to the HTTP boundary (tests/submit_azure/fake_azure.py)."""

from __future__ import annotations

import json
import os
import tempfile
import textwrap

import pytest

import amldist.backends.azureml.backend as azureml
from amldist.backends.base import exit_code_of
from amldist.submit.prepared import Prepared, SubmitOptions
import amldist.runtime

RUNTIME_DIR = os.path.dirname(os.path.abspath(amldist.runtime.__file__))
from amldist.errors import UserError
from amldist.model import load
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_azure import TENANT, FakeCredential

JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
type: command
code: src
command: python -m amldist.runtime -- python train.py --epochs ${{inputs.epochs}}
inputs:
  epochs: 3
environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
compute: azureml:gpu-cluster
distribution:
  type: pytorch
  process_count_per_instance: 4
resources:
  instance_count: 2
  instance_type: Standard_NC24rs_v3
  shm_size: 16g
environment_variables:
  NCCL_DEBUG: INFO
  HF_TOKEN: hf_realtokenvalue
limits:
  timeout: 3600
"""


def make_project(root, job_text=JOB):
    src = root / "src"
    (src / "lib").mkdir(parents=True)
    (src / "train.py").write_text("from amldist.runtime import init_distributed\ninit_distributed()\n")
    (src / "lib" / "data.py").write_text("ROWS = 10\n")
    (src / "weights.ckpt").write_bytes(b"\0" * 64)
    (src / ".amlignore").write_text("*.ckpt\n")
    (root / "job.yml").write_text(job_text)
    return Prepared(job=load(str(root / "job.yml")), source=str(root / "job.yml"), base_dir=str(root))


def snapshot_tree(folder) -> dict:
    out = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, folder)] = open(path, "rb").read()
    return out


WS = dict(workspace="ws", resource_group="rg", subscription="00000000-0000-0000-0000-000000000000")


def backend():
    return azureml.AzureMLBackend()  # the fake_azure fixture wires the credential and transport in


def submit(prepared, options) -> int:
    """What ``amldist submit`` does: plan, then run exactly that plan."""
    b = backend()
    return exit_code_of(b.run(b.plan(prepared, options)))


def dry_run(prepared, options) -> str:
    """What ``amldist submit --dry-run`` prints."""
    b = backend()
    return b.describe(b.plan(prepared, options))


def test_submit_sends_the_job_and_the_code_snapshot(fake_azure, tmp_path, capsys, monkeypatch):
    project = tmp_path / "project"
    prepared = make_project(project)
    user_files_before = snapshot_tree(project)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    code = submit(prepared, SubmitOptions(**WS))

    out, err = capsys.readouterr()
    assert code == 0
    (put,) = fake_azure.job_puts()
    name = put.path.rsplit("/", 1)[1]
    props = put.json()["properties"]
    assert props["jobType"] == "Command"
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 4}
    assert props["resources"]["instanceCount"] == 2
    assert props["resources"]["instanceType"] == "Standard_NC24rs_v3"
    assert props["resources"]["shmSize"] == "16g"
    assert props["command"] == "python -m amldist.runtime -- python train.py --epochs ${{inputs.epochs}}"
    assert props["inputs"]["epochs"]["value"] == "3"
    # The service gets the real values; only printing masks them.
    assert props["environmentVariables"] == {"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_realtokenvalue", **NC24RS_V3}
    assert props["limits"]["timeout"] == "PT1H"
    assert props["computeId"] == f"{fake_azure.ws_path}/computes/gpu-cluster"
    (code_key,) = fake_azure.codes
    assert props["codeId"] == f"{fake_azure.ws_path}/codes/{code_key[0]}/versions/{code_key[1]}"
    # The code was uploaded and registered before the job was created.
    code_put = fake_azure.find("PUT", r"/codes/[^/]+/versions/[^/]+$")[0]
    assert fake_azure.requests.index(code_put) < fake_azure.requests.index(put)

    uploaded = fake_azure.uploaded_code()
    with open(os.path.join(RUNTIME_DIR, "__init__.py"), "rb") as fh:
        assert uploaded["amldist/runtime/__init__.py"] == fh.read()
    assert "amldist/runtime/__main__.py" in uploaded and "amldist/__init__.py" in uploaded
    assert uploaded["train.py"] == (project / "src" / "train.py").read_bytes()
    assert uploaded["lib/data.py"] == b"ROWS = 10\n"
    assert "weights.ckpt" not in uploaded  # .amlignore honoured
    assert not any("__pycache__" in path for path in uploaded)

    assert out.splitlines()[0] == f"job: {name}"
    studio = out.splitlines()[1]
    assert studio.startswith(f"studio: https://ml.azure.com/runs/{name}?wsid={fake_azure.ws_path}")
    assert studio.endswith(f"&tid={TENANT}")  # azure-ai-ml added the tenant from our token
    assert "hf_realtokenvalue" not in out + err
    assert "experimental class" not in err
    assert snapshot_tree(project) == user_files_before  # nothing added to the user's folder
    assert os.listdir(temp) == []  # and the snapshot is gone


def test_name_option_names_the_job(fake_azure, tmp_path, capsys):
    prepared = make_project(tmp_path)
    assert submit(prepared, SubmitOptions(name="my-run-7", **WS)) == 0
    (put,) = fake_azure.job_puts()
    assert put.path.endswith("/jobs/my-run-7")
    assert capsys.readouterr().out.startswith("job: my-run-7\n")
    assert prepared.job.name is None  # the prepared job itself is not changed


def test_job_without_code_uploads_nothing(fake_azure, tmp_path, capsys):
    text = JOB.replace("code: src\n", "").replace(
        "python -m amldist.runtime -- python train.py --epochs ${{inputs.epochs}}", "nvidia-smi")
    assert submit(make_project(tmp_path, text), SubmitOptions(**WS)) == 0
    (put,) = fake_azure.job_puts()
    assert "codeId" not in put.json()["properties"]
    assert fake_azure.blobs == {} and fake_azure.codes == {}
    assert [r.method for r in fake_azure.requests] == ["PUT"]


def test_job_without_code_that_runs_the_runtime_gets_it_uploaded(fake_azure, tmp_path, capsys):
    text = JOB.replace("code: src\n", "")
    assert submit(make_project(tmp_path, text), SubmitOptions(**WS)) == 0
    uploaded = fake_azure.uploaded_code()
    assert sorted(p for p in uploaded if not p.startswith("amldist/runtime/")) == ["amldist/__init__.py"]
    assert "amldist/runtime/__init__.py" in uploaded
    (put,) = fake_azure.job_puts()
    assert put.json()["properties"]["codeId"].startswith(f"{fake_azure.ws_path}/codes/")


def test_inline_environment_is_registered_then_referenced(fake_azure, tmp_path, capsys):
    text = JOB.replace("environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest\n",
                       "environment:\n  image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04\n")
    assert submit(make_project(tmp_path, text), SubmitOptions(**WS)) == 0
    (env_put,) = fake_azure.find("PUT", r"/environments/[^/]+/versions/[^/]+$")
    assert env_put.json()["properties"]["image"] == "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04"
    (put,) = fake_azure.job_puts()
    assert put.json()["properties"]["environmentId"] == env_put.path


def test_stream_follows_the_logs_until_the_job_completes(fake_azure, tmp_path, capsys):
    fake_azure.run_log = "rank 0: step 10 loss 0.25\n"
    assert submit(make_project(tmp_path), SubmitOptions(stream=True, **WS)) == 0
    out = capsys.readouterr().out
    assert "rank 0: step 10 loss 0.25" in out
    assert "Execution Summary" in out
    assert len(fake_azure.find("GET", r"/runs/[^/]+/details$")) >= 2  # polled until Completed


def test_stream_of_a_failing_job_exits_1_with_the_service_error(fake_azure, tmp_path, capsys):
    fake_azure.run_statuses = ("Running", "Failed")
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions(stream=True, **WS))
    assert caught.value.exit_code == 1
    assert "rank 1 exited with code 3" in caught.value.message
    assert "ml.azure.com/runs/" in caught.value.hint


def test_ctrl_c_while_streaming_leaves_the_job_running(fake_azure, tmp_path, capsys, monkeypatch):
    original = fake_azure._data_plane

    def interrupt_on_poll(rec):
        if rec.path.endswith("/details") and fake_azure._polls:
            raise KeyboardInterrupt  # the user presses Ctrl-C during the second poll
        return original(rec)

    monkeypatch.setattr(fake_azure, "_data_plane", interrupt_on_poll)
    assert submit(make_project(tmp_path), SubmitOptions(stream=True, **WS)) == 130
    err = capsys.readouterr().err
    assert "keeps running" in err and "ml.azure.com/runs/" in err


def test_no_token_is_exit_2_with_sign_in_hint(fake_azure, tmp_path, monkeypatch):
    from azure.core.exceptions import ClientAuthenticationError

    class NoToken:
        def get_token(self, *scopes, **kwargs):
            raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token.\nAttempted: ...")

        get_token_info = get_token

    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=NoToken(), client_kwargs={"transport": fake_azure}))
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions(**WS))
    assert caught.value.exit_code == 2
    assert "DefaultAzureCredential failed to retrieve a token." in caught.value.message
    assert "az login" in caught.value.hint
    assert fake_azure.requests == []


def test_credentials_come_from_default_azure_credential(fake_azure, tmp_path, monkeypatch, capsys):
    import azure.identity

    made = []

    class RecordingDefault(FakeCredential):  # stands in for az login, a service principal...
        def __init__(self, **kwargs):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(azure.identity, "DefaultAzureCredential", RecordingDefault)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(client_kwargs={"transport": fake_azure}))
    assert submit(make_project(tmp_path), SubmitOptions(**WS)) == 0
    assert len(made) == 1 and made[0].calls > 0
    (put,) = fake_azure.job_puts()
    assert put.headers["Authorization"] == f"Bearer {FakeCredential.token}"


def test_service_refusal_is_one_line_with_status_and_message(fake_azure, tmp_path, monkeypatch):
    original = fake_azure._arm

    def refuse_jobs(rec):
        if rec.method == "PUT" and "/jobs/" in rec.path:
            return 400, {"error": {"code": "UserError", "message": "Compute gpu-cluster not found.\nMore text"}}, None
        return original(rec)

    monkeypatch.setattr(fake_azure, "_arm", refuse_jobs)
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions(**WS))
    assert caught.value.exit_code == 1
    assert caught.value.message == "Azure ML refused the request (400 UserError): Compute gpu-cluster not found."


def test_unreachable_azure_is_one_line_exit_1(fake_azure, tmp_path, monkeypatch):
    from azure.core.exceptions import ServiceRequestError

    original = fake_azure.send
    attempts = []

    def offline(request, **kwargs):  # the code upload works, then the connection drops
        if "/jobs/" in request.url:
            attempts.append(request.url)
            raise ServiceRequestError("Failed to establish a new connection: [Errno -3] Temporary failure\nmore")
        return original(request, **kwargs)

    monkeypatch.setattr(fake_azure, "send", offline)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(  # no retries: keep the test fast
        credential=fake_azure.credential, client_kwargs={"transport": fake_azure, "retry_total": 0}))
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions(**WS))
    assert caught.value.exit_code == 1
    assert caught.value.message == "cannot reach Azure: Failed to establish a new connection: [Errno -3] Temporary failure"
    assert "network" in caught.value.hint
    assert attempts and fake_azure.job_puts() == []


def test_no_workspace_is_exit_2_and_sends_nothing(fake_azure, tmp_path):
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions())
    assert caught.value.exit_code == 2
    assert "--local" in caught.value.hint and "--workspace" in caught.value.hint
    assert fake_azure.requests == [] and fake_azure.credential.calls == 0


def test_workspace_from_config_json_in_the_current_folder(fake_azure, tmp_path, capsys):
    (tmp_path / "work" / ".azureml").mkdir(parents=True, exist_ok=True)
    (tmp_path / "work" / ".azureml" / "config.json").write_text(json.dumps(
        {"subscription_id": fake_azure.subscription, "resource_group": "rg", "workspace_name": "ws"}))
    os.chdir(tmp_path / "work")
    assert submit(make_project(tmp_path / "p"), SubmitOptions()) == 0
    assert len(fake_azure.job_puts()) == 1


# what amldist adds for the runtime's fabric check (amldist.rules.fabric): the size's facts
NC24RS_V3 = {"AMLDIST_VM_SIZE": "Standard_NC24rs_v3", "AMLDIST_VM_INFINIBAND": "1", "AMLDIST_EXPECTED_BUSBW_GBS": "6"}


def test_dry_run_prints_the_rest_body_with_secrets_masked_and_sends_nothing(fake_azure, tmp_path):
    text = dry_run(make_project(tmp_path), SubmitOptions(name="dry-1"))
    body = json.loads(text)["request"]["body"]
    props = body["properties"]
    assert props["environmentVariables"] == {"NCCL_DEBUG": "INFO", "HF_TOKEN": "***", **NC24RS_V3}
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 4}
    assert props["resources"]["instanceCount"] == 2
    assert props["command"].startswith("python -m amldist.runtime -- python train.py")
    assert "hf_realtokenvalue" not in text
    assert fake_azure.requests == [] and fake_azure.credential.calls == 0


def test_the_put_body_matches_the_dry_run_body(fake_azure, tmp_path, capsys):
    """What --dry-run shows is what is sent, apart from the ids resolved in the workspace."""
    prepared = make_project(tmp_path)
    dry = json.loads(dry_run(prepared, SubmitOptions(name="same")))["request"]["body"]["properties"]
    submit(prepared, SubmitOptions(name="same", **WS))
    sent = fake_azure.job_puts()[0].json()["properties"]
    resolved = {"codeId", "computeId", "environmentId", "environmentVariables"}
    assert {k: v for k, v in dry.items() if k not in resolved} == \
        {k: v for k, v in sent.items() if k not in resolved}


def test_importing_the_backend_does_not_import_azure():
    import subprocess
    import sys

    probe = textwrap.dedent("""
        import sys
        import amldist.backends.azureml.backend, amldist.backends.azureml.workspace, amldist.azure_sdk.code_snapshot
        print(sorted(m for m in sys.modules if m.startswith("azure")))
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_azure_packages_are_a_user_error(fake_azure, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "azure.identity", None)  # "not installed"
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend())  # no injected credential
    with pytest.raises(UserError) as caught:
        submit(make_project(tmp_path), SubmitOptions(**WS))
    assert "azure-identity" in caught.value.message and "pip install azure-ai-ml azure-identity" in caught.value.hint
    assert fake_azure.requests == []


def test_a_component_with_additional_includes_uploads_them_as_azure_ml_lays_them_out(fake_azure, tmp_path, capsys):
    import io
    import zipfile

    from amldist.submit.prepare import prepare

    (tmp_path / "component" / "src").mkdir(parents=True)
    (tmp_path / "component" / "src" / "train.py").write_text("print('train')\n")
    (tmp_path / "shared_lib").mkdir()
    (tmp_path / "shared_lib" / "util.py").write_text("HELP = 1\n")
    (tmp_path / "shared_lib" / "big.ckpt").write_bytes(b"\0" * 8)
    (tmp_path / "shared_lib" / ".amlignore").write_text("*.ckpt\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 2\n")
    (tmp_path / "settings.json").write_text("{}\n")
    (tmp_path / "component" / "train.yml").write_text(textwrap.dedent("""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
        type: command
        name: train_with_includes
        code: ./src
        command: python -m amldist.runtime -- python train.py
        environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
        additional_includes: [../shared_lib, ../settings.json, ../pkg.zip]
        distribution: {type: pytorch, process_count_per_instance: 1}
        resources: {instance_count: 2}
        """))
    prepared = prepare(str(tmp_path / "component" / "train.yml"))
    options = SubmitOptions(**WS)
    assert "settings.json" in dry_run(prepared, options)  # the dry run lists what the upload will hold
    assert submit(prepared, options) == 0
    uploaded = fake_azure.uploaded_code()
    assert uploaded["train.py"] == b"print('train')\n"
    assert uploaded["shared_lib/util.py"] == b"HELP = 1\n"
    assert "shared_lib/big.ckpt" not in uploaded  # the included folder's own ignore file, as azure-ai-ml applies it
    assert uploaded["settings.json"] == b"{}\n"
    with zipfile.ZipFile(io.BytesIO(uploaded["pkg.zip"])) as archive:
        assert archive.read("pkg/mod.py") == b"X = 2\n"
    assert "amldist/runtime/__init__.py" in uploaded
