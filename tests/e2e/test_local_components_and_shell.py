"""Real local runs of components as Azure ML runs them (issue 15 pts 3, 5; issue 17 pts 1, 8): single-
quoted placeholders give Azure ML's argv, ``type: path`` inputs and boolean string defaults work,
``additional_includes`` arrive in the code folder, a value Azure ML's shell would read as code is
warned about (locally and by ``validate``) and runs nothing, ``--input`` values stay text."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

ARGV = "import json, sys; open('argv.json', 'w').write(json.dumps(sys.argv[1:]))"


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def component(tmp_path, command: str, inputs: str, extra: str = ""):
    write(tmp_path / "comp" / "src" / "argv.py", ARGV.replace("'argv.json'", "__import__('os').environ['ARGV_OUT']"))
    lines = ["$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json", "type: command",
             "name: shell_check", "code: ./src", "inputs:"]
    lines += ["  " + line for line in textwrap.dedent(inputs).strip().splitlines()]
    lines += ["command: >-", "  " + command, "environment: azureml:env:1", extra]
    path = tmp_path / "comp" / "comp.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_local(cli, path, tmp_path, *args):
    out_file = tmp_path / "argv.json"
    code, out, err = cli("submit", str(path), "--local", "--set", f"environment_variables.ARGV_OUT={out_file}", *args)
    argv = json.loads(out_file.read_text()) if out_file.exists() else None
    return code, err, argv


def azure_argv(command: str, tmp_path) -> list[str]:
    """What Azure ML's shell gives: the values pasted into the command, run by bash."""
    out_file = tmp_path / "azure.json"
    script = f"{sys.executable} {tmp_path / 'comp/src/argv.py'}"
    subprocess.run(["bash", "-c", command.replace("python argv.py", script)],
                   check=True, env={"PATH": "/usr/bin:/bin", "ARGV_OUT": str(out_file)}, cwd=tmp_path)
    return json.loads(out_file.read_text())


