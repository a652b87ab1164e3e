"""Forms found in real specs (azureml-examples, the azure-ai-ml test configs, legacy component specs)
that azure-ai-ml 1.35.2 accepts and the schemas once refused.

Every fixture here is a small document of our own that reproduces one such form. Each form is
checked three ways: the reference validator (jsonschema) finds no error, amldist's own validator
finds no error (unknown keys the SDK tolerates come back as warnings), and, where the claim is
"the SDK accepts it", azure-ai-ml itself loads and validates the document.

The other direction is covered too: the same places still refuse what is clearly wrong.
"""

from __future__ import annotations

import logging
import os
import textwrap

import pytest

from amldist.validate import validate_text
from amldist.validate.schema_errors import LEGACY_SENT, LEGACY_TOP, SENDS
from tests.validate.schemas.support import blamed_fields, errors, parse

# marshmallow deprecation notices from inside the SDK are not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ENV = "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest"

COMPONENT = f"""\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: tokenize_text
version: 2
inputs:
  corpus: {{type: uri_folder}}
  lowercase: {{type: boolean, default: false, optional: true}}
outputs:
  tokens: {{type: uri_folder}}
command: python tok.py --in ${{{{inputs.corpus}}}} $[[--lower ${{{{inputs.lowercase}}}}]] --out ${{{{outputs.tokens}}}}
environment: {ENV}
"""

PIPELINE = f"""\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
compute: azureml:cpu-cluster
inputs:
  nodes: 2
jobs:
  shout:
    command: echo HELLO
    environment: {ENV}
"""

LEGACY = """\
$schema: http://azureml/sdk-1-5/DistributedComponent.json
name: contoso.nlp.finetune
version: 0.1.0
type: DistributedComponent
inputs:
  epochs: {type: Integer, default: 1}
environment:
  docker:
    image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04
launcher:
  type: mpi
  additional_arguments: python finetune.py --epochs {inputs.epochs}
"""


def diagnostics(text: str):
    return validate_text(textwrap.dedent(text), "spec.yml")


def amldist_errors(text: str):
    return [d for d in diagnostics(text) if d.severity == "error"]


def assert_clean(text: str, kind: str | None = None):
    """No error from the reference validator nor from amldist."""
    ref = errors(parse(text), kind)
    assert not ref, "\n".join(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in ref)
    found = amldist_errors(text)
    assert not found, "\n".join(d.to_text() for d in found)


def assert_warns_unknown(text: str, key: str, suggestion: str | None = None):
    """amldist accepts the document but warns about one unknown key (with a did-you-mean)."""
    diags = diagnostics(text)
    assert not [d for d in diags if d.severity == "error"], [d.to_text() for d in diags]
    warned = [d for d in diags if d.severity == "warning" and d.code == "unknown-key" and repr(key) in d.message]
    assert warned, [d.to_text() for d in diags]
    if suggestion:
        assert suggestion in (warned[0].hint or ""), warned[0].to_text()


def assert_rejected_at(text: str, field: str, kind: str | None = None):
    fields = blamed_fields(errors(parse(text), kind))
    assert field in fields, f"expected an error at {field}, got {sorted(fields)}"
    assert any(d.field == field or field in d.message for d in amldist_errors(text)), \
        [d.to_text() for d in diagnostics(text)]


# -- azure-ai-ml itself, for the "the SDK accepts it" claims --------------------------------------

def sdk_accepts(tmp_path, text: str, loader: str) -> bool:
    ml = pytest.importorskip("azure.ai.ml", reason="azure-ai-ml is not installed (pip install '.[azure]')")
    path = tmp_path / "spec.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    logging.disable(logging.WARNING)  # "experimental class" notices
    try:
        entity = getattr(ml, loader)(path)
        return entity._validate().passed
    except Exception:  # the SDK raises several error types for a refused document
        return False
    finally:
        logging.disable(logging.NOTSET)


