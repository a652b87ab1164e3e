"""ML v2 schemas on small documents of our own: what is accepted, what is refused, and where the error points.

The "stricter than azure-ai-ml" cases are values the SDK 1.35.2 loads but the service or the
job would trip over (test_sdk_agreement.py shows the SDK really accepts them).
"""

from __future__ import annotations

import pytest

from tests.validate.schemas.support import blamed_fields, errors, hints, parse

JOB = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: python train.py --epochs ${{inputs.epochs}}
environment: azureml:AzureML-acpt-pytorch-2.8-cuda12.6@latest
compute: azureml:gpu-cluster
inputs:
  epochs: 3
"""

COMPONENT = """
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: train_model
version: 1
command: python train.py --epochs ${{inputs.epochs}}
environment: azureml:my-env:1
inputs:
  epochs: {type: integer, default: 1}
"""

PIPELINE = """
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
inputs:
  nodes: 2
  gpus: 4
jobs:
  train:
    type: command
    component: ./train.yml
"""


def job(extra: str = "", **replace) -> dict:
    """The baseline job with top-level keys replaced by those of the YAML block ``extra`` and ``replace``."""
    data = parse(JOB)
    if extra.strip():
        data.update(parse(extra))
    data.update(replace)
    return data


def assert_rejected(data, field: str, hint: str | None = None):
    errs = errors(data)
    assert errs, f"expected {field} to be rejected in {data!r}"
    fields = blamed_fields(errs)
    assert field in fields, f"expected an error at {field}, got {sorted(fields)}"
    if hint is not None:
        assert any(hint in h for h in hints(errs)), f"no hint mentioning {hint!r}: {hints(errs)}"


def assert_accepted(data):
    errs = errors(data)
    assert not errs, "\n".join(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errs)


# ----------------------------------------------------------------------------- baseline

def test_baselines_are_valid():
    assert_accepted(job())
    assert_accepted(parse(COMPONENT))
    assert_accepted(parse(PIPELINE))


# ----------------------------------------------------------------------------- stricter than the SDK

@pytest.mark.parametrize(
    "block, field",
    [
        ("distribution: {type: pytorch, process_count_per_instance: -4}", "distribution.process_count_per_instance"),
        ("distribution: {type: pytorch, process_count_per_instance: 4.5}", "distribution.process_count_per_instance"),
        ("distribution: {type: pytorch, process_count_per_instance: 0}", "distribution.process_count_per_instance"),
        ("distribution: {type: mpi, process_count_per_instance: '4'}", "distribution.process_count_per_instance"),
        ("distribution: {type: mpi, process_count_per_instance: true}", "distribution.process_count_per_instance"),
        ("resources: {instance_count: 0}", "resources.instance_count"),
        ("resources: {max_instance_count: 0}", "resources.max_instance_count"),
        ("resources: {shm_size: lots}", "resources.shm_size"),
        ("resources: {shm_size: 16}", "resources.shm_size"),
        ("resources: {shm_size: 16gb}", "resources.shm_size"),
        ("limits: {timeout: -5}", "limits.timeout"),
        ("limits: {timeout: 0}", "limits.timeout"),
        ("limits: {timeout: 30.5}", "limits.timeout"),
        ("distribution: {type: tensorflow, worker_count: -1}", "distribution.worker_count"),
        ("distribution: {type: tensorflow, worker_count: 0}", "distribution.worker_count"),
        ("distribution: {type: tensorflow, parameter_server_count: -1}", "distribution.parameter_server_count"),
        ("distribution: {type: tensorflow, process_count_per_instance: 2}", "distribution.process_count_per_instance"),
        ("distribution: {type: pytorch, worker_count: 2}", "distribution.worker_count"),
        ("distribution: {type: mpi, parameter_server_count: 1}", "distribution.parameter_server_count"),
    ],
)
def test_job_strictness_cases_are_rejected_at_the_field(block, field):
    assert_rejected(job(block + "\n"), field)


def test_tensorflow_process_count_hint_points_to_worker_count():
    assert_rejected(job("distribution: {type: tensorflow, process_count_per_instance: 2}\n"),
                    "distribution.process_count_per_instance", hint="worker_count")


def test_parameter_server_count_may_be_zero():
    assert_accepted(job("distribution: {type: tensorflow, worker_count: 2, parameter_server_count: 0}\n"))


@pytest.mark.parametrize("good", ["2g", "16G", "3100m", "512k", "1073741824b"])
def test_shm_size_with_unit_is_accepted(good):
    assert_accepted(job(f"resources: {{shm_size: {good}}}\n"))


# ----------------------------------------------------------------------------- closed job objects

@pytest.mark.parametrize(
    "block, field",
    [
        ("experimnt_name: typo\n", "experimnt_name"),
        ("resources: {instance_cont: 2}\n", "resources.instance_cont"),
        ("distribution: {type: pytorch, proces_count_per_instance: 2}\n", "distribution.proces_count_per_instance"),
        ("limits: {timout: 5}\n", "limits.timout"),
        ("version: 1\n", "version"),
        ("is_deterministic: true\n", "is_deterministic"),
    ],
)
def test_misspelled_or_foreign_keys_in_a_job_are_errors(block, field):
    assert_rejected(job(block), field)


def test_job_type_must_be_lower_case_command():
    assert_rejected(job("type: Command\n"), "type")


# ----------------------------------------------------------------------------- distribution type

@pytest.mark.parametrize("spelling", ["pytorch", "Pytorch", "PyTorch", "PYTORCH", "mpi", "MPI", "Mpi",
                                      "tensorflow", "TensorFlow", "ray", "Ray"])
def test_distribution_type_is_case_insensitive(spelling):
    body = {"type": spelling}
    if spelling.lower() == "tensorflow":
        body["worker_count"] = 2
    elif spelling.lower() in ("pytorch", "mpi"):
        body["process_count_per_instance"] = 2
    assert_accepted(job(distribution=body))


def test_v2_torch_distributed_fails_with_a_hint_to_use_pytorch():
    assert_rejected(job("distribution: {type: torch.distributed, process_count_per_instance: 4}\n"),
                    "distribution.type", hint="pytorch")


@pytest.mark.parametrize("bad", ["horovod", "pytorchh", "", "deepspeed"])
def test_unknown_distribution_types_are_rejected(bad):
    assert_rejected(job(distribution={"type": bad}), "distribution.type")


def test_distribution_needs_a_type():
    assert_rejected(job("distribution: {process_count_per_instance: 2}\n"), "distribution.type")


def test_ray_options_are_accepted_and_checked():
    assert_accepted(job("distribution: {type: ray, port: 6379, include_dashboard: true, dashboard_port: 8265,"
                        " head_node_additional_args: --x, worker_node_additional_args: --y}\n"))
    assert_rejected(job("distribution: {type: ray, port: 70000}\n"), "distribution.port")


# ----------------------------------------------------------------------------- the rest of a job

def test_every_documented_job_section_is_accepted():
    assert_accepted(job("""
