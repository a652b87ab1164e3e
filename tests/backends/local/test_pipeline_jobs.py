"""Pipelines are jobs to `amldist job`, run_local returns the record, and status.json is data, not authority.

Real runs (amldist as a subprocess, real step processes), real hostile files (a FIFO, a link to
/dev/zero, wrong types, another process's pid).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import amldist
from amldist.backends.local import jobs, proc, run_state
from tests.conftest import wait_until

AMLDIST = [sys.executable, "-m", "amldist"]  # the command as users run it

PIPELINE = """\
type: pipeline
name: {name}
jobs:
  first:
    command: echo first $$ > {pids}/first; echo out-first; {first}
    outputs: {{o: {{type: uri_folder}}}}
  second:
    command: echo second $$ > {pids}/second; echo made > ${{{{outputs.o}}}}/x; echo out-second; {second}
    outputs: {{o: {{type: uri_folder}}}}
"""


def amldist_cli(cwd, *args, timeout=120):
    return subprocess.run([*AMLDIST, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def pipeline_file(tmp_path, *, name="pipe", first="exit 0", second="exit 0"):
    (tmp_path / "pids").mkdir(exist_ok=True)
    path = tmp_path / f"{name}.yml"
    path.write_text(PIPELINE.format(name=name, pids=tmp_path / "pids", first=first, second=second))
    return path


def test_a_finished_pipeline_is_a_job_to_every_verb(tmp_path):
    pipeline_file(tmp_path, first="exit 0")
    done = amldist_cli(tmp_path, "submit", "pipe.yml", "--local", "--format", "json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["name"] == "pipe" and printed["kind"] == "pipeline" and printed["status"] == "Completed"
    listed = json.loads(amldist_cli(tmp_path, "job", "list", "--format", "json").stdout)
    assert [(r["name"], r["kind"], r["status"]) for r in listed] == [("pipe", "pipeline", "Completed")]
    shown = amldist_cli(tmp_path, "job", "show", "pipe").stdout
    assert "status: Completed" in shown and "step first: Completed, exit 0" in shown
    logs = amldist_cli(tmp_path, "job", "logs", "pipe").stdout.splitlines()
    assert sorted(logs) == ["[first] out-first", "[second] out-second"]  # each line names its step
    one = amldist_cli(tmp_path, "job", "logs", "pipe", "--step", "second")
    assert one.returncode == 0 and one.stdout == "out-second\n"
    bad = amldist_cli(tmp_path, "job", "logs", "pipe", "--step", "nope")
    assert bad.returncode == 2 and "has no step 'nope'" in bad.stderr and "first, second" in bad.stderr
    got = amldist_cli(tmp_path, "job", "download", "pipe", "--all", "-o", "dl")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "dl" / "artifacts" / "user_logs" / "first" / "std_log.txt").exists()
    got = amldist_cli(tmp_path, "job", "download", "pipe", "--step", "second", "--all", "-o", "dl2")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "dl2" / "named-outputs" / "o" / "x").read_text() == "made\n"


def test_a_step_that_exits_3_is_reported_as_exit_3(tmp_path):
    pipeline_file(tmp_path, name="three", first="echo broken; exit 3")
    done = amldist_cli(tmp_path, "submit", "three.yml", "--local", "--format", "json")
    assert done.returncode == 1
    printed = json.loads(done.stdout)
    assert printed["status"] == "Failed"
    assert {s["name"]: (s["status"], s["exit_code"]) for s in printed["steps"]} == {
        "first": ("Failed", 3), "second": ("Completed", 0)}  # second does not read from first
    logs = amldist_cli(tmp_path, "job", "logs", "three", "--step", "first")
    assert logs.stdout == "out-first\nbroken\n"


def test_cancel_of_a_running_pipeline_stops_every_step(tmp_path):
    pipeline_file(tmp_path, name="long", first="sleep 300", second="sleep 300")
    runner = subprocess.Popen([*AMLDIST, "submit", "long.yml", "--local", "--max-parallel", "2"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pids = tmp_path / "pids"
        assert wait_until(lambda: (pids / "first").exists() and (pids / "second").exists())
        step_pids = [int((pids / n).read_text().split()[1]) for n in ("first", "second")]
        listed = amldist_cli(tmp_path, "job", "list").stdout
        assert "long" in listed and "Running" in listed
        done = amldist_cli(tmp_path, "job", "cancel", "long")
        assert done.returncode == 0, done.stderr
        assert "job long: Canceled" in done.stdout
        assert runner.wait(30) == 128 + signal.SIGTERM
        assert wait_until(lambda: all(proc.start_time(p) is None for p in step_pids), 10)
        record = jobs.get_run(str(tmp_path / ".amldist" / "runs"), "long")
        assert record.status == "Canceled" and record.stopped_by == "amldist job cancel"
        assert {s.status for s in record.steps} == {"Canceled"}
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_run_local_takes_a_job_yaml_a_builder_job_and_a_pipeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yml").write_text("command: echo from-yaml\nenvironment: azureml:x@latest\n")
    record = amldist.run_local("job.yml", name="yaml-job", status_line=False)
    assert (record.name, record.kind, record.status) == ("yaml-job", "job", "Completed")
    built = amldist.pytorch_job(command="echo built", environment="azureml:x@latest", process_count_per_instance=2)
    record = amldist.run_local(built, name="built-job", status_line=False)
    assert record.status == "Completed" and [r.exit_code for r in record.ranks] == [0, 0]
    pipeline_file(tmp_path, name="py-pipe")
    record = amldist.run_local(str(tmp_path / "py-pipe.yml"))
    assert (record.kind, record.status, [s.name for s in record.steps]) == ("pipeline", "Completed",
                                                                             ["first", "second"])
    assert amldist.run_local("job.yml", dry_run=True).kind == "job"


# --- hostile status.json files ---------------------------------------------------------------------
def _runs_with(tmp_path, hostile):
    """A completed run 'good' and a run 'bad' whose status.json is made by ``hostile(path)``."""
    root = tmp_path / ".amldist" / "runs"
    for name in ("good", "bad"):
        (root / name).mkdir(parents=True)
    run_state.write_state(str(root / "good"), {
        "name": "good", "kind": "job", "status": "Completed", "ranks": [], "outputs": {}})
    hostile(root / "bad" / "status.json")
    return root


def _state(**fields):
    return lambda path: path.write_text(json.dumps({"name": "bad", "status": "Running", **fields}))


@pytest.mark.parametrize("hostile, words", [
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: os.symlink("/dev/zero", p), "a link"),
    (lambda p: p.write_text('{"name": "bad", "status": "Running", "ranks": 7}'), "ranks of type int"),
    (lambda p: p.write_text('{"name": 1}'), "name of type int"),
    (lambda p: p.write_text('{"name": "bad", "status": "running"}'), "not one of Azure ML's statuses"),
    (lambda p: p.write_text("[" * 100000), "is not JSON"),
    (_state(outputs={"../../x": {"path": "o"}}), "not a plain name"),
    (_state(logs="/etc"), "outside the run folder"),
])
def test_a_hostile_status_json_is_one_line_and_the_others_are_listed(tmp_path, hostile, words):
    root = _runs_with(tmp_path, hostile)
    started = time.monotonic()
    listed = amldist_cli(tmp_path, "job", "list", timeout=20)
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[:3] == ["good", "job", "Completed"]
    assert listed.stderr.count("\n") == 1 and words in listed.stderr
    shown = amldist_cli(tmp_path, "job", "show", "bad", timeout=20)
    assert shown.returncode == 1 and shown.stderr.startswith("error: local run 'bad'") and words in shown.stderr
    assert "Traceback" not in shown.stderr + listed.stderr
    assert time.monotonic() - started < 15
    assert os.path.isdir(root / "good")


def test_cancel_never_signals_a_process_a_file_names(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        # every field right, the bystander's real start time included: still not the run's process
        _runs_with(tmp_path, _state(pid=bystander.pid, pid_start_time=proc.start_time(bystander.pid)))
        shown = json.loads(amldist_cli(tmp_path, "job", "show", "bad", "--format", "json").stdout)
        assert shown["status"] == "Failed"
        done = amldist_cli(tmp_path, "job", "cancel", "bad")
        assert done.returncode == 0 and "already Failed; nothing to cancel" in done.stderr
        time.sleep(0.2)
        assert bystander.poll() is None  # alive: never signalled
        assert not proc.belongs_to_run(bystander.pid, proc.start_time(bystander.pid), str(tmp_path))
    finally:
        bystander.kill()
        bystander.wait()


def test_status_files_are_never_written_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.symlink(victim, run_dir / "status.json")
    os.symlink(victim, run_dir / run_state.CANCEL_FILE)
    run_state.write_state(str(run_dir), {"name": "x"})
    run_state.request_cancel(str(run_dir))
    assert victim.read_text() == "keep\n"
    assert json.loads((run_dir / "status.json").read_text()) == {"name": "x"}  # the link itself replaced
    assert not run_state.cancel_requested(str(run_dir))  # a planted link is not a request


def test_the_one_stat_parser_reads_a_name_with_parentheses(tmp_path):
    script = tmp_path / "a) b ("
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    child = subprocess.Popen([str(script)])
    try:
        assert wait_until(lambda: proc.start_time(child.pid) is not None, 5)
        assert proc.stat_fields(child.pid)[0] in "RSD"
        assert proc.start_time(child.pid) > proc.start_time(os.getpid()) - 1
    finally:
        child.kill()
        child.wait()
    assert proc.start_time(child.pid) is None


def test_a_fifo_where_a_log_or_output_file_should_be_never_blocks(tmp_path):
    root = tmp_path / ".amldist" / "runs"
    run_dir = root / "odd"
    (run_dir / "user_logs").mkdir(parents=True)
    (run_dir / "outputs" / "o").mkdir(parents=True)
    os.mkfifo(run_dir / "user_logs" / "std_log.txt")
    os.mkfifo(run_dir / "outputs" / "o" / "pipe")
    (run_dir / "outputs" / "o" / "real.txt").write_text("data\n")
    os.symlink("/dev/zero", run_dir / "outputs" / "o" / "zero")
    run_state.write_state(str(run_dir), {
        "name": "odd\x1b[31m", "kind": "job", "status": "Completed", "logs": "user_logs",
        "ranks": [{"label": "process", "log": "user_logs/std_log.txt", "exit_code": 0}],
        "outputs": {"o": {"path": "outputs/o", "type": "uri_folder"}}})
    started = time.monotonic()
    logs = amldist_cli(tmp_path, "job", "logs", "odd", timeout=20)
    assert logs.returncode == 0 and logs.stdout == ""
    got = amldist_cli(tmp_path, "job", "download", "odd", "--all", "-o", "dl", timeout=20)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "dl" / "named-outputs" / "o" / "real.txt").read_text() == "data\n"
    assert not (tmp_path / "dl" / "named-outputs" / "o" / "pipe").exists()
    assert os.readlink(tmp_path / "dl" / "named-outputs" / "o" / "zero") == "/dev/zero"  # a link, copied as one
    listed = amldist_cli(tmp_path, "job", "list", timeout=20)
    assert "odd\\x1b[31m" in listed.stdout and "\x1b" not in listed.stdout  # escaped, not sent to the terminal
    assert time.monotonic() - started < 15
