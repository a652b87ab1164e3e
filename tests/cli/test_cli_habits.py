"""What a newcomer meets at the command line: the exit-code table held by every command, --only-show-errors,
file completion in a real bash, the Azure dry run without azure-ai-ml, azure-ai-ml's notices only with --debug,
and the dry run's code snapshot preview."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

from amldist.cli.global_options import EXIT_CODES
from tests.conftest import ROOT

SAMPLE = str(ROOT / "samples" / "pytorch_ddp" / "job.yml")
LEGACY = str(ROOT / "components" / "pytorch_ddp_trainer" / "component.legacy.yaml")
INVALID = str(ROOT / "tests" / "validate" / "fixtures" / "invalid" / "duplicate_key.yml")


def table_codes() -> set[int]:
    """The plain exit codes the table in ``amldist --help`` promises (128+N is tested by the signal tests)."""
    return {int(m) for m in re.findall(r"^\s+(\d)\s", EXIT_CODES, flags=re.M)}


def cases(tmp_path) -> list[tuple[list[str], int]]:
    (tmp_path / "existing.yaml").write_text("# mine\n")
    bad_legacy = tmp_path / "bad.yaml"
    bad_legacy.write_text("type: DistributedComponent\nname: x\n")
    return [
        (["validate", SAMPLE], 0), (["validate", INVALID], 1), (["validate", str(tmp_path / "nope.yml")], 2),
        (["vm-sizes", "Standard_NC24rs_v3"], 0), (["vm-sizes", "Standard_Nope"], 2),
        (["convert", LEGACY], 0), (["convert", str(bad_legacy)], 1),
        (["convert", LEGACY, "-o", str(tmp_path / "existing.yaml")], 2),  # an existing OUT: a usage mistake
        (["convert", LEGACY, "-o", str(tmp_path)], 2),  # a folder as OUT
        (["submit", SAMPLE, "--local", "--dry-run"], 0), (["submit", INVALID, "--local", "--dry-run"], 1),
        (["submit", str(ROOT / "samples"), "--local"], 2),  # a folder given as FILE
        (["submit", str(tmp_path / "nope.yml"), "--local"], 2),
        (["submit", SAMPLE, "--local", "--instance-count", "0"], 2),
        (["job", "show", "no-such-run", "--local"], 2),
        (["no-such-command"], 2), (["validate", "--no-such-option", SAMPLE], 2),
    ]


def test_every_command_holds_the_exit_code_table(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AMLDIST_DEBUG", "")  # a bug must be exit 3 here, not a traceback
    seen = set()
    for argv, expected in cases(tmp_path):
        code, _, err = cli(*argv)
        assert code == expected, (argv, err)
        seen.add(code)
        assert "Traceback" not in err, (argv, err)
        if code == 2:  # one line saying what is wrong: amldist's own, or argparse's after its usage
            assert re.search(r"^(amldist( \S+)?: )?error: ", err, flags=re.M), (argv, err)

    import amldist.cli.vm_sizes as vm_sizes

    def bug(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(vm_sizes, "run", bug)  # the parser takes `run` when main() builds it
    code, _, err = cli("vm-sizes")
    assert code == 3 and "internal error: RuntimeError: a bug" in err and "--debug" in err
    seen.add(code)
    assert seen == table_codes()  # every code of the table is walked


def test_only_show_errors_hides_validates_warnings_and_notes(tmp_path, cli):
    spec = tmp_path / "job.yml"
    spec.write_text("type: command\ncommand: python x.py\nenvironment: azureml:e@latest\ncode: ./missing\n")
    (tmp_path / "compose.yml").write_text("services: {}\n")  # not a spec: a note
    code, out, _ = cli("validate", str(tmp_path))
    assert code == 0 and "warning missing-code" in out and "note not-a-spec" in out
    code, out, _ = cli("validate", str(tmp_path), "--only-show-errors")
    assert code == 0 and out == ""
    code, out, _ = cli("validate", str(tmp_path), "--format", "json", "--only-show-errors")
    assert code == 0 and json.loads(out)["diagnostics"] == []
    code, out, _ = cli("validate", str(tmp_path), "--strict", "--only-show-errors")
    assert code == 1  # hidden, still counted by --strict


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_file_names_after_submit(tmp_path):
    script = tmp_path / "amldist.bash"
    done = subprocess.run([sys.executable, "-m", "amldist", "--print-completion", "bash"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script.write_text(done.stdout)
    probe = textwrap.dedent(f"""\
        source {script}
        complete() {{ COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${{#COMP_LINE}}
                     COMPREPLY=(); _shtab_amldist; printf '%s\\n' "${{COMPREPLY[@]}}"; echo --; }}
        complete amldist submit samples/
        complete amldist submit samples/pytorch_ddp/j
        complete amldist validate samples/pytorch_ddp/
        complete amldist job download x -o sampl
        """)
    done = subprocess.run(["bash", "--norc", "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    submit, partial, validate, folder, _ = done.stdout.split("--\n")
    assert {"samples/pytorch_ddp", "samples/pipeline", "samples/mpi"} <= set(submit.split())
    assert partial.split() == ["samples/pytorch_ddp/job.yml"]
    assert "samples/pytorch_ddp/job.yml" in validate.split()
    assert folder.split() == ["samples"]


def run_without_azure(*argv: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """amldist in a Python where azure-ai-ml is not installed (``pip install .`` without extras)."""
    probe = ("import sys; sys.modules['azure'] = None\n"
             "from amldist.cli.main import main\nsys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("spec", ["samples/pytorch_ddp/job.yml", "samples/pipeline/pipeline.yml"])
def test_the_azure_dry_run_without_azure_ai_ml_says_what_to_install(spec):
    done = run_without_azure("submit", spec, "--dry-run")
    assert done.returncode == 2, done.stderr
    error, hint = [line for line in done.stderr.splitlines() if not line.startswith(spec)]  # a spec warning may come first
    assert error.startswith("error: ") and "needs azure-ai-ml, which is not installed" in error
    assert hint.startswith("hint: pip install azure-ai-ml azure-identity") and "--local" in hint
    assert run_without_azure("submit", spec, "--local", "--dry-run").returncode == 0  # the local path needs none


def test_azure_ai_mls_notices_print_only_with_debug(tmp_path):
    pytest.importorskip("azure.ai.ml")
    argv = [sys.executable, "-m", "amldist", "submit", SAMPLE, "--dry-run", "--set", "code=./no-such-folder"]
    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert quiet.returncode == 2 and "experimental class" not in quiet.stderr, quiet.stderr  # a missing path
    assert "azure-ai-ml rejects the command job" in quiet.stderr and "Traceback" not in quiet.stderr
    loud = subprocess.run(argv + ["--debug"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "experimental class" in loud.stderr


def project_with_a_venv(tmp_path):
    code = tmp_path / "src"
    (code / ".venv" / "lib").mkdir(parents=True)
    (code / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with open(code / ".venv" / "lib" / "libbig.so", "wb") as fh:
        fh.truncate(40 * 2**20)  # sparse: no disk used
    (code / "train.py").write_text("print('hi')\n")
    job = tmp_path / "job.yml"
    job.write_text("type: command\ncode: src\ncommand: python train.py\nenvironment: azureml:e@latest\n")
    return job


def test_the_local_dry_run_previews_the_snapshot_and_warns_for_a_venv(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("submit", str(project_with_a_venv(tmp_path)), "--local", "--dry-run")
    assert code == 0
    assert "code snapshot: 40.0 MB in 3 file(s)" in out and "largest folders: .venv/ 40.0 MB" in out
    assert "warning: .venv/ is a virtual environment, 40.0 MB" in out and "add '/.venv/'" in out


def test_the_azure_dry_run_previews_the_snapshot_and_warns_for_a_venv(tmp_path, cli, monkeypatch):
    pytest.importorskip("azure.ai.ml")
    monkeypatch.chdir(tmp_path)
    for name in ("AZUREML_ARM_WORKSPACE_NAME", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_SUBSCRIPTION"):
        monkeypatch.delenv(name, raising=False)
    code, out, _ = cli("submit", str(project_with_a_venv(tmp_path)), "--dry-run")
    assert code == 0
    shown = json.loads(out)
    snapshot = shown["code_snapshot"]
    assert snapshot["size"] == "40.1 MB" and snapshot["largest_folders"][0] == {"path": ".venv/", "size": "40.0 MB"}
    assert snapshot["file_count"] == len(snapshot["files"])
    assert any(w.startswith(".venv/ is a virtual environment") and "'/.venv/'" in w for w in shown["warnings"])


def test_only_show_errors_hides_a_dry_runs_warnings_too(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = project_with_a_venv(tmp_path)
    code, out, err = cli("submit", str(job), "--local", "--dry-run", "--only-show-errors")
    assert code == 0 and "code snapshot: 40.0 MB" in out
    assert "warning:" not in out + err and "note:" not in out + err


def test_a_completion_script_read_in_part_ends_quietly():
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m amldist --print-completion bash | head -1", shell=True,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("#") and done.stderr == ""


def test_azure_ai_mls_logger_follows_the_flags_after_its_import():
    pytest.importorskip("azure.ai.ml")
    probe = textwrap.dedent("""\
        import logging, os, sys
        from amldist.cli import global_options
        global_options.apply({sys.argv[1]} - {""}, "submit")
        import azure.ai.ml  # sets its own logger to INFO with a handler of its own
        from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml
        quiet_azure_ai_ml()
        print(logging.getLevelName(logging.getLogger("azure.ai.ml").getEffectiveLevel()))
        """)
    levels = [subprocess.run([sys.executable, "-c", probe, flag], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "AMLDIST_DEBUG": ""}).stdout.strip()
              for flag in ("", "--verbose", "--debug")]
    assert levels == ["ERROR", "ERROR", "DEBUG"]