def sdk_accepts_legacy(tmp_path, text: str) -> bool:
    old = os.environ.get("AZURE_ML_INTERNAL_COMPONENTS_ENABLED")
    os.environ["AZURE_ML_INTERNAL_COMPONENTS_ENABLED"] = "true"
    try:
        return sdk_accepts(tmp_path, text, "load_component")
    finally:
        if old is None:
            del os.environ["AZURE_ML_INTERNAL_COMPONENTS_ENABLED"]
        else:
            os.environ["AZURE_ML_INTERNAL_COMPONENTS_ENABLED"] = old


def sdk_spec(tmp_path, text: str, loader: str) -> dict:
    """The REST object azure-ai-ml would send for the document, as a dict (no network)."""
    ml = pytest.importorskip("azure.ai.ml", reason="azure-ai-ml is not installed (pip install '.[azure]')")
    path = tmp_path / "spec.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    logging.disable(logging.WARNING)
    try:
        return getattr(ml, loader)(path)._to_rest_object().as_dict()["properties"]
    finally:
        logging.disable(logging.NOTSET)


# -- what the SDK does with the unknown keys amldist only warns about -----------------------------

def test_the_unknown_key_notes_say_what_azure_ai_ml_sends(tmp_path, monkeypatch):
    # amldist.validate.report's DROPS / SENDS / LEGACY_TOP notes, and the README's account of them
    component = COMPONENT + ("compute: azureml:gpu-cluster\n"
                             "distribution: {type: mpi, process_count_per_instance: 2, process_count: 2}\n"
                             "resources: {instance_count: 1, gpus: 2}\n")
    sent = sdk_spec(tmp_path, component, "load_component")["componentSpec"]
    assert sent["distribution"] == {"type": "mpi", "process_count_per_instance": 2}  # dropped
    assert sent["resources"] == {"instance_count": 1}  # dropped
    assert sent["compute"] == "azureml:gpu-cluster"  # a component's top level: sent as written
    settings = sdk_spec(tmp_path, PIPELINE + "settings: {default_compute: azureml:cpu-cluster, priority_hint: 3}\n",
                        "load_job")["settings"]
    assert settings["priority_hint"] == 3  # a pipeline's settings: sent as written
    monkeypatch.setenv("AZURE_ML_INTERNAL_COMPONENTS_ENABLED", "true")
    legacy = LEGACY + "owner_team: nlp\nsuccessful_return_code: Zero\nenvironment_variables: {A: b}\n"
    sent = sdk_spec(tmp_path, legacy, "load_component")["componentSpec"]
    assert sent["launcher"]["type"] == "mpi" and "owner_team" not in sent  # a legacy top-level key: left out ...
    assert sent["successful_return_code"] == "Zero" and sent["environment_variables"] == {"A": "b"}  # ... unless
    assert {"successful_return_code", "environment_variables"} <= LEGACY_SENT  # InternalComponent has it
    notes = {d.field: d.message for d in diagnostics(legacy) if d.code == "unknown-key"}
    assert notes == {"owner_team": f"unknown key 'owner_team' in the document ({LEGACY_TOP})",
                     "successful_return_code": f"unknown key 'successful_return_code' in the document ({SENDS})",
                     "environment_variables": f"unknown key 'environment_variables' in the document ({SENDS})"}


# -- command component top level ------------------------------------------------------------------

REGISTRY_COMPONENT = COMPONENT + """\
intellectual_property:
  publisher: contoso
  protection_level: all
queue_settings:
  job_tier: standard
"""


def test_registry_publishing_fields_of_a_component_are_known(tmp_path):
    # intellectual_property and queue_settings are fields of azure-ai-ml's command component.
    assert_clean(REGISTRY_COMPONENT)
    assert not [d for d in diagnostics(REGISTRY_COMPONENT) if d.code == "unknown-key"]
    assert sdk_accepts(tmp_path, REGISTRY_COMPONENT, "load_component")


def test_a_bad_protection_level_is_still_refused():
    assert_rejected_at(COMPONENT + "intellectual_property: {protection_level: secret}\n",
                       "intellectual_property.protection_level")


