"""Real specs' shapes that amldist got wrong (issue 27), each written as the real one is and held to what
azure-ai-ml's own ``load_job`` makes of the same file where that applies. Nothing runs: validate and plan."""

from __future__ import annotations

import textwrap

import pytest

from amldist.backends import get_backend
from amldist.errors import UserError
from amldist.rules.secrets import MASK
from amldist.submit.prepare import SpecInvalid, prepare
from amldist.validate import validate_file

PIPELINE = "$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json\ntype: pipeline\n"
COMPONENT = "$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\ntype: command\n"
ENV = "azureml:AzureML-sklearn-1.5@latest"


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def codes(path):
    return [(d.severity, d.code) for d in validate_file(path)]


def azure_load(path):
    """azure-ai-ml's own reading of the file: (the loaded job, whether its _validate() passes)."""
    ml = pytest.importorskip("azure.ai.ml")
    from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml

    quiet_azure_ai_ml()
    job = ml.load_job(source=str(path))
    return job, job._validate()


def hello_batch(tmp_path):
    """azureml-examples' endpoints/batch/deploy-pipelines/hello-batch: a pipeline job naming a pipeline
    component whose one step's component is inline, with no name and no $schema."""
    write(tmp_path, "hello-component/src/hello.py", "print('hello world!')\n")
    write(tmp_path, "hello-component/hello.yml", f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/pipelineComponent.schema.json
        name: hello_batch
        display_name: Hello Batch component
        version: 1
        type: pipeline
        jobs:
          main_job:
            type: command
            component:
              code: src
              environment: {ENV}
              command: >-
                python hello.py
        """)
    return write(tmp_path, "pipeline-job.yml",
                 PIPELINE + "compute: batch-cluster\ncomponent: hello-component/hello.yml\n")


def test_an_inline_step_component_without_name_or_schema_is_a_command_component_and_runs_here(tmp_path):
    path = hello_batch(tmp_path)
    assert codes(path) == []
    graph = prepare(str(path)).graph
    (node,) = graph.nodes
    assert node.local_problem is None  # was: "its component is a command_job, which runs only on Azure ML"
    job = node.to_job({}, name="main_job")
    assert job.command == "python hello.py" and job.code.endswith("src")
    loaded, result = azure_load(path)  # azure-ai-ml reads the same step as a command component
    assert result.passed, result.error_messages
    (step,) = loaded.component.jobs.values()
    assert type(step.component).__name__ == "CommandComponent"


def test_input_names_that_differ_only_in_case_are_an_error_as_azure_refuses_them(tmp_path):
    path = write(tmp_path, "job.yml", f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        command: python train.py --lr ${{{{inputs.lr}}}} --Lr ${{{{inputs.Lr}}}}
        environment: {ENV}
        inputs:
          lr: 0.1
          Lr: 0.2
        """)
    [finding] = validate_file(path)
    assert (finding.code, finding.line, finding.field) == ("port-name-case", 6, "inputs.Lr")
    loaded, _ = azure_load(path)  # its own load_job passes; the component it sends does not
    refused = loaded.component._validate()
    assert not refused.passed and "equal ignore case" in str(refused.error_messages)


def test_a_float_bound_to_an_integer_input_is_refused_by_validate_at_its_line(tmp_path):
    write(tmp_path, "train.yml", COMPONENT + textwrap.dedent(f"""\
        name: train
        command: python train.py --epochs ${{{{inputs.epochs}}}}
        environment: {ENV}
        inputs:
          epochs: {{type: integer}}
        """))
    path = write(tmp_path, "pipe.yml", PIPELINE + textwrap.dedent("""\
        jobs:
          train:
            type: command
            component: ./train.yml
            inputs:
              epochs: 10.01
        """))
    [finding] = validate_file(path)
    assert (finding.code, finding.line) == ("input-type", 8)
    assert "input 'epochs' expects an integer, got 10.01" in finding.message  # the run's own words, now at once
    with pytest.raises(SpecInvalid):
        prepare(str(path))


def test_an_identical_duplicate_key_is_a_warning_and_submits(tmp_path):
    path = write(tmp_path, "job.yml", f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        command: echo hi
        environment: {ENV}
        compute: azureml:cpu-cluster
        compute: azureml:cpu-cluster
        """)
    assert codes(path) == [("warning", "duplicate-key")]
    assert prepare(str(path)).job.compute == "azureml:cpu-cluster"
    _, result = azure_load(path)  # az ml sends it
    assert result.passed, result.error_messages
    path.write_text(path.read_text().replace("compute: azureml:cpu-cluster\n", "compute: azureml:gpu\n", 1))
    assert codes(path) == [("error", "duplicate-key")]  # two values: one would be lost


def test_a_condition_on_a_component_step_validates_is_sent_and_is_refused_here_in_one_line(tmp_path):
    write(tmp_path, "hello.yml", COMPONENT + f"name: hello\ncommand: echo hi\nenvironment: {ENV}\n")
    path = write(tmp_path, "pipe.yml", PIPELINE + textwrap.dedent("""\
        compute: azureml:cpu-cluster
        inputs:
          flag: true
        jobs:
          hello:
            type: command
            component: ./hello.yml
            condition: ${{parent.inputs.flag}}
        """))
    assert codes(path) == []
    loaded, result = azure_load(path)
    assert result.passed and loaded._to_rest_object().properties.jobs["hello"]["condition"] == "${{parent.inputs.flag}}"
    backend = get_backend("local")
    with pytest.raises(UserError, match="step hello: a step with condition: runs only on Azure ML; .* "
                                        "--set jobs.hello.condition=null"):
        backend.plan(prepare(str(path)), backend.options())
    backend.plan(prepare(str(path), sets=["jobs.hello.condition=null"]), backend.options())


def test_an_import_steps_output_is_named_output_as_azure_names_it(tmp_path):
    """azure-ai-ml's own test_configs/import_job/import_pipeline_test.yml."""
    path = write(tmp_path, "pipe.yml", PIPELINE + textwrap.dedent(f"""\
        compute: azureml:cpu-cluster
        jobs:
          import_step:
            type: import
            source:
              type: azuresqldb
              query: select * from REGION
              connection: azureml:my_username_password
            output:
              type: mltable
              path: azureml://datastores/workspaceblobstore/paths/output_dir/
          data_prep_step:
            type: command
            inputs:
              imported_data:
                type: mltable
                path: ${{{{parent.jobs.import_step.outputs.output}}}}
            environment: {ENV}
            command: echo ${{{{inputs.imported_data}}}}
        """))
    assert codes(path) == []  # was: undeclared-output
    loaded, _ = azure_load(path)
    assert list(loaded.jobs["import_step"].outputs) == ["output"]
    path.write_text(path.read_text().replace("outputs.output}}", "outputs.result}}"))
    assert codes(path) == [("warning", "undeclared-output")]


def test_a_plain_binding_under_a_secret_looking_name_is_not_masked(tmp_path):
    pytest.importorskip("azure.ai.ml")
    path = write(tmp_path, "pipe.yml", PIPELINE + textwrap.dedent(f"""\
        compute: azureml:cpu-cluster
        inputs:
          key: abc
        jobs:
          train:
            type: command
            command: echo ${{{{inputs.key}}}}
            environment: {ENV}
            inputs:
              key: ${{{{parent.inputs.key}}}}
        """))
    backend = get_backend("azureml")
    text = backend.plan(prepare(str(path)), backend.options(dry_run=True)).describe()
    assert '"value": "${{parent.inputs.key}}"' in text  # a reference holds no value
    assert '"value": "abc"' not in text and MASK in text  # the value itself, under its secret name, stays masked

