"""``amldist validate`` in CI: --exclude, .gitignore/.amlignore, standard input, and the import cost.

Real folders and files; standard input and the import checks go through a real subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.validate.helpers import ROOT

GOOD = "type: command\ncommand: echo hi\nenvironment: azureml:env:1\n"
BAD = "type: command\ncommand: echo ${{inputs.nope}}\nenvironment: azureml:env:1\n"


def tree(base, files: dict):
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def validated(cli, *argv) -> tuple[int, list[str]]:
    code, out, _ = cli("validate", "--format", "json", *argv)
    return code, [f["file"] for f in json.loads(out)["files"]]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    tree(tmp_path, {"jobs/train.yml": GOOD, "tests/fixtures/broken.yml": BAD, "tests/fixtures/deep/also.yml": BAD,
                    "jobs/draft.tmp.yml": BAD})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_exclude_leaves_out_what_it_matches_and_repeats(cli, repo):
    assert validated(cli, ".")[0] == 1
    code, files = validated(cli, "--exclude", "tests/", "--exclude", "*.tmp.yml", ".")
    assert (code, files) == (0, ["./jobs/train.yml"])


@pytest.mark.parametrize("pattern", ["tests/", "tests/**", "**/fixtures/**", "fixtures", "/tests"])
def test_exclude_reads_gitignore_syntax(cli, repo, pattern):
    assert validated(cli, "--exclude", pattern, "--exclude", "*.tmp.yml", ".") == (0, ["./jobs/train.yml"])


def test_exclude_matches_relative_to_the_walked_folder_too(cli, repo):
    # from elsewhere, 'fixtures/deep' is under the argument folder, not under the current one
    os.chdir(repo / "jobs")
    code, files = validated(cli, "--exclude", "/fixtures/deep", str(repo / "tests"))
    assert files == [str(repo / "tests/fixtures/broken.yml")]


def test_a_file_named_on_the_command_line_is_always_validated(cli, repo):
    (repo / ".gitignore").write_text("tests/\n")
    code, files = validated(cli, "--exclude", "tests/", "tests/fixtures/broken.yml")
    assert (code, files) == (1, ["tests/fixtures/broken.yml"])


@pytest.mark.parametrize("ignore_file", [".gitignore", ".amlignore"])
def test_ignore_files_at_the_walked_folder_are_honoured(cli, repo, ignore_file):
    (repo / ignore_file).write_text("# fixtures are invalid on purpose\ntests/\n*.tmp.yml\n")
    assert validated(cli, ".") == (0, ["./jobs/train.yml"])
    assert validated(cli, "--no-ignore-files", ".")[0] == 1


def test_ignore_file_negation_and_a_glob_root(cli, repo):
    (repo / "tests" / ".gitignore").write_text("fixtures/**\n!fixtures/deep/also.yml\n")
    code, files = validated(cli, "tests/**/*.yml")  # the glob's literal folder is the walked root
    assert (code, files) == (1, ["tests/fixtures/deep/also.yml"])


def test_ignore_files_below_the_walked_folder_are_not_read(cli, repo):
    (repo / "tests" / ".gitignore").write_text("fixtures/\n")
    assert validated(cli, "--exclude", "*.tmp.yml", ".")[1] == [
        "./jobs/train.yml", "./tests/fixtures/broken.yml", "./tests/fixtures/deep/also.yml"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_gitignore_is_not_opened(repo):
    os.mkfifo(repo / ".gitignore")  # opening it would block until a writer comes
    proc = subprocess.run([sys.executable, "-m", "amldist", "validate", "jobs"], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "draft.tmp.yml" in proc.stdout


def run(*argv, stdin: bytes = b"", cwd=ROOT):
    proc = subprocess.run([sys.executable, *argv], input=stdin, capture_output=True, timeout=120, cwd=cwd)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_dash_reads_one_document_from_standard_input():
    code, out, err = run("-m", "amldist", "validate", "-", stdin=BAD.encode())
    assert code == 1 and out.startswith("<stdin>:2:15: error undeclared-input: command: uses '${{inputs.nope}}'")
    assert "1 files, 1 errors" in err
    assert run("-m", "amldist", "validate", "-", stdin=GOOD.encode())[0] == 0


def test_stdin_name_names_it_and_places_relative_paths(tmp_path):
    (tmp_path / "specs" / "src").mkdir(parents=True)
    spec = GOOD + "code: ./src\n"
    code, out, _ = run("-m", "amldist", "validate", "--stdin-name", "specs/job.yml", "-", stdin=spec.encode(),
                       cwd=tmp_path)
    assert (code, out) == (0, "")  # ./src found next to specs/job.yml
    code, out, _ = run("-m", "amldist", "validate", "-", stdin=spec.encode(), cwd=tmp_path)
    # read from the current folder, ./src is not there
    assert out.startswith("<stdin>:4:1: warning missing-code: code: './src' does not exist")


def test_stdin_mixes_with_files_and_reports_trouble_as_diagnostics(tmp_path):
    (tmp_path / "a.yml").write_text(GOOD)
    code, out, _ = run("-m", "amldist", "validate", "--format", "json", str(tmp_path / "a.yml"), "-",
                       stdin=b"type: command\ncommand: \xff\n")
    report = json.loads(out)
    assert code == 1 and [f["file"] for f in report["files"]] == [str(tmp_path / "a.yml"), "<stdin>"]
    assert [(d["file"], d["line"], d["code"]) for d in report["diagnostics"]] == [("<stdin>", 2, "not-utf8")]


def test_stdin_twice_is_a_usage_error():
    code, out, err = run("-m", "amldist", "validate", "-", "-")
    assert (code, out) == (2, "") and "'-' (standard input) is given more than once" in err


def test_skip_non_specs_applies_to_stdin():
    code, out, _ = run("-m", "amldist", "validate", "--skip-non-specs", "-", stdin=b"services: {}\n")
    assert (code, out) == (0, "")


def imported(*argv, cwd=ROOT) -> str:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "amldist", "validate", *argv],
                          capture_output=True, text=True, timeout=120, cwd=cwd)
    return proc.stderr


def test_pathspec_is_imported_only_when_there_is_a_pattern(tmp_path):
    tree(tmp_path, {"specs/job.yml": GOOD})
    assert "pathspec" not in imported("specs/job.yml", cwd=tmp_path)
    assert "pathspec" not in imported("specs", cwd=tmp_path)  # a folder without ignore files
    assert "pathspec" in imported("--exclude", "x.yml", "specs", cwd=tmp_path)
    (tmp_path / "specs" / ".gitignore").write_text("*.tmp.yml\n")
    assert "pathspec" in imported("specs", cwd=tmp_path)
