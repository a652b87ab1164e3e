"""Pipeline submission through the real MLClient, up to the HTTP boundary (fake_pipeline.py)."""

from __future__ import annotations

import json

import pytest

import amldist.backends.azureml.backend as azureml
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_pipeline import FakePipelineAzure, PipelineCredential
from tests.submit.pipeline_project import make_pipeline_project


@pytest.fixture
def fake_pipeline_azure(monkeypatch, no_network, clean_env):
    import azure.storage.blob._shared.base_client as blob_base

    fake = FakePipelineAzure()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=PipelineCredential(), client_kwargs={"transport": fake}))
    yield fake
    assert fake.unexpected == [], f"requests the fake does not emulate: {[r.url for r in fake.unexpected]}"


WORKSPACE = ("--workspace", "ws", "--resource-group", "rg", "--subscription", "00000000-0000-0000-0000-000000000000")


def test_pipeline_submission_puts_the_pipeline_and_the_runtime_in_every_distributed_step(
        fake_pipeline_azure, cli, tmp_path):
    project = make_pipeline_project(tmp_path / "p")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    code, out, err = cli("submit", str(project / "pipeline.yml"), *WORKSPACE)
    assert code == 0, err
    assert "job: demo" in out
    (put,) = fake_pipeline_azure.job_puts()
    body = put.json()["properties"]
    assert body["jobType"] == "Pipeline"
    assert set(body["jobs"]) == {"prep", "train", "evaluate"}
    assert body["jobs"]["train"]["inputs"]["data"]["value"] == "${{parent.jobs.prep.outputs.data}}"
    # every step's component was registered; the code of the distributed one holds the runtime, the others' not
    specs = [c["properties"]["componentSpec"] for c in fake_pipeline_azure.components.values()]
    assets = fake_pipeline_azure.code_assets()
    with_code = {bool(spec.get("distribution")): assets[spec["code"].split("/codes/")[1].split("/")[0]]
                 for spec in specs if spec.get("code")}
    assert set(with_code) == {True, False}
    assert {"train.py", "amldist/__init__.py", "amldist/runtime/__init__.py"} <= set(with_code[True])
    assert not any(name.startswith("amldist/") for name in with_code[False])
    # the user's folders are only read
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_pipeline_dry_run_shows_the_rest_body_and_the_runtime_steps(fake_pipeline_azure, cli, tmp_path):
    project = make_pipeline_project(tmp_path / "p")
    code, out, err = cli("submit", str(project / "pipeline.yml"), "--dry-run",
                         "--set", "jobs.train.resources.instance_count=1")
    assert code == 0, err
    shown = json.loads(out)
    assert list(shown["steps_with_runtime"]) == ["train"]
    assert "amldist/runtime/process_group.py" in shown["steps_with_runtime"]["train"]["files"]
    body = shown["request"]["body"]["properties"]
    assert body["jobs"]["train"]["resources"]["instance_count"] == 1
    assert fake_pipeline_azure.requests == []  # a dry run sends nothing


def test_registered_nested_pipelines_and_top_level_components_are_sent_as_written(clean_env, no_network, cli,
                                                                                 tmp_path):
    env = "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest"
    (tmp_path / "pipeline.yml").write_text(
        "type: pipeline\nname: nested_registered\njobs:\n"
        "  inner:\n    type: pipeline\n    component: azureml://registries/r/components/prep/versions/1\n"
        "    inputs: {n: 3}\n"
        "  other:\n    type: pipeline\n    component: azureml:my_pipeline:2\n")
    code, out, err = cli("submit", str(tmp_path / "pipeline.yml"), "--dry-run")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["request"]["job"] == "nested_registered"
    jobs = shown["request"]["body"]["properties"]["jobs"]
    assert jobs["inner"]["componentId"] == "azureml://registries/r/components/prep/versions/1"
    assert jobs["other"]["componentId"] == "my_pipeline:2"
    (tmp_path / "pc.yml").write_text(
        "type: pipeline\nname: pc\nversion: '1'\ninputs:\n  word: {type: string, default: hi}\njobs:\n"
        f"  say:\n    command: echo ${{{{inputs.w}}}}\n    environment: {env}\n"
        "    inputs: {w: '${{parent.inputs.word}}'}\n")
    (tmp_path / "job.yml").write_text("type: pipeline\ncomponent: ./pc.yml\ninputs:\n  word: bye\n")
    code, out, err = cli("submit", str(tmp_path / "job.yml"), "--dry-run")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["request"]["job"]  # the generated name the submission will use
    assert shown["request"]["body"]["properties"]["inputs"]["word"]["value"] == "bye"


