"""A component run as a job keeps outputs a command job can declare: azure-ai-ml's untyped ``path`` output
becomes ``uri_folder`` (the responsible-AI components of azureml-assets have them), and a value output
(a pipeline's control output) runs locally but is one line on Azure, where only a pipeline step takes one."""

from __future__ import annotations

import json

import pytest

from amldist.errors import UserError

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


def test_a_value_output_runs_locally_and_is_one_line_on_azure(tmp_path):
    pytest.importorskip("azure.ai.ml")
    path = _component(tmp_path, "  first: {type: boolean, is_control: true}")
    local_backend, local_plan = _plan("local", path, tmp_path)
    assert "output first: " in local_backend.describe(local_plan)
    with pytest.raises(UserError) as caught:
        _plan("azureml", path, tmp_path)
    assert "output 'first' is a boolean value (a pipeline's control output)" in caught.value.message
    assert "\n" not in caught.value.message and "pipeline job" in caught.value.hint
