"""A component run as a job keeps outputs a command job can declare: azure-ai-ml's untyped ``path`` output
becomes ``uri_folder`` (the responsible-AI components of azureml-assets have them), and a value output
(a pipeline's control output) runs locally as a job and goes to Azure as the one step of a pipeline job,
since Azure ML takes such an output only from a pipeline step."""

from __future__ import annotations

import json

import pytest


COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: outputs_check
version: 1
inputs:
  data: {type: path}
outputs:
{outputs}
command: python -c "print(1)" --in ${{inputs.data}} --out '${{outputs.first}}'
environment: azureml:env:1
"""


def _component(tmp_path, outputs: str):
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / "comp.yml"
    path.write_text(COMPONENT.replace("{outputs}", outputs))
    return path


def _plan(backend_name, path, tmp_path):
    from amldist.backends import get_backend
    from amldist.submit.prepare import prepare
    from amldist.submit.prepared import SubmitOptions

    backend = get_backend(backend_name)
    prepared = prepare(str(path), inputs=[f"data={tmp_path / 'data'}"])
    return backend, backend.plan(prepared, SubmitOptions(dry_run=True, run_root=str(tmp_path / "runs")))


def test_a_path_output_is_a_folder_in_the_job_azure_ai_ml_accepts(tmp_path):
    pytest.importorskip("azure.ai.ml")
    path = _component(tmp_path, "  first: {type: path}\n  second: {type: mlflow_model}")
    backend, plan = _plan("azureml", path, tmp_path)
    outputs = json.loads(backend.describe(plan))["request"]["body"]["properties"]["outputs"]
    assert outputs["first"]["jobOutputType"] == "uri_folder"
    assert outputs["second"]["jobOutputType"] == "mlflow_model"
    local_backend, local_plan = _plan("local", path, tmp_path)
    assert "output first: " in local_backend.describe(local_plan)


def test_a_value_output_goes_to_azure_as_a_one_step_pipeline_and_runs_locally_as_a_job(tmp_path):
    """The body is the one azure-ai-ml builds for the one-step pipeline a user would write by hand."""
    pytest.importorskip("azure.ai.ml")
    from tests.test_real_specs import azure_body, normalised

    path = _component(tmp_path, "  first: {type: boolean, is_control: true}")
    local_backend, local_plan = _plan("local", path, tmp_path)
    assert "output first: " in local_backend.describe(local_plan)
    backend, plan = _plan("azureml", path, tmp_path)
    shown = json.loads(backend.describe(plan))
    assert "is sent as the one step of a pipeline job: its output 'first' carries a value" in shown["warnings"][0]
    by_hand = tmp_path / "by_hand.yml"
    by_hand.write_text("$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json\n"
                       "type: pipeline\njobs:\n  outputs_check:\n    type: command\n    component: file:./comp.yml\n"
                       f"    inputs:\n      data: {{type: uri_folder, path: {tmp_path / 'data'}}}\n")
    ours = normalised(shown["request"]["body"], {}, set())
    assert ours["jobType"] == "Pipeline" and list(ours["jobs"]) == ["outputs_check"]
    assert ours == normalised(azure_body(by_hand), {}, set())