def test_a_dry_run_reads_each_component_file_once(clean_env, no_network, cli, tmp_path, monkeypatch):
    import os

    from amldist.rules import pipeline_graph

    monkeypatch.setattr(pipeline_graph, "_components", {})  # nothing read before this test counts
    project = make_pipeline_project(tmp_path / "p")
    opened: list = []
    real = os.open

    def counting(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    code, out, err = cli("submit", str(project / "pipeline.yml"), "--dry-run")
    monkeypatch.setattr(os, "open", real)
    assert code == 0, err
    assert [p for p in opened if p.endswith("train.yml")] == [str(project / "train.yml")]


def test_a_bundled_step_keeps_its_components_own_paths(fake_pipeline_azure, cli, tmp_path):
    """additional_includes and the conda file resolve from the component's folder, as az ml reads them."""
    from tests.submit.pipeline_project import COMPONENT, PIPELINE

    project = make_pipeline_project(tmp_path / "p", PIPELINE.replace("./train.yml", "./components/train.yml"))
    (project / "components").mkdir()
    (project / "components" / "conda.yaml").write_text("name: own\ndependencies: [python=3.10, own-package]\n")
    (project / "conda.yaml").write_text("name: shadow\ndependencies: [python=3.6, shadowing-package]\n")
    (project / "lib").mkdir()
    (project / "lib" / "helpers.py").write_text("HELP = 1\n")
    (project / "components" / "train.yml").write_text(
        COMPONENT.replace("code: ./src", "code: ../src\nadditional_includes: [../lib]").replace(
            "environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest",
            "environment:\n  image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04\n  conda_file: ./conda.yaml"))
    code, out, err = cli("submit", str(project / "pipeline.yml"), *WORKSPACE)
    assert code == 0, err
    conda = [json.dumps(body) for body in fake_pipeline_azure.environments.values()]
    assert any("own-package" in text for text in conda) and not any("shadowing-package" in text for text in conda)
    assets = fake_pipeline_azure.code_assets()
    bundled = [files for files in assets.values() if "amldist/runtime/__init__.py" in files]
    assert len(bundled) == 1 and {"train.py", "lib/helpers.py"} <= set(bundled[0]), sorted(bundled[0])


def test_a_distributed_step_inside_a_nested_pipeline_component_gets_the_runtime(fake_pipeline_azure, cli, tmp_path):
    project = make_pipeline_project(tmp_path / "p")
    (project / "sub").mkdir()
    (project / "sub" / "inner.yml").write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/pipelineComponent.schema.json\n"
        "type: pipeline\nname: inner\nversion: '1'\ninputs:\n  data: {type: uri_folder}\n"
        "outputs:\n  model: {type: uri_folder}\njobs:\n  train:\n    type: command\n"
        "    component: ../train.yml\n    inputs:\n      data: ${{parent.inputs.data}}\n"
        "    outputs:\n      model: ${{parent.outputs.model}}\n")
    (project / "nested.yml").write_text(
        "type: pipeline\nname: nested_demo\ncompute: azureml:cpu-cluster\njobs:\n"
        "  prep:\n    type: command\n    code: ./src\n    command: python prep.py ${{outputs.data}} 0\n"
        "    environment: azureml:AzureML-sklearn-1.5@latest\n    outputs:\n      data: {type: uri_folder}\n"
        "  outer:\n    type: pipeline\n    component: ./sub/inner.yml\n"
        "    inputs:\n      data: ${{parent.jobs.prep.outputs.data}}\n")
    code, out, err = cli("submit", str(project / "nested.yml"), "--dry-run")
    assert code == 0, err
    assert list(json.loads(out)["steps_with_runtime"]) == ["outer/train"]
    code, out, err = cli("submit", str(project / "nested.yml"), *WORKSPACE)
    assert code == 0, err
    bundled = [files for files in fake_pipeline_azure.code_assets().values() if "train.py" in files
               and "amldist/runtime/__init__.py" in files]
    assert len(bundled) == 1
