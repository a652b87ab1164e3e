"""Real public specs (tests/fixtures/real_specs/, see its README): amldist's Azure body against azure-ai-ml's own.

For every command job and pipeline job of the corpus that azure-ai-ml 1.35.2 loads, the body
``amldist submit FILE --dry-run`` prints must equal the body azure-ai-ml builds for the same file
(``load_job(FILE)`` -> ``to_rest_job_object``), after these named normalisations and no others:

- ``generated name``: ``displayName`` when the spec sets none (each side generates a job name);
- ``code asset``: ``codeId`` of a job with local code (amldist names its snapshot, which adds
  ``amldist/runtime/``; azure-ai-ml names the folder; both upload at submit);
- ``bundled step source``: ``_source`` of a pipeline step whose component amldist wrote inline to
  give it the runtime (``YAML.JOB`` for ``YAML.COMPONENT``);
- ``masking``: azure-ai-ml's body is masked with amldist's one masking rule, as the dry run prints;
- ``size facts``: the ``AMLDIST_VM_*`` / ``AMLDIST_EXPECTED_BUSBW_GBS`` variables amldist adds to a distributed
  job on a catalog VM size (:mod:`amldist.rules.fabric`, for the runtime's fabric check), unless the spec sets them.

Command components have no job body: each must get one from ``submit --dry-run`` (run as a job),
and amldist's component (loaded, typed, written back) must give azure-ai-ml the same component
body as the file itself. The local coverage (``submit --local --dry-run`` with inputs supplied) is
counted by kind; a pipeline step may be refused only for the reasons of issue 15's point 3.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from amldist.errors import UserError

SIZE_FACTS = {"AMLDIST_VM_SIZE", "AMLDIST_VM_INFINIBAND", "AMLDIST_EXPECTED_BUSBW_GBS"}
CORPUS = Path(__file__).parent / "fixtures" / "real_specs"
SPECS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yml", ".yaml"))
LOCAL_REFUSALS = re.compile(r"is registered in a workspace|runs only on Azure ML|is the Azure ML data asset")
# densenet's pipeline passes center_crop: 224 to a component input with enum ['True', 'False']: the component's
# own rule refuses the value (azure-ai-ml does not check enums when it loads)
VALUE_REFUSED = re.compile(r"step init_transformation: input 'center_crop' must be one of True, False")


@pytest.fixture(autouse=True)
def quiet_azure_and_no_workspace(monkeypatch, tmp_path):
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # the experiment name comes from the current folder, on both sides
    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)


def kind_of(path: Path):
    from amldist.model import read_document
    from amldist.model.kinds import recognise

    try:
        return recognise(read_document(path)[1].data)
    except UserError:
        return None


def azure_body(path: Path) -> dict:
    from azure.ai.ml import load_job
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object

    from amldist.azure_sdk.entities import _to_json
    from amldist.rules.secrets import mask_tree

    return mask_tree(_to_json(to_rest_job_object(load_job(path))))


def amldist_shown(path: Path, inputs=()) -> dict:
    """What ``amldist submit PATH --dry-run [--input ...]`` prints, as JSON."""
    from amldist.backends import get_backend
    from amldist.submit.prepare import prepare
    from amldist.submit.prepared import SubmitOptions

    backend = get_backend("azureml")
    prepared = prepare(str(path), inputs=list(inputs))
    return json.loads(backend.describe(backend.plan(prepared, SubmitOptions(dry_run=True))))


def normalised(body: dict, spec: dict, bundled: set) -> dict:
    """The body after the named normalisations (see the module docstring)."""
    props = dict(body["properties"])
    if not spec.get("display_name"):
        props["displayName"] = "<generated name>"
    if "codeId" in props:
        props["codeId"] = "<code asset>"
    own = set((spec.get("environment_variables") or {}) if isinstance(spec, dict) else ())
    if isinstance(props.get("environmentVariables"), dict):
        props["environmentVariables"] = {k: v for k, v in props["environmentVariables"].items()
                                         if k in own or k not in SIZE_FACTS}
    jobs = {name: dict(step) for name, step in (props.get("jobs") or {}).items()}
    for name in bundled & set(jobs):
        jobs[name]["_source"] = "<bundled step source>"
    if jobs:
        props["jobs"] = jobs
    return props


def test_the_corpus_is_real_and_modest():
    readme = (CORPUS / "README.md").read_text()
    assert "Azure/azureml-examples" in readme and "MIT" in readme and re.search(r"\b[0-9a-f]{40}\b", readme)
    assert sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file()) < 2_000_000
    kinds = Counter(kind_of(p) for p in SPECS)
    assert kinds["pipeline_job"] >= 46 and kinds["command_job"] >= 30 and kinds["command_component"] >= 51


def _jobs():
    return [p for p in SPECS if kind_of(p) in ("command_job", "pipeline_job")]


SHARDS = 4  # the corpus in 4 parts: xdist spreads them over its workers (one part is a quarter of a minute)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_job_azure_ai_ml_accepts_gets_the_same_body_from_amldist(shard):
    from amldist.model import read_document

    compared, differing = 0, []
    for path in _jobs()[shard::SHARDS]:
        try:
            theirs = azure_body(path)
        except Exception:  # noqa: BLE001 - azure-ai-ml refuses the file: not in the comparison
            continue
        shown = amldist_shown(path)
        assert shown["request"]["job"], path  # the dry run names the job it will create
        spec = read_document(path)[1].data
        bundled = set(shown.get("steps_with_runtime") or ())
        ours = normalised(shown["request"]["body"], spec, bundled)
        if ours != normalised(theirs, spec, bundled):
            differing.append(str(path.relative_to(CORPUS)))
        compared += 1
    assert compared >= 76 // SHARDS and differing == []  # 76 of the corpus's jobs, every fourth in each part


def test_every_component_keeps_its_meaning_for_azure_ai_ml():
    from azure.ai.ml import load_component

    from amldist.azure_sdk.entities import to_azure
    from amldist.model import load, read_document

    compared = 0
    for path in (p for p in SPECS if kind_of(p) == "command_component"):
        try:
            theirs = load_component(path)._to_rest_object().as_dict()
        except Exception:  # noqa: BLE001 - azure-ai-ml refuses it on its own (r-iris-example: a name it refuses)
            continue
        ours = to_azure(load(path), base_dir=path.parent, add_runtime=False)._to_rest_object().as_dict()
        assert ours == theirs, path
        compared += 1
    assert compared >= 50


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(CORPUS)))
                                  for p in SPECS if kind_of(p) == "command_component"])
def test_every_component_gets_a_job_body_from_the_dry_run(path, tmp_path):
    from azure.ai.ml import load_component

    from amldist.model import read_document
    from amldist.submit.prepare import SpecInvalid

    given = _supplied_inputs(path, read_document(path)[1].data, tmp_path)
    try:
        load_component(path)
    except Exception:  # noqa: BLE001 - azure-ai-ml refuses it on its own: so does amldist
        with pytest.raises(SpecInvalid):
            amldist_shown(path, given)
        return
    shown = amldist_shown(path, given)  # run as a job, its required inputs given
    # a control output (the spec says is_control): the one step of a pipeline job (backends/azureml/component_pipeline)
    outputs = read_document(path)[1].data.get("outputs") or {}
    sent_as = "Pipeline" if any(isinstance(o, dict) and o.get("is_control") for o in outputs.values()) else "Command"
    assert shown["request"]["body"]["properties"]["jobType"] == sent_as


def test_the_densenet_pipeline_keeps_its_components_environment_beside_a_shadowing_conda_file(tmp_path):
    import yaml
    from azure.ai.ml import load_job

    from amldist.backends.azureml.pipeline import bundle_steps
    from amldist.model import load
    from amldist.rules.pipeline_graph import pipeline_steps

    source = CORPUS / "azureml-examples/cli/jobs/pipelines-with-components/image_classification_with_densenet"
    project = Path(shutil.copytree(source, tmp_path / "densenet"))
    (project / "conda.yaml").write_text("name: shadow\ndependencies: [python=3.6, shadowing-package]\n")
    pipeline = project / "pipeline.yml"
    data = load(pipeline).to_dict()
    sent, steps, _ = bundle_steps(data, str(project), pipeline_steps(data, str(project), str(pipeline)))
    assert [s.name for s in steps] == ["train"]
    component = sent["jobs"]["train"]["component"]
    assert component["environment"]["conda_file"] == str(project / "image_cnn_train" / "conda.yaml")
    # what azure-ai-ml builds from the pipeline amldist sends: the component's own environment
    from amldist.azure_sdk.entities import to_azure
    from amldist.model import from_data

    entity = to_azure(from_data(sent), base_dir=project, add_runtime=False)
    own = yaml.safe_load((project / "image_cnn_train" / "conda.yaml").read_text())
    assert entity.jobs["train"].component.environment.conda_file == own
    assert load_job(pipeline).jobs["train"].component.environment.conda_file == own  # as az ml itself reads it


def _supplied_inputs(path: Path, spec: dict, folder: Path) -> list[str]:
    """``--input`` values for the inputs a local run cannot take as written (remote data, or no value)."""
    from amldist.rules import paths

    given = []
    for name, port in (spec.get("inputs") or {}).items():
        port = port if isinstance(port, dict) else {"value": port}
        where = port.get("path", port.get("default"))
        kind = str(port.get("type", ""))
        local = isinstance(where, str) and paths.is_local(where) and (path.parent / where).exists()
        if kind.startswith("uri_") or kind in ("mltable", "custom_model", "mlflow_model", "path"):
            if not local:
                target = folder / name
                target.mkdir(exist_ok=True) if kind != "uri_file" else target.write_text("x\n")
                given.append(f"{name}={target}")
        elif port.get("value", port.get("default")) is None and kind:
            value = port["enum"][0] if port.get("enum") else (
                "1" if kind in ("integer", "number") else "true" if kind == "boolean" else "x")
            given.append(f"{name}={value}")
    return given


def _supplied_step_paths(path: Path, spec: dict, folder: Path) -> list[str]:
    """``--set jobs.S.inputs.I.path=...`` for step inputs written as remote or missing data."""
    from amldist.rules import paths

    sets = []
    for step, node in (spec.get("jobs") or {}).items():
        for name, port in ((node.get("inputs") if isinstance(node, dict) else None) or {}).items():
            where = port.get("path") if isinstance(port, dict) else None
            if not isinstance(where, str) or "${{" in where:
                continue
            if not paths.is_local(where) or not (path.parent / where).exists():
                target = folder / f"{step}-{name}"
                target.mkdir(exist_ok=True) if port.get("type") != "uri_file" else target.write_text("x\n")
                sets.append(f"jobs.{step}.inputs.{name}.path={target}")
    return sets


def local_outcome(path: Path, folder: Path, inputs_of: Path | None = None) -> str:
    from amldist.backends import get_backend
    from amldist.model import read_document
    from amldist.submit.prepare import prepare
    from amldist.submit.prepared import SubmitOptions

    spec = read_document(path)[1].data
    given = _supplied_inputs(inputs_of or path, read_document(inputs_of or path)[1].data, folder)
    try:
        prepared = prepare(str(path), inputs=given,
                           sets=_supplied_step_paths(path, spec, folder))
        backend = get_backend("local")
        backend.plan(prepared, SubmitOptions(dry_run=True, run_root=str(folder / "runs")))
    except UserError as exc:
        return f"refused: {exc.message}"
    return "planned"


def test_local_runs_refuse_pipeline_steps_only_for_what_cannot_run_here(tmp_path):
    outcomes: dict = {}
    for index, path in enumerate(p for p in SPECS if kind_of(p) == "pipeline_job"):
        folder = tmp_path / str(index)
        folder.mkdir()
        outcomes[str(path.relative_to(CORPUS))] = local_outcome(path, folder)
    other = {p: o for p, o in outcomes.items()
             if o != "planned" and not LOCAL_REFUSALS.search(o) and not VALUE_REFUSED.search(o)}
    assert other == {}
    assert sum(o == "planned" for o in outcomes.values()) >= 32


def test_a_pipeline_job_from_each_real_pipeline_component_gets_azure_ai_mls_body(tmp_path):
    """``type: pipeline`` + ``component: <real pipeline component>`` (no ``jobs:``): the same body both ways,
    and locally one line per registered step (azureml-assets' components run registered ones)."""
    components = [p for p in SPECS if kind_of(p) == "pipeline_component"]
    for index, path in enumerate(components):
        job = tmp_path / f"job{index}.yml"
        job.write_text(f"type: pipeline\nname: from_component_{index}\ncomponent: {path}\n")
        shown = amldist_shown(job)
        assert shown["request"]["job"] == f"from_component_{index}"
        assert normalised(shown["request"]["body"], {}, set()) == normalised(azure_body(job), {}, set()), path
        folder = tmp_path / f"inputs{index}"
        folder.mkdir()
        outcome = local_outcome(job, folder, inputs_of=path)  # the component's inputs given values
        assert outcome == "planned" or LOCAL_REFUSALS.search(outcome), outcome
    assert len(components) >= 5


def test_a_distributed_job_on_a_catalog_size_differs_only_by_the_named_size_facts(tmp_path):
    """The fifth normalisation is the only difference, and it is there: written so a failure shows which."""
    from amldist.model import read_document

    job = tmp_path / "job.yml"
    job.write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
        "type: command\ncommand: python -c 'print(1)'\n"
        "environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest\ncompute: azureml:gpu-cluster\n"
        "distribution: {type: pytorch, process_count_per_instance: 8}\n"
        "resources: {instance_count: 2, instance_type: Standard_ND96isr_H100_v5}\n"
        "environment_variables: {NCCL_DEBUG: INFO}\n")
    shown = amldist_shown(job)
    ours = shown["request"]["body"]["properties"]["environmentVariables"]
    assert set(ours) == SIZE_FACTS | {"NCCL_DEBUG"} and ours["AMLDIST_VM_INFINIBAND"] == "1"
    spec = read_document(job)[1].data
    assert normalised(shown["request"]["body"], spec, set()) == normalised(azure_body(job), spec, set())
