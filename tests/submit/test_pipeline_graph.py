"""The pipeline graph (amldist.submit.pipeline): bindings, order, nesting, refusals; pure, nothing runs."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.rules.pipeline_graph import PipelineTooLarge
from amldist.submit.prepare import SpecInvalid
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


# ---- nesting: bounds, names, top-level component (issue 15 point 1, issue 17 points 2 and 4) ---------

def fan_out(folder, levels: int = 7, width: int = 4) -> str:
    """Pipeline components each using the next one ``width`` times: about 1.6 KB naming width**levels steps."""
    for level in range(levels):
        steps = "".join(f"  s{i}:\n    type: pipeline\n    component: ./l{level + 1}.yml\n" for i in range(width))
        (folder / f"l{level}.yml").write_text(f"type: pipeline\nname: l{level}\nversion: '1'\njobs:\n{steps}")
    (folder / f"l{levels}.yml").write_text("type: pipeline\nname: leaf\nversion: '1'\njobs:\n  run:\n"
                                           f"    command: echo hi\n    environment: {ENV}\n")
    (folder / "pipeline.yml").write_text("type: pipeline\njobs:\n  top:\n    type: pipeline\n"
                                         "    component: ./l0.yml\n")
    return str(folder / "pipeline.yml")


ENV = "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest"


def test_a_fan_out_of_nested_components_is_one_error_line_within_seconds(tmp_path):
    import time

    from amldist.validate import validate_file

    pipeline = fan_out(tmp_path)
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) < 2000
    start = time.monotonic()
    with pytest.raises(SpecInvalid) as refused:
        prepare(pipeline)
    (error,) = refused.value.diagnostics
    assert error.code == "too-many-steps" and "more than 1000 steps" in error.message and "\n" not in error.message
    assert [d.code for d in validate_file(pipeline) if d.severity == "error"] == ["too-many-steps"]
    with pytest.raises(PipelineTooLarge):  # the graph itself never expands past the bound
        resolve({"jobs": {"top": {"type": "pipeline", "component": "./l0.yml"}}}, str(tmp_path), pipeline)
    assert time.monotonic() - start < 10


def test_a_component_that_includes_itself_is_refused_by_name(tmp_path):
    from amldist.validate import validate_file

    (tmp_path / "me.yml").write_text("type: pipeline\nname: me\nversion: '1'\njobs:\n  again:\n"
                                     "    type: pipeline\n    component: ./me.yml\n")
    (tmp_path / "pipeline.yml").write_text("type: pipeline\njobs:\n  a:\n    type: pipeline\n    component: ./me.yml\n")
    assert "nested-too-deep" in {d.code for d in validate_file(tmp_path / "pipeline.yml")}
    with pytest.raises(SpecInvalid) as refused:
        prepare(str(tmp_path / "pipeline.yml"))
    assert "nested more than 10 deep" in refused.value.diagnostics[0].message


def test_a_nested_components_step_names_are_validated_at_validate_and_at_submit(tmp_path):
    from amldist.submit.prepare import SpecInvalid
    from amldist.validate import validate_file

    (tmp_path / "sub.yml").write_text("type: pipeline\nname: sub\nversion: '1'\njobs:\n  ../../x:\n"
                                      f"    command: echo escaped\n    environment: {ENV}\n")
    (tmp_path / "pipeline.yml").write_text("type: pipeline\njobs:\n  a:\n    type: pipeline\n    component: ./sub.yml\n")
    found = [(d.file.endswith("sub.yml"), d.line) for d in validate_file(tmp_path / "pipeline.yml")
             if d.severity == "error"]
    assert found == [(True, 5)]  # at the component's own file and line
    with pytest.raises(SpecInvalid) as refused:
        prepare(str(tmp_path / "pipeline.yml"))
    assert [d.file.endswith("sub.yml") for d in refused.value.diagnostics if d.severity == "error"] == [True]


def test_a_pipeline_job_from_a_top_level_component_runs_its_steps(tmp_path):
    (tmp_path / "pc.yml").write_text(
        "type: pipeline\nname: pc\nversion: '1'\ninputs:\n  word: {type: string, default: hello}\n"
        "  n: {type: integer, default: 1}\noutputs:\n  out: {type: uri_folder}\njobs:\n"
        f"  say:\n    command: echo ${{{{inputs.w}}}} > ${{{{outputs.o}}}}/x\n    environment: {ENV}\n"
        "    inputs: {w: '${{parent.inputs.word}}'}\n    outputs: {o: '${{parent.outputs.out}}'}\n")
    (tmp_path / "job.yml").write_text("type: pipeline\ncomponent: ./pc.yml\ninputs:\n  word: bye\n")
    graph = prepare(str(tmp_path / "job.yml")).graph
    assert graph.order == ["say"] and graph.node("say").inputs == {"w": "bye"}
    assert graph.outputs == {"out": OutputRef("say", "o")} and graph.local_problem is None


def test_steps_only_azure_runs_are_refused_locally_one_line_each_with_what_to_pass(tmp_path):
    from amldist.backends.local.pipeline_run import refuse_what_cannot_run_here

    (tmp_path / "pipeline.yml").write_text(
        "type: pipeline\ninputs:\n  data: {type: uri_folder, path: azureml:raw@latest}\njobs:\n"
        "  reg:\n    type: pipeline\n    component: azureml://registries/r/components/sub/versions/1\n"
        "  sp:\n    type: spark\n    component: azureml:spark_thing:1\n"
        f"  use:\n    command: ls ${{{{inputs.d}}}}\n    environment: {ENV}\n"
        "    inputs: {d: '${{parent.inputs.data}}'}\n")
    prepared = prepare(str(tmp_path / "pipeline.yml"))
    with pytest.raises(UserError) as refused:
        refuse_what_cannot_run_here(prepared)
    message = str(refused.value)
    assert "\n" not in message  # one line, the steps one after another
    lines = message.split("3 steps cannot run locally: ")[1].split("; step ")
    assert [line.split(":")[0].removeprefix("step ") for line in lines] == ["reg", "sp", "use"]
    assert "registered in a workspace" in lines[0] and "registered in a workspace" in lines[1]
    assert "--input data=./local/copy" in lines[2]


def test_an_inline_nested_components_step_names_are_validated_too(tmp_path):
    from amldist.validate import validate_file

    (tmp_path / "pipeline.yml").write_text(
        "type: pipeline\njobs:\n  outer:\n    type: pipeline\n    component:\n      type: pipeline\n"
        f"      jobs:\n        ../../x:\n          command: echo hi\n          environment: {ENV}\n")
    assert [(d.code, d.line) for d in validate_file(tmp_path / "pipeline.yml")] == [("invalid-step-name", 8)]
    with pytest.raises(SpecInvalid):
        prepare(str(tmp_path / "pipeline.yml"))


def test_input_reaches_a_top_level_components_inputs(tmp_path):
    (tmp_path / "pc.yml").write_text(
        "type: pipeline\nname: pc\nversion: '1'\ninputs:\n  word: {type: string, default: hello}\n"
        f"jobs:\n  say:\n    command: echo ${{{{inputs.w}}}}\n    environment: {ENV}\n"
        "    inputs: {w: '${{parent.inputs.word}}'}\n")
    (tmp_path / "job.yml").write_text("type: pipeline\ncomponent: ./pc.yml\n")
    prepared = prepare(str(tmp_path / "job.yml"), inputs=["word=bye"])
    assert prepared.graph.node("say").inputs == {"w": "bye"}
    assert prepared.job.to_dict()["inputs"] == {"word": "bye"}  # what az ml job create --set inputs.word=bye sends
    with pytest.raises(UserError, match="declares no input named 'wrod'"):
        prepare(str(tmp_path / "job.yml"), inputs=["wrod=bye"])


def test_a_binding_to_a_secret_named_input_is_no_secret_value():
    from amldist.rules.secrets import mask_tree

    body = {"jobs": {"a": {"inputs": {"api_key": {"value": "${{parent.inputs.api_key}}"}}},
                     "b": {"inputs": {"columns": {"value": "${{parent.inputs.text}},${{parent.inputs.api_key}}"}}}}}
    # masked the same whatever the order the steps come in (a binding names a value, it holds none)
    for order in (body, {"jobs": dict(reversed(list(body["jobs"].items())))}):
        masked = mask_tree(order)
        assert masked["jobs"]["b"]["inputs"]["columns"]["value"] == "${{parent.inputs.text}},${{parent.inputs.api_key}}"


def test_a_binding_inside_other_text_takes_a_literal_pipeline_input_or_is_refused(tmp_path):
    data = {"inputs": {"lr": 0.1, "data": {"type": "uri_folder", "path": "./d"}}, "jobs": {
        "a": {"command": "echo ${{inputs.x}}", "inputs": {"x": "--lr=${{ parent.inputs.lr }}/x"}}}}
    assert resolve(data, str(tmp_path), "p.yml").node("a").inputs == {"x": "--lr=0.1/x"}
    data["jobs"]["a"]["inputs"]["x"] = "--data=${{parent.inputs.data}}"
    with pytest.raises(UserError, match=r"jobs\.a\.inputs\.x: \$\{\{parent\.inputs\.data\}\} inside other text"):
        resolve(data, str(tmp_path), "p.yml")
