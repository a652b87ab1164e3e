"""A sweep job sent to Azure ML: the body azure-ai-ml builds, the trial's code with the runtime bundled."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
CORPUS = ROOT / "tests" / "fixtures" / "real_specs"
SPECS = [CORPUS / "azureml-examples/cli/jobs/basics/hello-sweep.yml",
         CORPUS / "azureml-examples/cli/jobs/single-step/lightgbm/iris/job-sweep.yml",
         CORPUS / "azureml-examples/cli/jobs/single-step/scikit-learn/iris/job-sweep.yml",
         ROOT / "samples/sweep/job.yml"]


@pytest.fixture(autouse=True)
def no_workspace(monkeypatch, tmp_path):
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # the experiment name of a spec without one comes from here, on both sides
    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)


def dry_run(path: Path) -> dict:
    from amldist.backends import get_backend
    from amldist.submit.prepare import prepare
    from amldist.submit.prepared import SubmitOptions

    backend = get_backend("azureml")
    return json.loads(backend.describe(backend.plan(prepare(str(path)), SubmitOptions(dry_run=True))))


def azure_body(path: Path) -> dict:
    from azure.ai.ml import load_job
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object

    from amldist.azure_sdk.entities import _to_json
    from amldist.rules.secrets import mask_tree

    return mask_tree(_to_json(to_rest_job_object(load_job(path))))


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_dry_run_body_is_azure_ai_mls_own(path):
    shown = dry_run(path)
    ours, theirs = shown["request"]["body"]["properties"], azure_body(path)["properties"]
    assert ours["jobType"] == "Sweep" and shown["request"]["job"]
    assert ours["trial"].pop("codeId").startswith("<uploaded at submit: src/")  # the snapshot, named
    theirs["trial"].pop("codeId")
    assert ours == theirs
    assert shown["code_snapshot"]["runtime_added"] and "amldist/runtime/__init__.py" in shown["code_snapshot"]["files"]


def test_a_distributed_trial_is_sent_with_the_runtime_in_its_code():
    from amldist.azure_sdk.entities import to_azure
    from amldist.model import load

    entity = to_azure(load(SPECS[-1]), base_dir=SPECS[-1].parent)
    code = Path(entity.trial.code)
    assert (code / "train.py").is_file() and (code / "amldist" / "runtime" / "__init__.py").is_file()
    assert entity.trial.distribution.process_count_per_instance == 2 and entity.trial.resources.instance_count == 2
    plain = to_azure(load(SPECS[0]), base_dir=SPECS[0].parent)  # no distribution: the code as written
    assert plain.trial.code == "src"


def test_a_distributed_trial_on_a_catalog_size_carries_the_size_facts(tmp_path):
    spec = tmp_path / "sweep.yml"
    spec.write_text(SPECS[-1].read_text().replace("  resources:\n    instance_count: 2\n",
                                                   "  resources:\n    instance_count: 2\n"
                                                   "    instance_type: Standard_ND96isr_H100_v5\n")
                    .replace("process_count_per_instance: 2", "process_count_per_instance: 8")
                    .replace("code: src", f"code: {SPECS[-1].parent / 'src'}"))
    variables = dry_run(spec)["request"]["body"]["properties"]["trial"]["environmentVariables"]
    assert variables["AMLDIST_VM_INFINIBAND"] == "1" and variables["AMLDIST_VM_SIZE"] == "Standard_ND96isr_H100_v5"
