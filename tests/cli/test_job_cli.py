"""The ``amldist job`` command line and the options every command shares (az ml's habits)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from tests.conftest import ROOT


def test_job_help_lists_the_verbs(cli):
    code, out, _ = cli("job", "--help")
    assert code == 0
    for verb in ("list", "show", "logs", "cancel", "download"):
        assert verb in out


def test_no_name_and_two_names_are_usage_errors(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("job", "show", "--local")
    assert code == 2 and err.startswith("error: 'amldist job show' needs the job's name")
    code, _, err = cli("job", "show", "a", "-n", "b", "--local")
    assert code == 2 and "two job names" in err


def test_local_and_a_workspace_together_are_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("job", "list", "--local", "-w", "ws")
    assert code == 2 and err.startswith("error: --workspace (a flag of the azureml backend) given, but this goes to "
                                        "the local backend (--local)\n")
    code, _, err = cli("job", "list", "--run-root", "runs", "-w", "ws")
    assert code == 2 and "flags of different backends (azureml, local) given together" in err


def test_an_empty_run_root_lists_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = cli("job", "list", "--format", "json")
    assert code == 0 and json.loads(out) == []


def amldist(*args):
    """In a subprocess: the global flags change process-wide logging, which must not leak into other tests."""
    return subprocess.run([sys.executable, "-m", "amldist", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_global_flags_anywhere_and_the_exit_code_table(cli):
    code, out, _ = cli("--help")
    assert code == 0
    assert "exit codes (every command)" in out and "128+N" in out
    done = amldist("job", "list", "--local", "--run-root", "/nonexistent-amldist", "--only-show-errors")
    assert done.returncode == 0 and done.stderr == ""  # the 'no local runs' note is dropped
    done = amldist("job", "list", "--local", "--run-root", "/nonexistent-amldist")
    assert "no local runs" in done.stderr


def test_azure_identity_is_quiet_unless_debug():
    probe = ("import logging, sys; from amldist.cli import global_options as g; "
             "g.apply(set(sys.argv[2:]), sys.argv[1]); print(logging.getLogger('azure.identity').getEffectiveLevel())")
    quiet = subprocess.run([sys.executable, "-c", probe, "submit"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    loud = subprocess.run([sys.executable, "-c", probe, "submit", "--debug"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert int(quiet.stdout) == logging.CRITICAL and int(loud.stdout) == logging.DEBUG


def test_validate_leaves_logging_unimported():
    probe = ("import sys; from amldist.cli.main import main; main(['validate', '-q', sys.argv[1]]); "
             "print('logging' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "samples" / "mpi" / "job.yml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr


def test_only_show_errors_drops_warning_lines():
    from amldist.cli.global_options import ErrorsOnly
    import io

    sink = io.StringIO()
    stream = ErrorsOnly(sink)
    stream.write("warning: x\nerror: y\nnote: z\nf.yml:1:1: warning W1: w\nhint: h")
    stream.flush()
    assert sink.getvalue() == "error: y\nhint: h"


def test_bash_completion_comes_from_shtab():
    done = subprocess.run([sys.executable, "-m", "amldist", "--print-completion", "bash"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "shtab" in done.stdout and "_shtab_amldist" in done.stdout and "download" in done.stdout


def test_help_names_slurm_and_pipelines(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "--slurm" in out and "pipelines" in out
    code, out, _ = cli("submit", "--help")
    assert code == 0 and "pipeline job" in out and "--slurm" in out.split("options:")[0]


def test_job_list_slurm_says_when_there_is_no_run(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("job", "list", "--slurm")
    assert code == 0 and out == ""
    assert "note: no Slurm runs in .amldist/slurm" in err