@pytest.mark.parametrize("block, key, suggestion", [
    ("nmae: tokenize_text_v2\n", "nmae", "name"),          # the SDK's own tests load such a file
    ("compute: azureml:gpu-cluster\n", "compute", None),    # a job key left in a component (azureml-examples)
    ("distribtion: {type: mpi}\n", "distribtion", "distribution"),
])
def test_unknown_top_level_keys_of_a_component_are_warnings(tmp_path, block, key, suggestion):
    # azure-ai-ml loads a component file with marshmallow's INCLUDE: the key is kept, nothing fails.
    text = COMPONENT + block
    assert_warns_unknown(text, key, suggestion)
    assert sdk_accepts(tmp_path, text, "load_component")


def test_an_inline_component_in_a_step_tolerates_unknown_keys_too(tmp_path):
    text = PIPELINE + f"""\
  tokenize:
    type: command
    component:
      command: echo tokenizing
      environment: {ENV}
      owner_team: nlp
"""
    assert_warns_unknown(text, "owner_team")
    assert sdk_accepts(tmp_path, text, "load_job")


def test_a_component_missing_what_it_needs_is_still_an_error():
    text = COMPONENT.replace(f"environment: {ENV}\n", f"enviroment: {ENV}\n")
    assert_rejected_at(text, "environment")


# -- booleans written as words --------------------------------------------------------------------

@pytest.mark.parametrize("word", ["'false'", "'True'", "'yes'", "'0'"])
def test_quoted_booleans_the_sdk_reads(tmp_path, word):
    text = COMPONENT.replace("version: 2\n", f"version: 2\nis_deterministic: {word}\n")
    assert_clean(text)
    assert sdk_accepts(tmp_path, text, "load_component")


def test_a_quoted_optional_flag_on_a_component_input():
    assert_clean(COMPONENT.replace("optional: true", "optional: 'true'"))


@pytest.mark.parametrize("text, field", [
    (COMPONENT.replace("version: 2\n", "version: 2\nis_deterministic: sometimes\n"), "is_deterministic"),
    (COMPONENT.replace("optional: true", "optional: 2"), "inputs.lowercase.optional"),
    (PIPELINE + "settings: {force_rerun: perhaps}\n", "settings.force_rerun"),
])
def test_words_that_are_not_booleans_are_refused(text, field):
    assert_rejected_at(text, field)


# -- pipeline settings ----------------------------------------------------------------------------

def test_pipeline_settings_pass_unknown_keys_with_a_warning(tmp_path):
    # azure-ai-ml's settings schema INCLUDEs unknown keys and sends them to the service.
    text = PIPELINE + "settings:\n  default_compute: azureml:cpu-cluster\n  force_rerun: 'true'\n  priority_hint: 3\n"
    assert_warns_unknown(text, "priority_hint")
    assert sdk_accepts(tmp_path, text, "load_job")


def test_a_misspelled_setting_gets_a_did_you_mean():
    assert_warns_unknown(PIPELINE + "settings: {continue_on_step_faillure: true}\n",
                         "continue_on_step_faillure", "continue_on_step_failure")


# -- inline command steps -------------------------------------------------------------------------

def test_an_inline_step_without_an_environment_is_left_to_the_validator(tmp_path):
    # azure-ai-ml loads such a pipeline (its own tests load helloworld_pipeline_job_with_identity.yml and
    # turn it into a REST body) and only _validate() refuses it. What the SDK loads is never a schema
    # error; a warning for it belongs to the validator's rules.
    text = PIPELINE.replace(f"    environment: {ENV}\n", "")
    ml = pytest.importorskip("azure.ai.ml", reason="azure-ai-ml is not installed (pip install '.[azure]')")
    path = tmp_path / "spec.yml"
    path.write_text(text, encoding="utf-8")
    assert ml.load_job(path).jobs["shout"].command == "echo HELLO"
    assert not sdk_accepts(tmp_path, text, "load_job")  # _validate(): environment missing
    assert_clean(text)