name: run_1
display_name: train
description: a run
experiment_name: exp
tags: {team: ml, empty: null}
properties: {key: value}
code: ./src
environment_variables: {NCCL_DEBUG: INFO, RETRIES: 3, FLAG: true}
outputs:
  model: {type: mlflow_model, mode: upload, name: my_model, version: '2', path: azureml://datastores/ws/paths/m}
  scratch:
distribution: {type: pytorch, process_count_per_instance: 8}
resources:
  instance_count: 2
  instance_type: Standard_ND96isr_H100_v5
  shm_size: 16g
  docker_args: --ipc=host
  properties: {anything: {nested: 1}}
  locations: [eastus]
  max_instance_count: 4
limits: {timeout: 3600}
queue_settings: {job_tier: Spot, priority: HIGH}
services:
  lab: {type: jupyter_lab, nodes: all}
  ssh: {type: ssh, ssh_public_keys: ssh-rsa AAA, port: 22}
  tb: {type: tensor_board, log_dir: outputs/tb, properties: {logDir: outputs/tb}}
identity: {type: managed, client_id: 00000000-0000-0000-0000-000000000000}
"""))


@pytest.mark.parametrize(
    "inputs",
    [
        "{a: 1, b: 0.5, c: text, d: true}",
        "{a: {value: 3}}",
        "{a: {type: uri_folder, path: azureml:data:1, mode: ro_mount}}",
        "{a: {type: URI_FILE, path: https://x/y.csv, mode: DOWNLOAD}}",
        "{a: {path: wasbs://c@a.blob.core.windows.net/, mode: ro_mount}}",
        "{a: {type: mltable, path: ./t, mode: eval_mount}}",
        "{a: {type: custom_model, path: azureml:m:1, mode: direct}}",
    ],
)
def test_job_inputs_in_all_their_forms(inputs):
    assert_accepted(job(f"inputs: {inputs}\n"))


@pytest.mark.parametrize(
    "inputs, field",
    [
        ("{a: {type: integer, default: 3}}", "inputs.a.type"),
        ("{a: {type: uri_folder, path: x, description: d}}", "inputs.a.description"),
        ("{a: {value: 1, path: x}}", "inputs.a.path"),
        ("{a: {type: uri_folder, path: x, mode: eval_mount}}", "inputs.a.mode"),
        ("{a: [1, 2]}", "inputs.a"),
        ("{a: null}", "inputs.a"),
    ],
)
def test_job_input_mistakes(inputs, field):
    assert_rejected(job(f"inputs: {inputs}\n"), field)


@pytest.mark.parametrize(
    "environment",
    [
        "azureml:my-env:1",
        "azureml:my-env@latest",
        "azureml://registries/azureml/environments/sklearn-1.5/labels/latest",
        "{image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04, conda_file: conda.yaml, os_type: Linux}",
        "{build: {path: ./docker, dockerfile_path: Dockerfile}}",
        "{image: x, conda_file: {dependencies: [python=3.11]}}",
    ],
)
def test_environment_reference_or_inline(environment):
    assert_accepted(job(environment=parse(f"e: {environment}")["e"]))


@pytest.mark.parametrize(
    "environment, field",
    [
        ({"imag": "x"}, "environment.imag"),
        ({"image": "x", "build": {"path": "."}}, "environment.build"),
        ({"conda_file": "conda.yaml"}, "environment.build"),
        ("", "environment"),
    ],
)
def test_environment_mistakes(environment, field):
    assert_rejected(job(environment=environment), field)


@pytest.mark.parametrize(
    "block, field",
    [
        ("identity: {type: user_identity, client_id: x}\n", "identity.client_id"),
        ("identity: {client_id: x}\n", "identity.type"),
        ("identity: {type: system}\n", "identity.type"),
        ("services: {s: {type: vs_code, ssh_public_keys: k}}\n", "services.s.ssh_public_keys"),
        ("services: {s: {type: ssh, nodes: 0}}\n", "services.s.nodes"),
        ("services: {s: {type: ssh, foo: 0}}\n", "services.s.foo"),
        ("queue_settings: {job_tier: gold}\n", "queue_settings.job_tier"),
        ("tags: {a: 1}\n", "tags.a"),
        ("outputs: {o: {type: uri_folder, version: 1}}\n", "outputs.o.name"),
        ("outputs: {o: {type: uri_folder, description: d}}\n", "outputs.o.description"),
    ],
)
def test_other_job_section_mistakes(block, field):
    assert_rejected(job(block), field)


@pytest.mark.parametrize("spelling", ["managed", "Managed", "managed_identity", "UserIdentity", "user_identity",
                                      "aml_token", "AMLToken"])
def test_identity_type_spellings_the_sdk_accepts(spelling):
    assert_accepted(job(identity={"type": spelling}))


def test_bindings_are_not_counts_in_a_plain_job():
    assert_rejected(job(resources={"instance_count": "${{inputs.nodes}}"}), "resources.instance_count")


# ----------------------------------------------------------------------------- command component

def test_component_distribution_and_resources_tolerate_unknown_keys_marked_as_warnings(schemas):
    data = parse(COMPONENT + "distribution: {type: mpi, process_count_per_instance: 2, added_property: 7}\n"
                             "resources: {instance_count: 2, added_property: 7}\n")
    assert_accepted(data)  # the reference validator ignores the amldist keyword; amldist warns
    defs = schemas["common.schema.json"]["$defs"]
    assert defs["componentResources"]["x-amldist-unknown-keys"] == "warning"
    branches = [b["then"] for b in defs["componentDistribution"]["allOf"]]
    assert all(b.get("x-amldist-unknown-keys") == "warning" for b in branches)
    assert all("additionalProperties" not in b for b in branches)


@pytest.mark.parametrize(
    "block, field",
    [
        ("distribution: {type: pytorch, process_count_per_instance: -4}\n", "distribution.process_count_per_instance"),
        ("distribution: {type: torch.distributed}\n", "distribution.type"),
        ("resources: {instance_count: 0}\n", "resources.instance_count"),
        ("resources: {shm_size: lots}\n", "resources.shm_size"),
        ("is_deterministic: maybe\n", "is_deterministic"),
        ("queue_settings: {job_tier: gold}\n", "queue_settings.job_tier"),
    ],
)
def test_component_mistakes(block, field):
    assert_rejected(parse(COMPONENT + block), field)


@pytest.mark.parametrize("block, key", [
    ("distribution: {type: tensorflow, process_count_per_instance: 2}\n", "process_count_per_instance"),
    ("distribution: {type: pytorch, worker_count: 2}\n", "worker_count"),
])
def test_another_types_key_in_a_component_is_a_warning_with_the_types_hint(block, key):
    """azure-ai-ml drops it from a component, so the schema accepts it; amldist warns at the key."""
    from amldist.validate import validate_text

    assert_accepted(parse(COMPONENT + block))
    [found] = [d for d in validate_text(COMPONENT + block, "c.yml") if d.field == f"distribution.{key}"]
    assert (found.severity, found.code) == ("warning", "unknown-key")
    assert "drops it" in found.message and "tensorflow" in found.hint


@pytest.mark.parametrize("kind_def", ["distribution", "componentDistribution", "nodeDistribution"])
def test_no_distribution_branch_offers_another_types_keys(schemas, kind_def):
    """An editor offers the keys of the branch whose `if` matched: worker_count is never offered under
    pytorch; the forbidden keys are only named (with their hint) in x-amldist-misplaced-keys."""
    offered = {}
    for branch in schemas["common.schema.json"]["$defs"][kind_def]["allOf"]:
        word = branch["if"]["properties"]["type"]["pattern"].strip("^$").lower().replace("[", "").replace("]", "")
        word = word[::2]  # [pP][yY]... -> pp yy -> p y
        offered[word] = set(branch["then"]["properties"])
    assert "worker_count" not in offered["pytorch"] and "worker_count" not in offered["mpi"]
    assert "process_count_per_instance" not in offered["tensorflow"]
    assert {"worker_count", "parameter_server_count"} <= offered["tensorflow"]
    assert "process_count_per_instance" in offered["pytorch"]


@pytest.mark.parametrize(
    "name, ok", [("train_model", True), ("a1_b2", True), ("Train", False), ("a.b", False), ("1abc", False)]
)
def test_component_names_follow_the_sdk_rule(name, ok):
    data = parse(COMPONENT)
    data["name"] = name
    if ok:
        assert_accepted(data)
    else:
        assert_rejected(data, "name")


def test_component_required_fields():
    for field in ("name", "command", "environment"):
        data = parse(COMPONENT)
        del data[field]
        assert_rejected(data, field)


@pytest.mark.parametrize(
    "inputs",
    [
        "{a: {type: string, enum: [x, y], default: x, optional: true, description: d}}",
        "{a: {type: number, min: 0, max: '5', default: 1.5}}",
        "{a: {type: boolean, default: false}}",
        "{a: {type: string, default: true, enum: ['True', 'False']}}",
        "{a: {type: uri_folder, mode: ro_mount, optional: true}}",
        "{a: {type: path}}",
        "{a: {type: triton_model}}",
    ],
)
def test_component_inputs(inputs):
    assert_accepted(parse(COMPONENT.replace("inputs:\n  epochs: {type: integer, default: 1}\n", "")
                          + f"inputs: {inputs}\n"))


@pytest.mark.parametrize(
    "inputs, field",
    [
        ("{a: {type: Integer}}", "inputs.a.type"),
        ("{a: {type: integer, defualt: 3}}", "inputs.a.defualt"),
        ("{a: {type: uri_folder, default: ./data}}", "inputs.a.default"),
        ("{a: {type: string, enum: [1, 2]}}", "inputs.a.enum.0"),
        ("{a: {description: no type}}", "inputs.a.type"),
        ("{a: 5}", "inputs.a"),
    ],
)
def test_component_input_mistakes(inputs, field):
    base = COMPONENT.replace("inputs:\n  epochs: {type: integer, default: 1}\n", "")
    assert_rejected(parse(base + f"inputs: {inputs}\n"), field)


# ----------------------------------------------------------------------------- pipeline

def pipeline(node_extra: str = "", top_extra: str = "") -> dict:
    return parse(PIPELINE + node_extra + top_extra)


def test_step_overrides_may_bind_counts_to_pipeline_inputs():
    assert_accepted(pipeline("""\
    resources: {instance_count: '${{parent.inputs.nodes}}', shm_size: '${{parent.inputs.shm}}'}
    distribution: {type: pytorch, process_count_per_instance: '${{parent.inputs.gpus}}'}
    limits: {timeout: '${{parent.inputs.timeout}}'}
"""))


def test_a_whole_distribution_may_be_bound():
    assert_accepted(pipeline("    distribution: '${{parent.inputs.dist}}'\n"))


@pytest.mark.parametrize(
    "block, field",
    [
        ("    resources: {instance_count: 0}\n", "jobs.train.resources.instance_count"),
        ("    resources: {instance_count: many}\n", "jobs.train.resources.instance_count"),
        ("    distribution: {type: pytorch, process_count_per_instance: -4}\n",
         "jobs.train.distribution.process_count_per_instance"),
        ("    distribution: {type: tensorflow, process_count_per_instance: 2}\n",
         "jobs.train.distribution.process_count_per_instance"),
        ("    distribution: {type: torch.distributed}\n", "jobs.train.distribution.type"),
        ("    distribution: {type: pytorch, added_property: 1}\n", "jobs.train.distribution.added_property"),
        ("    resourcse: {instance_count: 2}\n", "jobs.train.resourcse"),
        ("    limits: {timeout: -5}\n", "jobs.train.limits.timeout"),
        ("    type: comand\n", "jobs.train.type"),
    ],
)
def test_step_mistakes(block, field):
    data = parse(PIPELINE.replace("    type: command\n", "") + block)
    assert_rejected(data, field)


@pytest.mark.parametrize(
    "block, field",
    [
        ("limits: {timeout: 3}\n", "limits"),
        ("experimnt_name: x\n", "experimnt_name"),
        ("settings: {default_compute: cpu-cluster}\n", "settings.default_compute"),
        ("settings: {continue_on_step_failure: maybe}\n", "settings.continue_on_step_failure"),
        ("component: ./pipeline_component.yml\n", "jobs"),
    ],
)
def test_pipeline_mistakes(block, field):
    assert_rejected(pipeline(top_extra=block), field)


def test_step_names_follow_the_sdk_rule():
    data = pipeline()
    data["jobs"]["Train-Step"] = data["jobs"].pop("train")
    assert_rejected(data, "jobs")
    assert [e.instance for e in errors(data)] == ["Train-Step"]  # the step name, nothing else


def test_pipeline_needs_jobs_or_component():
    data = pipeline()
    del data["jobs"]
    assert_rejected(data, "jobs")


def test_inline_steps_sweeps_and_other_step_types():
    assert_accepted(pipeline("""\
    outputs: {model: '${{parent.outputs.model}}', logs: null, ckpt: {type: uri_folder, mode: upload}}
  prep:
    type: command
    command: echo ${{outputs.out}}
    environment: azureml:env:1
    outputs: {out: {type: uri_folder}}
    compute: azureml:cpu
  inline_component:
    component:
      command: python a.py
      environment: {image: python:3.11}
      inputs: {n: {type: integer}}
  tune:
    type: sweep
    trial: ./train.yml
    inputs: {data: '${{parent.jobs.prep.outputs.out}}'}
    sampling_algorithm: random
    search_space:
      lr: {type: loguniform, min_value: -6, max_value: -1}
      batch: {type: choice, values: [16, 32]}
    objective: {goal: maximize, primary_metric: accuracy}
    early_termination: {type: bandit, slack_factor: 0.1, evaluation_interval: 1}
    limits: {max_total_trials: 8, max_concurrent_trials: 2, timeout: 7200}
  spark_step:
    type: spark
    component: azureml:spark_thing:1
    entry: {file: main.py}
""", top_extra="""\
outputs:
  model: {type: mlflow_model}
settings:
  default_compute: azureml:gpu-cluster
  default_datastore: azureml:workspaceblobstore
  continue_on_step_failure: true
  force_rerun: false
"""))


def test_sweep_step_mistakes():
    data = pipeline("""\
  tune:
    type: sweep
    trial: ./train.yml
    search_space: {lr: {type: uniform, min_value: 0}}
    objective: {goal: maximize}
    limits: {max_concurrent_trials: 0}
""")
    fields = blamed_fields(errors(data))
    for field in ("jobs.tune.search_space.lr.max_value", "jobs.tune.objective.primary_metric",
                  "jobs.tune.limits.max_total_trials", "jobs.tune.limits.max_concurrent_trials"):
        assert field in fields, (field, sorted(fields))


def test_inline_step_needs_a_command():
    data = parse(PIPELINE.replace("    component: ./train.yml\n", "    environment: azureml:e:1\n"))
    assert_rejected(data, "jobs.train.command")
