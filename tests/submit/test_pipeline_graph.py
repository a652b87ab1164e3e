"""The pipeline graph (amldist.submit.pipeline): bindings, order, nesting, refusals; pure, nothing runs."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.submit.pipeline import OutputRef, resolve
from amldist.submit.prepare import prepare
from tests.submit.pipeline_project import make_pipeline_project


def test_bindings_become_typed_values_and_steps_follow_what_they_read(tmp_path):
    project = make_pipeline_project(tmp_path)
    graph = prepare(str(project / "pipeline.yml"), inputs=["scale=3"]).graph
    assert graph.order == ["prep", "train", "evaluate"]
    train = graph.node("train")
    assert train.inputs == {"data": OutputRef("prep", "data"), "scale": 3}
    assert train.needs == ("prep",)
    assert graph.outputs == {"final_model": OutputRef("train", "model")}
    job = train.to_job({OutputRef("prep", "data"): ("/runs/prep/outputs/data", "uri_folder")}, name="train")
    assert job.inputs["data"]["path"] == "/runs/prep/outputs/data"
    assert job.distribution.kind == "pytorch" and job.resources.instance_count == 2


def test_set_reaches_a_step_and_overrides_its_component(tmp_path):
    project = make_pipeline_project(tmp_path)
    graph = prepare(str(project / "pipeline.yml"), sets=["jobs.train.resources.instance_count=1"]).graph
    job = graph.node("train").to_job({OutputRef("prep", "data"): ("/d", "uri_folder")})
    assert job.resources.instance_count == 1
    assert job.distribution.process_count_per_instance == 2  # the component's, kept


def test_order_is_topological_whatever_the_file_order(tmp_path):
    data = {"jobs": {
        "c": {"command": "cat ${{inputs.x}}", "inputs": {"x": "${{parent.jobs.b.outputs.o}}"}},
        "b": {"command": "echo ${{outputs.o}}", "outputs": {"o": {"type": "uri_folder"}},
              "inputs": {"x": "${{parent.jobs.a.outputs.o}}"}},
        "a": {"command": "echo ${{outputs.o}}", "outputs": {"o": {"type": "uri_folder"}}},
        "d": {"command": "echo independent"},
    }}
    assert resolve(data, str(tmp_path), "p.yml").order == ["a", "d", "b", "c"]


def test_a_cycle_is_one_error_naming_the_steps(tmp_path):
    data = {"jobs": {
        "a": {"command": "x", "inputs": {"i": "${{parent.jobs.b.outputs.o}}"}, "outputs": {"o": {}}},
        "b": {"command": "y", "inputs": {"i": "${{parent.jobs.a.outputs.o}}"}, "outputs": {"o": {}}},
    }}
    with pytest.raises(UserError, match="cycle: (a -> b -> a|b -> a -> b)"):
        resolve(data, str(tmp_path), "p.yml")


def test_a_nested_pipeline_component_is_flattened_into_its_steps(tmp_path):
    (tmp_path / "sub.yml").write_text(
        "type: pipeline\ninputs:\n  raw: {type: uri_folder}\noutputs:\n  cooked: {type: uri_folder}\njobs:\n"
        "  cook:\n    command: cp -r ${{inputs.raw}} ${{outputs.out}}\n"
        "    inputs: {raw: '${{parent.inputs.raw}}'}\n"
        "    outputs: {out: '${{parent.outputs.cooked}}'}\n")
    data = {"jobs": {
        "make": {"command": "echo ${{outputs.o}}", "outputs": {"o": {"type": "uri_folder"}}},
        "inner": {"type": "pipeline", "component": "./sub.yml", "inputs": {"raw": "${{parent.jobs.make.outputs.o}}"}},
        "use": {"command": "ls ${{inputs.i}}", "inputs": {"i": "${{parent.jobs.inner.outputs.cooked}}"}},
    }}
    graph = resolve(data, str(tmp_path), "p.yml")
    assert graph.order == ["make", "inner/cook", "use"]
    assert graph.node("inner/cook").inputs == {"raw": OutputRef("make", "o")}
    assert graph.node("use").inputs == {"i": OutputRef("inner/cook", "out")}


def test_steps_that_cannot_run_locally_are_kept_with_the_reason(tmp_path):
    data = {"jobs": {"s": {"type": "spark", "entry": {"file": "x.py"}},
                     "r": {"type": "command", "component": "azureml:train:1"}}}
    graph = resolve(data, str(tmp_path), "p.yml")
    assert "spark step" in graph.node("s").local_problem
    assert "registered in a workspace" in graph.node("r").local_problem


def test_count_options_are_refused_for_a_pipeline(tmp_path):
    project = make_pipeline_project(tmp_path)
    with pytest.raises(UserError, match="is a pipeline") as caught:
        prepare(str(project / "pipeline.yml"), instance_count=1)
    assert "--set jobs.<step>.resources.instance_count" in caught.value.hint
