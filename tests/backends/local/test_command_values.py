"""The local plan passes command values as variables and keeps secrets out of what it prints and writes."""

from __future__ import annotations

import re

import pytest

from amldist.backends.local.plan import MASKED_HEADER, describe, plan
from amldist.errors import UserError
from amldist.model.yamlio import load_yaml
from amldist.submit.prepare import prepare
from amldist.submit.prepared import SubmitOptions

from tests.backends.local.helpers import write_job

SECRETS = ("hf_s3cr3t", "sk-from-default", "pw-from-set", "tok-from-input", "u5er:pa55")


def make(tmp_path, body, **kw):
    prepared = prepare(str(write_job(tmp_path, body)), cwd=str(tmp_path), **kw)
    return plan(prepared, SubmitOptions(run_root=str(tmp_path / "runs")), environ={"PATH": "/usr/bin:/bin"})


def test_secrets_reach_the_processes_but_not_the_dry_run_nor_job_yml(tmp_path):
    p = make(tmp_path, """
        command: python worker.py --key "${{inputs.api_key}}" --auth ${{inputs.auth_token}} --repo ${{inputs.repo}}
        environment_variables: {HF_TOKEN: hf_s3cr3t, SEED: "7"}
        inputs:
          api_key: sk-from-default
          auth_token: placeholder
          repo: https://u5er:pa55@example.com/r.git
        """, sets=["environment_variables.DB_PWD=pw-from-set"], inputs=["auth_token=tok-from-input"])
    env = p.ranks[0].env
    assert {env["HF_TOKEN"], env["DB_PWD"], env["AMLDIST_IN_0_api_key"], env["AMLDIST_IN_1_auth_token"]} == {
        "hf_s3cr3t", "pw-from-set", "sk-from-default", "tok-from-input"}
    assert env["AMLDIST_IN_2_repo"] == "https://u5er:pa55@example.com/r.git"
    shown = describe(p, cwd=str(tmp_path))
    assert "SEED=7" in shown and "AMLDIST_IN_2_repo='https://***@example.com/r.git'" in shown
    for secret in SECRETS:
        assert secret not in shown and secret not in p.job_yaml, secret
    assert p.job_yaml.startswith(MASKED_HEADER)
    written = load_yaml(p.job_yaml).data
    assert written["environment_variables"] == {"HF_TOKEN": "***", "SEED": "7", "DB_PWD": "***"}
    assert written["inputs"]["api_key"] == "***" and written["inputs"]["repo"] == "https://***@example.com/r.git"


def test_a_job_without_secrets_writes_job_yml_without_the_header(tmp_path):
    p = make(tmp_path, "command: python worker.py --lr ${{inputs.lr}}\ninputs: {lr: 0.1}\n")
    assert not p.job_yaml.startswith("#") and load_yaml(p.job_yaml).data["inputs"] == {"lr": 0.1}


@pytest.mark.parametrize("command, reason", [
    ("python worker.py --msg \"$(echo '${{inputs.msg}}')\" | sh", "outside the grammar amldist proves safe"),
    ("echo $(( ${{inputs.msg}} + 1 ))", "in arithmetic"),
    ("bash -c \"python worker.py ${{inputs.msg}}\"", "bash is not on the list"),
    ("${{inputs.msg}} worker.py", "a program that is not a literal word"),
])
def test_a_refused_context_stops_the_plan_with_one_line_naming_the_input(tmp_path, command, reason):
    """A hostile value where the shell would read it as code (a benign one runs, see test_shell_command)."""
    with pytest.raises(UserError, match=r"command uses \$\{\{inputs\.msg\}\} .*" + re.escape(reason)) as info:
        make(tmp_path, f"command: >-\n  {command}\ninputs: {{msg: 'hello;x'}}\n")
    assert "hello" not in str(info.value) and not (tmp_path / "runs").exists()


def test_an_output_type_is_read_in_any_letter_case_as_azure_ai_ml_reads_it(tmp_path):
    """``type: URI_FILE`` passes validation, so the run makes its parent folder, not a folder at its path."""
    p = make(tmp_path, "command: echo hi > ${{outputs.o}}\noutputs: {o: {type: URI_FILE}, d: {}}\n")
    assert {name: kind for name, (_, kind) in p.outputs.items()} == {"o": "uri_file", "d": "uri_folder"}


def test_an_input_type_is_read_in_any_letter_case(tmp_path):
    """``type: URI_FILE`` on a folder is refused as ``uri_file`` is."""
    (tmp_path / "data").mkdir()
    with pytest.raises(UserError, match="is a uri_file but .* is a folder"):
        make(tmp_path, "command: cat ${{inputs.f}}\ninputs: {f: {type: URI_FILE, path: ./data}}\n")
