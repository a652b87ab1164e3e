"""Real local runs: hostile values run nothing, benign ones arrive as on Azure ML, and no secret
reaches a file amldist writes or a line it prints."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.backends.local.helpers import write_job

HOSTILE = "$(touch pwned) `touch pwned` ; touch pwned 'x\" *"
SECRET = "tok-e2e-s3cr3t"


def job(tmp_path, dist: str):
    return write_job(tmp_path, f"""
        command: >-
          python worker.py --msg ${{{{inputs.msg}}}} --quoted "${{{{inputs.msg}}}}" --n ${{{{inputs.n}}}}
        inputs:
          msg: placeholder
          n: 1
        environment_variables:
          PID_DIR: {tmp_path / 'pids'}
          MODE: env
        distribution: {{type: {dist}, process_count_per_instance: 2}}
        """)


def argv_of_every_rank(tmp_path) -> list[list[str]]:
    return [json.loads(f.read_text())["argv"] for f in sorted((tmp_path / "pids").glob("*.env.json"))]


@pytest.mark.parametrize("dist", ["pytorch", "mpi"])
def test_a_hostile_value_from_input_or_set_is_text_and_runs_nothing(tmp_path, monkeypatch, cli, dist):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("submit", str(job(tmp_path, dist)), "--local", "--name", "hostile",
                         "--input", f"msg={HOSTILE}", "--set", "inputs.n='2; touch pwned'")
    assert code == 0, err
    # unquoted, the value is split into words and its '*' matches the files of the working folder,
    # as the pasted text would on Azure ML; nothing in it runs
    code_dir = tmp_path / ".amldist" / "runs" / "hostile" / "code"
    files = sorted(f.name for f in code_dir.iterdir() if not f.name.startswith("."))
    words = [w for w in HOSTILE.split() if w != "*"] + files
    assert argv_of_every_rank(tmp_path) == [["--msg", *words, "--quoted", HOSTILE, "--n", "2;", "touch", "pwned"]] * 2
    assert not list(tmp_path.rglob("pwned"))


def test_benign_values_with_spaces_arrive_as_azure_ml_gives_them(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("submit", str(job(tmp_path, "pytorch")), "--local", "--input", "msg=hello world")
    assert code == 0, err
    assert argv_of_every_rank(tmp_path)[0] == ["--msg", "hello", "world", "--quoted", "hello world", "--n", "1"]


def test_secrets_are_in_the_processes_only_and_the_run_folder_is_private(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    path = job(tmp_path, "pytorch")
    args = ("submit", str(path), "--local", "--name", "secret", "--input", "msg=hi",
            "--set", f"environment_variables.API_TOKEN={SECRET}",
            "--set", f"environment_variables.MIRROR=https://me:{SECRET}@example.com/simple")
    code, dry_out, dry_err = cli(*args, "--dry-run")
    assert code == 0, dry_err
    code, out, err = cli(*args)
    assert code == 0, err
    dumps = [json.loads(f.read_text())["env"] for f in (tmp_path / "pids").glob("*.env.json")]
    assert dumps and all(d["API_TOKEN"] == SECRET and SECRET in d["MIRROR"] for d in dumps)
    for text in (dry_out, dry_err, out, err):
        assert SECRET not in text
    run = tmp_path / ".amldist" / "runs" / "secret"
    job_yml = run / "job.yml"
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700 and stat.S_IMODE(os.stat(job_yml).st_mode) == 0o600
    written = job_yml.read_text()
    assert SECRET not in written and "API_TOKEN: '***'" in written and "https://***@example.com/simple" in written
    # no file amldist wrote in the run folder holds it (the ranks' own logs are the job's output)
    for f in run.rglob("*"):
        if f.is_file() and "user_logs" not in f.parts:
            assert SECRET.encode() not in f.read_bytes(), f
