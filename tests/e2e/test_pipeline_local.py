"""Pipelines run locally, for real: amldist submit pipeline.yml --local (subprocesses, gloo on CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.submit.pipeline_project import make_pipeline_project

AMLDIST = [sys.executable, "-m", "amldist"]  # the command as users run it


def submit(cwd, *args, timeout=240):
    return subprocess.run([*AMLDIST, "submit", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_three_steps_run_in_order_and_outputs_flow_between_them(tmp_path):
    project = make_pipeline_project(tmp_path)
    # the node's own distribution over its component's 2 x 2 (as Azure ML lets a pipeline node do): a world of
    # 2 ranks on 2 nodes, half the processes of the component's (each imports torch)
    done = submit(project, "pipeline.yml", "--local", "--input", "scale=2",
                  "--set", "jobs.train.distribution={type: pytorch, process_count_per_instance: 1}")
    assert done.returncode == 0, done.stderr + done.stdout
    run = project / ".amldist" / "runs" / "demo"
    # numbers 1 2 3 -> 6 * scale 2 * (rank+1) summed over 2 ranks = 12 * 3
    assert (run / "train" / "outputs" / "model" / "model.txt").read_text() == "total=36.0 world=2\n"
    assert "total=36.0 world=2" in (run / "evaluate" / "user_logs" / "std_log.txt").read_text()
    assert sorted(os.listdir(run / "train" / "user_logs")) == [f"std_log_process_0{i}.txt" for i in range(2)]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert [(s["name"], s["status"], s["run_folder"]) for s in summary["steps"]] == [
        ("prep", "completed", "prep"), ("train", "completed", "train"), ("evaluate", "completed", "evaluate")]
    assert all(s["duration_s"] > 0 for s in summary["steps"])
    assert "pipeline demo: Completed in" in done.stdout  # Azure ML's words, as a single job ends
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("  ")][-3:] == [
        ["prep", "Completed"], ["train", "Completed"], ["evaluate", "Completed"]]
    assert summary["outputs"]["final_model"] == str(run / "train" / "outputs" / "model")


def test_a_failing_first_step_stops_the_steps_after_it(tmp_path):
    project = make_pipeline_project(tmp_path)
    done = submit(project, "pipeline.yml", "--local", "--input", "prep_exit=3")
    assert done.returncode == 1
    assert "step prep of pipeline demo failed (exit 3)" in done.stderr  # the rank's own code
    assert "train, evaluate" in done.stderr
    assert "prep: the source data is missing" in done.stderr  # the log tail
    run = project / ".amldist" / "runs" / "demo"
    summary = json.loads((run / "summary.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["failed", "skipped", "skipped"]
    assert not (run / "train").exists()


def test_independent_steps_finish_when_another_fails(tmp_path):
    pipeline = """\
    type: pipeline
    name: side
    jobs:
      bad:
        command: sleep 0.2; exit 4
        outputs: {o: {type: uri_folder}}
      good:
        command: sleep 1; echo fine > ${{outputs.o}}/x
        outputs: {o: {type: uri_folder}}
      after_bad:
        command: ls ${{inputs.i}}
        inputs: {i: '${{parent.jobs.bad.outputs.o}}'}
    """
    project = make_pipeline_project(tmp_path, pipeline)
    done = submit(project, "pipeline.yml", "--local", "--max-parallel", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((project / ".amldist/runs/side/summary.json").read_text())
    assert {s["name"]: s["status"] for s in summary["steps"]} == {"bad": "failed", "good": "completed",
                                                                  "after_bad": "skipped"}
    assert (project / ".amldist/runs/side/good/outputs/o/x").read_text() == "fine\n"


def test_dry_run_shows_every_step_and_starts_nothing(tmp_path):
    project = make_pipeline_project(tmp_path)
    done = submit(project, "pipeline.yml", "--local", "--dry-run", "--set", "jobs.train.resources.instance_count=1",
                  "--set", "jobs.prep.environment_variables.API_TOKEN=s3cret-value", "--max-parallel", "1")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # a step larger than --max-parallel still runs (alone): the dry run says so rather than "at most 1"
    assert "within 1 process(es) (--max-parallel); a larger step runs alone (train: 2)" in out
    assert "order: prep -> train -> evaluate" in out
    assert "== step train (after prep) ==" in out and "job train: pytorch, 2 process(es)" in out
    assert "rank 1 (node 0" in out and "RANK=1" in out
    assert ".amldist/runs/demo/prep/outputs/data" in out.split("== step train")[1]  # train reads prep's folder
    assert "s3cret-value" not in out
    assert not (project / ".amldist" / "runs").exists()


def test_steps_that_cannot_run_locally_are_refused_before_anything_starts(tmp_path):
    project = make_pipeline_project(tmp_path)
    text = (project / "pipeline.yml").read_text().replace("    component: ./train.yml",
                                                          "    component: azureml:tiny_train:1")
    (project / "pipeline.yml").write_text(text)
    done = submit(project, "pipeline.yml", "--local")
    assert done.returncode == 2, done.stderr
    assert "step train: component 'azureml:tiny_train:1' is registered in a workspace; point component: at a " \
           "local copy of its YAML" in done.stderr
    assert not (project / ".amldist" / "runs" / "demo").exists()


def test_several_steps_that_cannot_run_locally_are_one_line_naming_each(tmp_path):
    (tmp_path / "p.yml").write_text(
        "type: pipeline\njobs:\n  a:\n    component: azureml:comp_a:1\n  b:\n    type: spark\n"
        "    component: azureml:comp_b:2\n  c:\n    command: echo hi\n    environment: azureml:env:1\n")
    done = submit(tmp_path, "p.yml", "--local")
    assert done.returncode == 2, done.stderr
    error, hint = done.stderr.splitlines()
    assert error.startswith("error: p.yml: 2 steps cannot run locally: step a: component 'azureml:comp_a:1' "), error
    assert "; step b: " in error and "\\n" not in error
    assert hint.startswith("hint: submit the pipeline to Azure ML")


def test_a_pipeline_job_from_a_top_level_component_runs_here(tmp_path):
    env = "azureml:AzureML-sklearn-1.5@latest"
    (tmp_path / "pc.yml").write_text(
        "type: pipeline\nname: pc\nversion: '1'\ninputs:\n  word: {type: string, default: hello}\n"
        "outputs:\n  said: {type: uri_folder}\njobs:\n"
        f"  say:\n    command: echo ${{{{inputs.w}}}} > ${{{{outputs.o}}}}/word.txt\n    environment: {env}\n"
        "    inputs: {w: '${{parent.inputs.word}}'}\n    outputs: {o: {type: uri_folder}}\n"
        f"  read:\n    command: cat ${{{{inputs.i}}}}/word.txt\n    environment: {env}\n"
        "    inputs: {i: '${{parent.jobs.say.outputs.o}}'}\n")
    (tmp_path / "job.yml").write_text("type: pipeline\nname: from_component\ncomponent: ./pc.yml\n"
                                      "inputs:\n  word: bye\n")
    done = submit(tmp_path, "job.yml", "--local")
    assert done.returncode == 0, done.stderr + done.stdout
    run = tmp_path / ".amldist" / "runs" / "from_component"
    assert (run / "say" / "outputs" / "o" / "word.txt").read_text() == "bye\n"
    assert "bye" in (run / "read" / "user_logs" / "std_log.txt").read_text()
