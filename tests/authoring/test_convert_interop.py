"""What convert and distributed_component emit, read by the real azure-ai-ml 1.35.2.

- converted components: ``load_component`` + ``_validate()``, and as a node of an ``@dsl.pipeline``;
- ``component_to_job`` results: ``load_job`` + ``_validate()``;
- legacy DistributedComponents: azure-ai-ml's internal components, in a subprocess because
  AZURE_ML_INTERNAL_COMPONENTS_ENABLED must be set before azure.ai.ml is imported.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from amldist.authoring.component_job import component_to_job
from amldist.authoring.convert import convert_legacy
from amldist.authoring.legacy_builder import distributed_component
from tests.conftest import ROOT, conformance_files

ml = pytest.importorskip("azure.ai.ml")

LEGACY_FILES = conformance_files("valid/legacy")
COMMAND = ("python train.py --data {inputs.data} [--lr {inputs.lr}] [--note {inputs.note}] --epochs {inputs.epochs} "
           "--kind {inputs.kind} --model {outputs.model}")
INPUTS = {
    "data": {"type": ["AnyFile", "AnyDirectory"], "description": "training data"},
    "lr": {"type": "Float", "optional": True, "min": 0.0, "max": 1.0},
    "note": {"type": "String", "optional": True},
    "epochs": {"type": "Integer", "default": 3, "min": 1},
    "kind": {"type": "Enum", "enum": ["small", "large"], "default": "small"},
}
ENVIRONMENTS = {
    "image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest",
    "registered": "AzureML-Minimal",
    "conda_inline": {"docker": {"image": "contoso/base:1"},
                     "conda": {"conda_dependencies": {"name": "e", "dependencies": ["python=3.10", {"pip": ["torch"]}]}}},
    "conda_file": {"conda": {"conda_dependencies_file": "conda.yaml"}},
    "dockerfile": {"docker": {"build": {"dockerfile": "file:Dockerfile"}}},
}


def load_valid_component(path):
    component = ml.load_component(source=str(path))
    result = component._validate()
    assert result.passed, result.error_messages
    return component


def legacy_spec(launcher="mpi", environment="image", **kwargs):
    return distributed_component("contoso.samples.trainer", "1.0.0", launcher, command=COMMAND, inputs=INPUTS,
                                 outputs={"model": "AnyDirectory"}, environment=ENVIRONMENTS[environment],
                                 code="src", **kwargs)


@pytest.fixture
def workdir(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print('hi')\n")
    (src / "conda.yaml").write_text("name: e\ndependencies:\n  - python=3.10\n")
    (src / "Dockerfile").write_text("FROM ubuntu:22.04\n")
    return tmp_path


@pytest.mark.parametrize("environment", sorted(ENVIRONMENTS))
@pytest.mark.parametrize("launcher", ["mpi", "torch.distributed"])
def test_converted_components_load_and_validate(workdir, cli, launcher, environment):
    legacy_spec(launcher, environment).save(workdir / "legacy.yaml")
    (workdir / "out").mkdir()
    out = workdir / "out" / "component.yaml"  # another folder: paths are rewritten for it
    code, _, err = cli("convert", str(workdir / "legacy.yaml"), "-o", str(out), "--instance-count", "2",
                       "--process-count-per-node", "4", "--shm-size", "8g", "--timeout-seconds", "600")
    assert code == 0, err
    component = load_valid_component(out)
    assert component.distribution.type == {"mpi": "mpi", "torch.distributed": "pytorch"}[launcher]
    assert component.distribution.process_count_per_instance == 4
    assert component.resources["instance_count"] == 2 and component.resources["shm_size"] == "8g"
    assert "$[[--lr ${{inputs.lr}}]]" in component.command
    assert component.inputs["kind"].enum == ["small", "large"] and component.inputs["lr"].optional is True
    assert component.inputs["data"].type == "uri_folder"


@pytest.mark.parametrize("path", LEGACY_FILES, ids=lambda p: p.name)
def test_conformance_legacy_files_convert_to_loadable_components(path, cli, tmp_path):
    out = tmp_path / "component.yaml"
    code, _, err = cli("convert", str(path), "-o", str(out))
    assert code == 0, err
    component = load_valid_component(out)
    assert component.type == "command" and component.distribution.type == "mpi"


def test_converted_component_as_a_pipeline_node(workdir):
    from azure.ai.ml import Input, dsl

    legacy_spec("torch.distributed").save(workdir / "legacy.yaml")
    convert_legacy(str(workdir / "legacy.yaml")).save(workdir / "component.yaml")
    train = load_valid_component(workdir / "component.yaml")

    @dsl.pipeline(default_compute="gpu-cluster", description="converted component as a node")
    def pipeline(data):
        node = train(data=data, lr=0.1, epochs=5)
        node.resources = {"instance_count": 2, "instance_type": "Standard_ND96isr_H100_v5"}
        node.distribution.process_count_per_instance = 8
        return {"model": node.outputs.model}

    job = pipeline(data=Input(type="uri_folder", path="azureml://datastores/workspaceblobstore/paths/data/"))
    result = job._validate()
    assert result.passed, result.error_messages
    node = job.jobs["node"]._to_rest_object()
    assert node["distribution"] == {"distribution_type": "PyTorch", "process_count_per_instance": 8}
    assert node["resources"]["instance_count"] == 2


def test_component_to_job_loads_as_a_command_job(workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    (workdir / "data").mkdir()
    legacy_spec("mpi", "conda_file").save(workdir / "legacy.yaml")
    job = component_to_job(str(workdir / "legacy.yaml"), inputs={"data": "data", "lr": "0.3"}, compute="cpu",
                           instance_count=2, process_count_per_instance=2, timeout=900)
    (workdir / "elsewhere").mkdir()
    job.save(workdir / "elsewhere" / "job.yaml")  # absolute local paths: the folder does not matter
    loaded = ml.load_job(source=str(workdir / "elsewhere" / "job.yaml"))
    result = loaded._validate()
    assert result.passed, result.error_messages
    assert loaded.distribution.process_count_per_instance == 2 and loaded.limits.timeout == 900
    assert "--note" not in loaded.command and "--lr ${{inputs.lr}}" in loaded.command
    assert loaded.inputs["lr"]._data == 0.3 and loaded.inputs["epochs"]._data == 3


_INTERNAL_SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["AZURE_ML_INTERNAL_COMPONENTS_ENABLED"] = "true"  # before azure.ai.ml is imported
    from azure.ai.ml import dsl, load_component
    from azure.ai.ml._utils.utils import try_enable_internal_components
    enabled = try_enable_internal_components()
    results = {}
    for path in sys.argv[1:]:
        component = load_component(source=path)
        entry = {"class": type(component).__name__, "type": component.type,
                 "errors": component._validate().error_messages}
        if component.launcher["type"] == "mpi":  # as a pipeline node (torch.distributed nodes fail in 1.35.2)
            @dsl.pipeline(default_compute="cpu-cluster")
            def pipeline():
                component(data="azureml://datastores/workspaceblobstore/paths/data/")
            entry["pipeline_errors"] = pipeline()._validate().error_messages
        results[path] = entry
    print(json.dumps({"enabled": enabled, "results": results}))
""")


def test_legacy_specs_load_through_internal_components(workdir):
    paths = []
    for launcher in ("mpi", "torch.distributed"):
        path = workdir / f"{launcher}.yaml"
        legacy_spec(launcher, display_name="Trainer", description="d", tags={"a": "b"}).save(path)
        paths.append(str(path))
    paths.append(str(ROOT / "components" / "pytorch_ddp_trainer" / "component.legacy.yaml"))
    env = {k: v for k, v in os.environ.items() if k != "AZURE_ML_INTERNAL_COMPONENTS_ENABLED"}
    proc = subprocess.run([sys.executable, "-c", _INTERNAL_SCRIPT, *paths], capture_output=True, text=True,
                          timeout=180, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["enabled"] is True
    for path in paths:
        entry = report["results"][path]
        assert entry["class"] == "InternalComponent" and entry["type"] == "DistributedComponent"
        assert entry["errors"] == {}
    assert report["results"][paths[0]]["pipeline_errors"] == {}
