"""Validation as a library: ``check()`` owns the file loop, the CLI is ``check()`` plus a reporter, and
``validate_paths`` gives exactly what ``amldist validate`` gives for the same arguments."""

from __future__ import annotations

import io
import json

import pytest

from amldist.cli.validate import FORMATS
from amldist.errors import UserError
from amldist.validate import REPORTERS, check, validate_paths
from tests.validate.helpers import ROOT

JOB = "type: command\ncommand: python t.py\nenvironment: azureml:e:1\n"
BAD = JOB + "distribution:\n  type: pytorch\n  process_count_per_instance: 0\n"


def cli_json(cli, *argv):
    code, out, _ = cli("validate", "--format", "json", *argv)
    return code, json.loads(out)["diagnostics"]


def as_dicts(diagnostics):
    return [d.to_dict() for d in diagnostics]


def test_validate_paths_of_this_repository_equals_the_cli(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, shown = cli_json(cli, ".")
    found = validate_paths(["."])
    assert as_dicts(found) == shown
    assert (code == 0) == (not any(d.severity == "error" for d in found))


def test_validate_paths_honours_gitignore_as_the_cli_does(cli, tmp_path, monkeypatch):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "ok.yml").write_text(JOB)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "bad.yml").write_text(BAD)
    (tmp_path / "drafts.yml").write_text(BAD)
    (tmp_path / ".gitignore").write_text("build/\n")
    monkeypatch.chdir(tmp_path)
    code, shown = cli_json(cli, ".", "--exclude", "drafts.yml")
    assert code == 0 and shown == []
    assert validate_paths(["."], excludes=["drafts.yml"]) == []
    # without the ignore files the ignored file is checked again, by both
    code, shown = cli_json(cli, ".", "--no-ignore-files")
    found = validate_paths(["."], ignore_files=False)
    assert code == 1 and as_dicts(found) == shown
    assert {d.file for d in found} == {"./build/bad.yml", "./drafts.yml"}
    # a file named as a target is checked even when ignored
    assert {d.file for d in validate_paths(["build/bad.yml"])} == {"build/bad.yml"}


def test_each_file_is_checked_once_in_target_order(tmp_path, monkeypatch):
    (tmp_path / "a.yml").write_text(BAD)
    (tmp_path / "b.yml").write_text(JOB)
    monkeypatch.chdir(tmp_path)
    result = check(["b.yml", ".", "a.yml", "*.yml"])
    assert [one.file for one in result.files] == ["b.yml", "./a.yml"]
    assert result.count("error") == 1 and not result.ok() and result.exit_code() == 1
    assert result.summary() == "2 files, 1 errors, 0 warnings"


def test_standard_input_is_read_from_the_stream_given(tmp_path):
    result = check(["-"], stdin=io.BytesIO(BAD.encode()), stdin_name=str(tmp_path / "piped.yml"))
    [one] = result.files
    assert one.file == str(tmp_path / "piped.yml") and [d.code for d in one.diagnostics] == ["out-of-range"]
    [one] = check(["-"], stdin=io.BytesIO(b"\xff\xfe")).files
    assert one.file == "<stdin>" and one.diagnostics[0].code == "not-utf8"
    with pytest.raises(UserError):
        check(["-", "-"], stdin=io.BytesIO(b""))


def test_skip_non_specs_leaves_out_what_is_not_a_spec_even_when_named(tmp_path):
    (tmp_path / "conda.yml").write_text("name: env\ndependencies: [python]\n")
    assert check([tmp_path / "conda.yml"]).files[0].diagnostics[0].code == "not-a-spec"
    [one] = check([tmp_path / "conda.yml"], skip_non_specs=True).files
    assert one.diagnostics == ()


def test_a_bug_in_a_rule_is_an_internal_error_of_that_file_only(tmp_path, monkeypatch):
    (tmp_path / "a.yml").write_text(JOB)
    (tmp_path / "b.yml").write_text(BAD)
    import amldist.validate.checker as checker

    real = checker.validate_file

    def broken_for_a(path, *, explicit=True):
        if path.endswith("a.yml"):
            raise KeyError("boom")
        return real(path, explicit=explicit)

    monkeypatch.setattr(checker, "validate_file", broken_for_a)
    monkeypatch.delenv("AMLDIST_DEBUG", raising=False)
    first, second = check([tmp_path / "a.yml", tmp_path / "b.yml"]).files
    assert [d.code for d in first.diagnostics] == ["internal-error"] and "KeyError" in first.diagnostics[0].message
    assert [d.code for d in second.diagnostics] == ["out-of-range"]


def test_the_cli_formats_are_the_reporter_table():
    assert tuple(REPORTERS) == FORMATS
    result = check([ROOT / "tests" / "validate" / "fixtures" / "invalid" / "negative_counts.yml"])
    for name, reporter in REPORTERS.items():
        assert reporter().render(result), name
    assert REPORTERS["text"]().summary(result) == result.summary()
    assert all(REPORTERS[name]().summary(result) is None for name in ("json", "github", "sarif"))
