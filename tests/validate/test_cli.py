"""``amldist validate`` end to end: exit codes, formats, discovery, YAML trouble."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.validate.helpers import FIXTURES, expectations, fixture_files, run_cli

LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note) (?P<code>[a-z0-9-]+): (?P<msg>.+)$")
GOOD_JOB = "type: command\ncommand: echo hi\nenvironment: azureml:env:1\n"


def parse(out: str):
    found = []
    for line in out.splitlines():
        match = LINE.match(line)
        assert match, f"not a diagnostic line: {line!r}"
        found.append(match.groupdict())
    return found


def test_valid_fixtures_pass(cli):
    code, out, err = cli("validate", str(FIXTURES / "valid"))
    assert code == 0, out
    assert not [d for d in parse(out) if d["sev"] == "error"]
    assert re.search(r"^\d+ files, 0 errors, \d+ warnings", err, re.M)


@pytest.mark.parametrize("path", fixture_files("invalid"), ids=lambda p: p.name)
def test_invalid_fixture_reports_what_its_header_expects(cli, path):
    expected = expectations(path)
    assert expected, f"{path.name} has no '# expect:' line"
    code, out, _ = cli("validate", "--format", "json", str(path))
    report = json.loads(out)
    found = {(d["code"], d["field"]) for d in report["diagnostics"]}
    assert expected <= found, report["diagnostics"]
    assert code == (1 if any(d["severity"] == "error" for d in report["diagnostics"]) else 0)
    assert code == 1
    for d in report["diagnostics"]:
        if d["field"] and d["code"] != "duplicate-key":
            assert d["field"].split(".")[-1] in d["message"], d  # the message names the field
        assert d["line"] >= 1 and d["col"] >= 1, d


def test_text_lines_have_file_line_col_severity_code(cli, tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(GOOD_JOB + "resources:\n  instance_count: 2\n  instnce_type: Standard_NC6s_v3\n")
    code, out, err = cli("validate", str(spec))
    assert code == 1
    [d] = parse(out)
    assert (d["file"], d["line"], d["col"], d["sev"], d["code"]) == (str(spec), "6", "3", "error", "unknown-key")
    assert "instnce_type" in d["msg"] and "(hint: did you mean 'instance_type'?)" in d["msg"]
    assert "1 files, 1 errors, 0 warnings" in err


@pytest.mark.parametrize("argv,needle", [
    ((), "no paths"),
    (("does/not/exist.yml",), "does not exist"),
    (("--format", "xml", "x.yml"), "invalid choice"),
    (("nothing-matches-*.yml",), "no YAML file or folder matches"),
    (("*.txt",), "no YAML file or folder matches"),
])
def test_usage_errors_exit_2(cli, argv, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("a: 1\n")
    code, out, err = cli("validate", *argv)
    assert code == 2 and needle in err and out == ""


def test_strict_makes_warnings_fail(cli, tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(GOOD_JOB + "code: ./not-there\n")
    code, out, _ = cli("validate", str(spec))
    assert code == 0 and "warning missing-code" in out
    code, _, _ = cli("validate", "--strict", str(spec))
    assert code == 1


def test_github_format(cli, tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(GOOD_JOB + "code: ./not-there\nlimits:\n  timeout: -5\n")
    code, out, _ = cli("validate", "--format", "github", str(spec))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2
    assert lines[0].startswith(f"::warning file={spec},line=4,col=1,title=missing-code::code%3A") is False
    assert lines[0].startswith(f"::warning file={spec},line=4,col=1,title=missing-code::code: ")
    assert lines[1].startswith(f"::error file={spec},line=6,col=3,title=out-of-range::limits.timeout: must be > 0")


def test_json_format_names_every_file(cli, tmp_path):
    (tmp_path / "a.yml").write_text(GOOD_JOB)
    (tmp_path / "b.yml").write_text(GOOD_JOB.replace("echo hi", "echo ${{inputs.x}}"))
    code, out, _ = cli("validate", "--format", "json", str(tmp_path))
    report = json.loads(out)
    assert code == 1
    assert [(f["file"], f["ok"]) for f in report["files"]] == [
        (str(tmp_path / "a.yml"), True), (str(tmp_path / "b.yml"), False)]
    assert report["summary"] == {"files": 2, "errors": 1, "warnings": 0, "notes": 0}
    assert report["diagnostics"][0]["code"] == "undeclared-input"


def test_folders_are_searched_recursively_and_non_specs_are_noted(cli, tmp_path):
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "job.yaml").write_text(GOOD_JOB)
    (tmp_path / "compose.yml").write_text("services:\n  web:\n    image: nginx\n")
    (tmp_path / "empty.yml").write_text("")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "bad.yml").write_text("a: [")
    (tmp_path / "notes.txt").write_text("a: [")
    code, out, err = cli("validate", str(tmp_path))
    found = parse(out)
    assert code == 0
    assert {(os.path.basename(d["file"]), d["sev"], d["code"]) for d in found} == {
        ("compose.yml", "note", "not-a-spec"), ("empty.yml", "note", "empty-file")}
    assert "3 files, 0 errors, 0 warnings, 2 notes" in err


def test_a_specs_companions_in_a_folder_get_no_note(cli, tmp_path):
    """conda environments and pre-commit's files sit beside specs: `validate .` says nothing of them (a compose
    file is still noted; named on the line, a conda file is still no spec)."""
    (tmp_path / "conda.yml").write_text("name: env\nchannels: [conda-forge]\ndependencies: [python=3.11, pip]\n")
    (tmp_path / ".pre-commit-hooks.yaml").write_text("- id: check\n  name: check\n  entry: check\n"
                                                     "  language: python\n")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos:\n- repo: local\n  hooks: []\n")
    (tmp_path / "compose.yml").write_text("services: {}\n")
    code, out, err = cli("validate", str(tmp_path), "--no-ignore-files")
    assert code == 0 and [os.path.basename(d["file"]) for d in parse(out)] == ["compose.yml"], out
    code, out, _ = cli("validate", str(tmp_path / "conda.yml"))
    assert code == 1 and "error not-a-spec" in out


def test_a_non_spec_named_explicitly_is_an_error_unless_skipped(cli, tmp_path):
    other = tmp_path / "compose.yml"
    other.write_text("services: {}\n")
    code, out, _ = cli("validate", str(other))
    assert code == 1 and "error not-a-spec" in out
    code, out, err = cli("validate", "--skip-non-specs", str(other))
    assert code == 0 and out == "" and "1 files, 0 errors, 0 warnings\n" in err  # skipped silently


def test_skip_non_specs_is_silent_for_kinds_amldist_does_not_validate(cli, tmp_path):
    model = tmp_path / "model.yml"
    model.write_text("$schema: https://azuremlschemas.azureedge.net/latest/model.schema.json\nname: m\npath: ./x\n")
    code, out, _ = cli("validate", str(model))
    assert code == 0 and "note skipped-kind" in out  # without the option: a note says it was skipped
    code, out, _ = cli("validate", "--skip-non-specs", "--format", "json", str(model), str(tmp_path))
    assert code == 0 and json.loads(out)["diagnostics"] == []


def test_globs_are_expanded(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("specs/a")
    (tmp_path / "specs/a/job.yml").write_text(GOOD_JOB.replace("echo hi", "echo ${{inputs.nope}}"))
    (tmp_path / "specs/top.yaml").write_text(GOOD_JOB)
    code, out, _ = cli("validate", "--format", "json", "specs/**/*.yml", "specs/*.yaml")
    files = [f["file"] for f in json.loads(out)["files"]]
    assert code == 1 and files == ["specs/a/job.yml", "specs/top.yaml"]


@pytest.mark.parametrize("text,code,line", [
    ("type: command\ncommand: [unclosed\n", "yaml-syntax", 3),
    ("type: command\ncommand: a\ncommand: b\n", "duplicate-key", 3),
    ("type: command\ncommand: !!python/object/apply:os.system ['echo pwned']\n", "yaml-unsafe-tag", 2),
    ("type: command\n---\ntype: command\n", "yaml-multiple-documents", 2),
    ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e]\n",
     "yaml-too-large", None),
    ("", "empty-file", 1),
    ("# only a comment\n", "empty-file", 1),
    ("just a string\n", "not-a-spec", 1),
])
def test_yaml_trouble_is_a_diagnostic(cli, tmp_path, text, code, line):
    spec = tmp_path / "spec.yml"
    spec.write_text(text)
    exit_code, out, err = cli("validate", str(spec))
    [d] = parse(out)
    assert exit_code == 1 and d["code"] == code and d["sev"] == "error", out
    if line is not None:
        assert int(d["line"]) == line
    assert "Traceback" not in err


def test_undecodable_and_unreadable_files(cli, tmp_path):
    (tmp_path / "latin1.yml").write_bytes(b"type: command\ncommand: caf\xe9\n")
    (tmp_path / "dangling.yml").symlink_to(tmp_path / "gone.yml")
    (tmp_path / "bom.yml").write_bytes(b"\xef\xbb\xbf" + GOOD_JOB.encode())
    code, out, _ = cli("validate", str(tmp_path))
    found = {os.path.basename(d["file"]): (d["code"], d["line"]) for d in parse(out)}
    assert code == 1 and found == {"latin1.yml": ("not-utf8", "2"), "dangling.yml": ("missing", "0")}


def test_real_console_script_in_a_subprocess(tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(GOOD_JOB + "distribution:\n  type: torch.distributed\n")
    code, out, err = run_cli("validate", spec)
    assert code == 1
    assert "distribution.type" in out and "did you mean 'pytorch'?" in out and "pytorch` in v2" in out
    assert err.strip() == "1 files, 1 errors, 0 warnings"


def test_github_annotations_escape_terminal_characters_and_newlines():
    from amldist.diagnostics import Diagnostic
    from amldist.validate.reporter import github

    line = github(Diagnostic("a\x1b[31m.yml", 1, 1, "error", "x", "bad \x1b]0;title\x07 key\nerror file=forged"))
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line
    assert line.startswith("::error file=a\\x1b[31m.yml,line=1,col=1,title=x::")
