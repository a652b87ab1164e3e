"""Pipeline rules: bindings, component references, per-node sizes."""

from __future__ import annotations

import textwrap

from amldist.validate import validate_file

COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: train
version: 1
inputs:
  data:
    type: uri_folder
outputs:
  model:
    type: uri_folder
command: python t.py ${{inputs.data}} ${{outputs.model}}
environment: azureml:env:1
distribution:
  type: pytorch
  process_count_per_instance: 4
resources:
  instance_count: 1
  instance_type: Standard_NC24s_v3
"""


def write(tmp_path, pipeline: str, component: str = COMPONENT):
    (tmp_path / "components").mkdir(exist_ok=True)
    (tmp_path / "components" / "train.yml").write_text(component)
    path = tmp_path / "pipeline.yml"
    path.write_text(textwrap.dedent(pipeline))
    return validate_file(path)


def summary(diags):
    return [(d.code, d.severity, d.field, d.line) for d in diags]


def test_node_inputs_and_outputs_are_checked_against_the_component(tmp_path):
    diags = write(tmp_path, """\
        type: pipeline
        outputs:
          final:
            type: uri_folder
        jobs:
          train:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
              dtaa: 1
            outputs:
              model: ${{parent.outputs.final}}
              modle: ${{parent.outputs.finale}}
        """)
    assert summary(diags) == [
        ("unknown-input", "error", "jobs.train.inputs.dtaa", 11),
        ("unknown-output", "error", "jobs.train.outputs.modle", 14),
        ("undeclared-output", "error", "jobs.train.outputs.modle", 14),
    ]
    assert diags[0].hint == "did you mean 'data'?"


def test_sizes_combine_node_overrides_with_the_component(tmp_path):
    pipeline = textwrap.dedent("""\
        type: pipeline
        jobs:
          train:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
            resources:
              instance_count: 2
        """)
    # component: 4 processes on NC24s_v3 (4 GPUs, no InfiniBand); the node asks for 2 nodes
    assert summary(write(tmp_path, pipeline)) == [("no-infiniband", "warning", "jobs.train.resources.instance_count", 9)]
    # the component's process count is too high for the node's size: reported at the node's component line
    diags = write(tmp_path, pipeline.replace("instance_count: 2", "instance_count: 1\n      instance_type: Standard_NC6s_v3"))
    assert summary(diags) == [("too-many-processes", "error", "jobs.train.distribution.process_count_per_instance", 5)]
    # a node distribution of another type replaces the component's
    diags = write(tmp_path, pipeline.replace("resources:\n      instance_count: 2",
                                             "distribution:\n      type: mpi"))
    assert diags == []


def test_missing_and_broken_components(tmp_path):
    pipeline = """\
        type: pipeline
        jobs:
          a:
            type: command
            component: ./components/nope.yml
          b:
            type: command
            component: ./components/train.yml
          c:
            type: command
            component: azureml:registered_component:3
            inputs:
              anything: 1
        """
    diags = write(tmp_path, pipeline, component="name: [broken\n")
    assert summary(diags) == [("missing-component", "error", "jobs.a.component", 5),
                              ("invalid-component", "error", "jobs.b.component", 8)]
    assert "line 2" in diags[1].message


def test_inline_nodes_and_inline_components(tmp_path):
    diags = write(tmp_path, """\
        type: pipeline
        inputs:
          lr: 0.1
        jobs:
          prep:
            type: command
            command: echo ${{inputs.x}} > ${{outputs.out}}
            environment: azureml:env:1
            inputs:
              x: ${{parent.inputs.lr}}
            outputs:
              out:
                type: uri_folder
          train:
            type: command
            component:
              type: command
              command: python t.py ${{inputs.data}} ${{inputs.rate}}
              environment: azureml:env:1
              inputs:
                data:
                  type: uri_folder
            inputs:
              data: ${{parent.jobs.prep.outputs.out}}
              extra: ${{parent.jobs.prep.outputs.nope}}
        """)
    assert summary(diags) == [
        ("undeclared-input", "error", "jobs.train.component.command", 18),
        ("unknown-input", "error", "jobs.train.inputs.extra", 25),
        ("undeclared-output", "warning", "jobs.train.inputs.extra", 25),  # azure-ai-ml loads it
    ]


def test_inline_command_steps_without_an_environment_warn(tmp_path):
    pipeline = """\
        type: pipeline
        settings:
          default_compute: azureml:cpu
        jobs:
          bare:
            type: command
            command: echo hi
          untyped:
            command: echo hi
          with_env:
            command: echo hi
            environment: azureml:env:1
          from_component:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
        """
    diags = write(tmp_path, pipeline)
    assert summary(diags) == [("missing-environment", "warning", "jobs.bare.environment", 5),
                              ("missing-environment", "warning", "jobs.untyped.environment", 8)]
    assert diags[0].col == 3 and "azure-ai-ml refuses" in diags[0].message
    assert "default_environment" not in diags[0].hint
    # settings.default_environment does not help azure-ai-ml 1.35.2: still warned, and the hint says why
    with_default = pipeline.replace("default_compute: azureml:cpu", "default_environment: azureml:env:1")
    diags = write(tmp_path, with_default)
    assert [d.code for d in diags] == ["missing-environment", "missing-environment"]
    assert "settings.default_environment" in diags[0].hint


def test_dotted_pipeline_inputs_bind_and_reach_dotted_component_inputs(tmp_path):
    component = COMPONENT.replace("inputs:\n", "inputs:\n  group.lr:\n    type: number\n")
    diags = write(tmp_path, """\
        type: pipeline
        inputs:
          group.lr: 0.1
          plain: 1
        jobs:
          train:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
              group.lr: ${{parent.inputs.group.lr}}
          other:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
              group.lr: ${{parent.inputs.group.lrr}}
              group.rate: ${{parent.inputs.plain}}
        """, component=component)
    assert summary(diags) == [("undeclared-input", "error", "jobs.other.inputs.group.lr", 17),
                              ("unknown-input", "error", "jobs.other.inputs.group.rate", 18)]
    assert "'group.lrr'" in diags[0].message and diags[0].hint == "did you mean 'group.lr'?"


def test_malformed_inputs_and_outputs_sections_are_reported_once(tmp_path):
    diags = write(tmp_path, """\
        type: pipeline
        inputs: [lr]
        jobs:
          prep:
            type: command
            command: echo ${{inputs.x}} ${{outputs.out}}
            environment: azureml:env:1
            inputs: [x]
            outputs:
          train:
            type: command
            component: ./components/train.yml
            inputs:
              data: ${{parent.jobs.prep.outputs.out}}
          other:
            type: command
            component: ./components/train.yml
            inputs:
              data: ${{parent.inputs.lr}}
        """)
    # one wrong-type each; the names used in commands and bindings are not also called undeclared
    assert summary(diags) == [("wrong-type", "error", "inputs", 2), ("wrong-type", "error", "jobs.prep.inputs", 8),
                              ("wrong-type", "error", "jobs.prep.outputs", 9)]
    # a component whose inputs are malformed: its own file's error, at its own file and line; the node's
    # inputs are not each unknown
    diags = write(tmp_path, """\
        type: pipeline
        jobs:
          train:
            type: command
            component: ./components/train.yml
            inputs:
              data: azureml:d@latest
        """, component=COMPONENT.replace("inputs:\n  data:\n    type: uri_folder\n", "inputs: [data]\n"))
    assert [(d.file.endswith("components/train.yml"), d.code, d.line) for d in diags] == [(True, "wrong-type", 5)]


def test_an_input_a_pipeline_steps_component_does_not_declare_is_reported_again(tmp_path):
    sub = "type: pipeline\nname: sub\nversion: '1'\ninputs:\n  raw: {type: uri_folder}\njobs:\n" \
          "  run:\n    command: ls ${{inputs.r}}\n    environment: azureml:env:1\n" \
          "    inputs: {r: '${{parent.inputs.raw}}'}\n"
    diags = write(tmp_path, """\
        type: pipeline
        jobs:
          inner:
            type: pipeline
            component: ./components/train.yml
            inputs:
              raw: azureml:raw@latest
              rwa: 1
        """, component=sub)
    # a warning: azure-ai-ml 1.35.2 accepts the pipeline, and the value then reaches no step
    assert summary(diags) == [("unknown-input", "warning", "jobs.inner.inputs.rwa", 8)]
    assert "did you mean 'raw'?" in diags[0].hint


def test_a_components_error_is_reported_once_when_the_pipeline_and_the_component_are_both_checked(tmp_path):
    from amldist.validate.checker import check

    bad = COMPONENT.replace("process_count_per_instance: 4", "process_count_per_instance: 0")
    write(tmp_path, "type: pipeline\njobs:\n  a:\n    type: command\n    component: ./components/train.yml\n",
          component=bad)
    for targets in ([tmp_path], [tmp_path / "pipeline.yml", tmp_path / "components" / "train.yml"],
                    [tmp_path / "components" / "train.yml", tmp_path / "pipeline.yml"]):
        result = check(targets)
        assert [(d.code, d.line) for d in result.diagnostics if d.severity == "error"] == [("out-of-range", 15)]
    # the pipeline alone still shows it, at the component's file
    (error,) = [d for d in check([tmp_path / "pipeline.yml"]).diagnostics if d.severity == "error"]
    assert error.file.endswith("train.yml") and error.code == "out-of-range"