@pytest.mark.parametrize("block, field", [
    ("    resources: {instance_count: '${{parent.inputs.nodes}}'}\n", "jobs.shout.resources.instance_count"),
    ("    distribution: {type: pytorch, process_count_per_instance: '${{parent.inputs.nodes}}'}\n",
     "jobs.shout.distribution.process_count_per_instance"),
    ("    limits: {timeout: '${{parent.inputs.nodes}}'}\n", "jobs.shout.limits.timeout"),
    ("    distribution: '${{parent.inputs.nodes}}'\n", "jobs.shout.distribution"),
])
def test_an_inline_step_cannot_bind_counts(tmp_path, block, field):
    # The SDK loads an inline step as a plain command job: "Not a valid integer".
    text = PIPELINE + block
    assert not sdk_accepts(tmp_path, text, "load_job")
    assert_rejected_at(text, field)


def test_a_component_step_may_still_bind_counts(tmp_path):
    (tmp_path / "tok.yml").write_text(COMPONENT, encoding="utf-8")
    text = PIPELINE + """\
  tokenize:
    type: command
    component: file:./tok.yml
    inputs: {corpus: {type: uri_folder, path: azureml:corpus:1}}
    resources: {instance_count: '${{parent.inputs.nodes}}'}
    distribution: {type: pytorch, process_count_per_instance: '${{parent.inputs.nodes}}'}
"""
    assert_clean(text)
    assert sdk_accepts(tmp_path, text, "load_job")


# -- environment variables ------------------------------------------------------------------------

def test_an_environment_variable_without_a_value(tmp_path):
    text = f"""\
command: env
environment: {ENV}
compute: azureml:cpu-cluster
environment_variables:
  NCCL_DEBUG: INFO
  UNSET_ME:
"""
    assert_clean(text)
    assert sdk_accepts(tmp_path, text, "load_job")


def test_an_environment_variable_holding_a_mapping_is_refused():
    text = f"command: env\nenvironment: {ENV}\nenvironment_variables:\n  OPTS: {{a: 1}}\n"
    assert_rejected_at(text, "environment_variables.OPTS")


# -- legacy DistributedComponent ------------------------------------------------------------------

def test_legacy_spec_tolerates_unknown_top_level_keys(tmp_path):
    # The internal-component loader INCLUDEs unknown keys (old specs carry e.g. successful_return_code).
    text = LEGACY + "successful_return_code: Zero\n"
    assert_warns_unknown(text, "successful_return_code")
    assert sdk_accepts_legacy(tmp_path, text)


def test_legacy_quoted_booleans(tmp_path):
    text = LEGACY.replace("default: 1}", "default: 1, optional: 'True'}") + "is_deterministic: 'false'\n"
    assert_clean(text, "distributed_component")
    assert sdk_accepts_legacy(tmp_path, text)


def test_legacy_spec_with_a_v2_distribution_is_still_an_error():
    text = LEGACY + "distribution: {type: mpi}\n"
    assert_rejected_at(text, "distribution", "distributed_component")
    assert any("launcher" in (d.hint or "") for d in amldist_errors(text))


# -- real forms that were accepted all along (guards against regressions) -------------------------

@pytest.mark.parametrize("block", [
    # services with nodes: all (cli/jobs/basics/hello-interactive)
    "services:\n  lab: {type: jupyter_lab, nodes: all}\n  board: {type: tensor_board, log_dir: outputs/tb}\n",
    # a resources.properties blob for a virtual cluster, an anchor inside it
    "resources:\n  instance_count: 2\n  properties:\n    singularity: &s {imageVersion: '', interactive: false}\n",
    # outputs registered as named assets, one of them with a ${{name}} path
    "outputs:\n  model: {type: mlflow_model, name: tok, version: '3'}\n"
    "  logs: {type: uri_folder, path: 'azureml://datastores/ws/paths/${{name}}/logs', mode: rw_mount}\n",
    # tags and properties keys with no value
    "tags: {reviewed: }\nproperties: {azureml.pipelines.dynamic: 'true'}\n",
])
def test_real_job_forms_accepted_all_along(tmp_path, block):
    text = f"command: echo hi\nenvironment: {ENV}\ncompute: azureml:cpu-cluster\n" + block
    assert_clean(text)
    assert sdk_accepts(tmp_path, text, "load_job")