def test_single_quoted_placeholders_path_inputs_and_boolean_defaults_run_with_azure_mls_argv(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    path = component(tmp_path, "python argv.py --model_name '${{inputs.model_name}}' --flag '${{inputs.flag}}' "
                               "--data ${{inputs.data}} --n '${{inputs.n}}'", """
        model_name: {type: string, default: "gpt2 large"}
        flag: {type: string, default: True, enum: ['True', 'False']}
        data: {type: path}
        n: {type: integer, default: 3}
        """)
    code, err, argv = run_local(cli, path, tmp_path, "--input", f"data={tmp_path / 'data'}")
    assert code == 0, err
    pasted = (f"python argv.py --model_name 'gpt2 large' --flag 'True' --data {tmp_path / 'data'} --n '3'")
    assert argv == azure_argv(pasted, tmp_path) == [
        "--model_name", "gpt2 large", "--flag", "True", "--data", str(tmp_path / "data"), "--n", "3"]
    assert "warning" not in err


def test_additional_includes_arrive_in_the_code_folder_as_azure_ml_lays_them_out(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "lib" / "pkg" / "mod.py", "X = 1\n")
    write(tmp_path / "lib" / ".amlignore", "*.tmp\n")
    write(tmp_path / "lib" / "skip.tmp", "no\n")
    write(tmp_path / "shared" / "a.txt", "a\n")
    write(tmp_path / "comp" / "cfg.txt", "cfg\n")
    path = component(tmp_path, "python argv.py", "x: {type: string, default: a}",
                     "additional_includes:\n  - ../lib\n  - ./cfg.txt\n  - ../shared.zip")
    code, out, err = cli("submit", str(path), "--local", "--name", "inc",
                         "--set", f"environment_variables.ARGV_OUT={tmp_path / 'argv.json'}")
    assert code == 0, err
    snapshot = tmp_path / ".amldist" / "runs" / "inc" / "code"
    assert (snapshot / "lib" / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert not (snapshot / "lib" / "skip.tmp").exists()  # the include's own .amlignore applies
    assert (snapshot / "cfg.txt").read_text() == "cfg\n" and (snapshot / "argv.py").exists()
    assert sorted(zipfile.ZipFile(snapshot / "shared.zip").namelist()) == ["shared/", "shared/a.txt"]
    assert not (tmp_path / "comp" / "src" / "lib").exists()  # the source folder is left alone


def test_a_missing_include_or_an_artifact_is_one_line_naming_the_entry(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    path = component(tmp_path, "python argv.py", "x: {type: string, default: a}", "additional_includes:\n  - ../nope")
    code, _, err = cli("submit", str(path), "--local", "--dry-run")
    assert code != 0 and "additional_includes[0]" in err and "nope" in err and "Traceback" not in err


def test_a_semicolon_in_an_unquoted_placeholder_warns_locally_and_in_validate_and_runs_nothing(tmp_path, monkeypatch,
                                                                                                   cli):
    monkeypatch.chdir(tmp_path)
    path = component(tmp_path, "python argv.py --msg ${{inputs.msg}}", 'msg: {type: string, default: "ok; touch pwned"}')
    code, out, err = cli("validate", str(path))
    assert code == 0 and "shell-divergence" in out + err and "inputs.msg" in out + err
    code, err, argv = run_local(cli, path, tmp_path)
    assert code == 0, err
    assert argv == ["--msg", "ok;", "touch", "pwned"] and not list(tmp_path.rglob("pwned"))
    # the same from --input: one warning, naming the input and the fix, and nothing runs
    code, err, argv = run_local(cli, path, tmp_path, "--input", "msg=a && touch pwned2")
    assert code == 0 and argv == ["--msg", "a", "&&", "touch", "pwned2"] and not list(tmp_path.rglob("pwned*"))
    warnings = [line for line in err.splitlines() if "Azure ML's shell" in line]
    assert len(warnings) == 1 and "inputs.msg" in warnings[0] and '"${{inputs.msg}}"' in warnings[0]


@pytest.mark.parametrize("command", ['timeout 60 bash -c "python argv.py ${{inputs.msg}}"',
                                     'echo "echo ${{inputs.msg}}" | /usr/bin/env sh', "N=${{inputs.msg}}; echo $((N+1))"])
def test_a_hostile_value_for_a_nested_shell_is_refused_naming_the_input_and_a_benign_one_runs(tmp_path, monkeypatch,
                                                                                                cli, command):
    monkeypatch.chdir(tmp_path)
    path = component(tmp_path, command, "msg: {type: string, default: '1'}")
    code, out, err = cli("submit", str(path), "--local", "--input", "msg=1; touch pwned")
    assert code != 0 and "${{inputs.msg}}" in err and "1; touch" not in err and not list(tmp_path.rglob("pwned"))
    code, out, err = cli("validate", str(path))
    assert "shell-context" in out + err
    code, err, _ = run_local(cli, path, tmp_path, "--input", "msg=2")
    assert code == 0, err


def test_input_values_stay_text_unless_the_input_is_typed(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "job.yml", f"""
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        command: python {tmp_path / 'comp/src/argv.py'} ${{{{inputs.a}}}} ${{{{inputs.b}}}} ${{{{inputs.n}}}}
        inputs:
          a: x
          b: y
          n: 1
        environment: azureml:env:1
        environment_variables:
          ARGV_OUT: {tmp_path / 'argv.json'}
        """)
    component(tmp_path, "python argv.py", "x: {type: string, default: a}")  # writes argv.py
    code, out, err = cli("submit", str(path), "--local", "--input", "a=0123", "--input", "b=1:30", "--input", "n=07")
    assert code == 0, err
    assert json.loads((tmp_path / "argv.json").read_text()) == ["0123", "1:30", "7"]
    code, out, err = cli("submit", str(path), "--local", "--dry-run", "--input", "a\n=1")
    assert code == 2 and "not an input name" in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_python_c_placeholder_is_passed_literally_with_a_warning(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    path = component(tmp_path, 'python -c "${{inputs.code}}"', "code: {type: string, default: 'print(1)'}")
    code, out, err = cli("validate", str(path))
    assert "interpreter-code" in out + err and "on Azure ML as locally" in out + err


def test_every_command_job_and_component_of_the_real_corpus_that_azure_ai_ml_accepts_plans_locally(tmp_path):
    """Issue 15's done-when: submit --local --dry-run, with input values supplied, plans every command
    job and component azure-ai-ml accepts (single-quoted placeholders, type: path, boolean defaults,
    additional includes included)."""
    import logging

    from azure.ai.ml import load_component, load_job

    from tests.test_real_specs import CORPUS, SPECS, kind_of, local_outcome

    logging.getLogger("azure").setLevel(logging.CRITICAL)
    outcomes = {}
    for index, path in enumerate(SPECS):
        kind = kind_of(path)
        if kind not in ("command_job", "command_component"):
            continue
        try:
            (load_job if kind == "command_job" else load_component)(str(path))
        except Exception:  # noqa: BLE001 - azure-ai-ml refuses it itself (6c_r_iris: its name)
            continue
        folder = tmp_path / str(index)
        folder.mkdir()
        outcomes[str(path.relative_to(CORPUS))] = local_outcome(path, folder)
    assert len(outcomes) >= 60
    assert {p: o for p, o in outcomes.items() if o != "planned"} == {}


def test_a_pipeline_steps_additional_includes_arrive_in_its_code_folder(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "lib" / "pkg" / "mod.py", "X = 1\n")
    component(tmp_path, "python argv.py", "x: {type: string, default: a}", "additional_includes:\n  - ../lib")
    pipeline = write(tmp_path / "pipe.yml", """
        $schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
        type: pipeline
        jobs:
          train:
            type: command
            component: ./comp/comp.yml
            environment_variables: {ARGV_OUT: argv.json}
        """)
    code, out, err = cli("submit", str(pipeline), "--local", "--name", "pipe")
    assert code == 0, err
    step_code = tmp_path / ".amldist" / "runs" / "pipe" / "train" / "code"
    assert (step_code / "lib" / "pkg" / "mod.py").read_text() == "X = 1\n" and (step_code / "argv.py").exists()


def test_a_component_with_additional_includes_is_sent_to_azure_ml_with_them(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "lib" / "a.py", "A = 1\n")
    path = component(tmp_path, "python argv.py", "x: {type: string, default: a}", "additional_includes:\n  - ../lib")
    code, out, err = cli("submit", str(path), "--dry-run")
    assert code == 0 and "Traceback" not in err, err
    # the snapshot the upload will hold has the include where Azure ML puts it (the root, under its name)
    assert "lib/a.py" in out, out


def test_code_naming_one_file_runs_with_that_file_alone_as_on_azure_ml(cli, tmp_path, monkeypatch):
    """``code: ./train.py`` (azure-ai-ml accepts a file; the Azure backend's snapshot holds it alone):
    the run's code folder holds that file, not its neighbours, and the dry run counts one file."""
    write(tmp_path / "train.py", "import os, sys\nopen(sys.argv[1], 'w').write(' '.join(sorted(os.listdir('.'))))\n")
    write(tmp_path / "secret_neighbour.txt", "not part of the code\n")
    job = write(tmp_path / "job.yml", """
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        code: ./train.py
        command: python train.py ${{outputs.o}}/listing.txt
        outputs:
          o: {type: uri_folder}
        environment: azureml:env:1
        """)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("submit", str(job), "--local", "--dry-run")
    assert code == 0, err
    assert "code snapshot: " in out and " in 1 file(s)" in out
    code, out, err = cli("submit", str(job), "--local", "--name", "one_file")
    assert code == 0, err
    listing = (tmp_path / ".amldist" / "runs" / "one_file" / "outputs" / "o" / "listing.txt").read_text().split()
    assert "train.py" in listing and "amldist" in listing and "secret_neighbour.txt" not in listing
    assert (tmp_path / "secret_neighbour.txt").exists()  # nothing of the user's was touched
