"""Issue 17 points 2 and 8 through the real ``amldist``: no name or link makes amldist write outside the
run folder or ``-o DIR``; names with a newline are refused; every refusal is one line."""

from __future__ import annotations

import os

import pytest

from amldist.model.files import FileProblem, create_file, inside, make_folder
from tests.attack.limits import amldist

JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
type: command
command: echo hi
environment: azureml:env:1
code: .
"""
LEGACY = """\
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: contoso.trainer
version: 0.0.1
type: DistributedComponent
environment:
  docker: {image: contoso/train:1}
launcher:
  type: torch.distributed
  additional_arguments: python train.py
"""
BAD_NAMES = ["../../../../escaped", "../escaped", "a/b", "..", "/tmp/abs", "sp ace", "1starts_with_digit"]
FAST_NAMES = BAD_NAMES[:2]  # the CI tier; --attack-long tries them all


def _project(tmp_path, text):
    project = tmp_path / "deep" / "er" / "project"
    project.mkdir(parents=True)
    (project / "job.yml").write_text(text, encoding="utf-8")
    return project


def _everything_under(folder) -> set[str]:
    return {os.path.relpath(os.path.join(here, name), folder)
            for here, dirs, files in os.walk(folder) for name in dirs + files}


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("section", ["outputs", "inputs"])
def test_an_io_name_that_is_not_a_name_is_refused_everywhere(tmp_path, name, section, attack_long):
    if name not in FAST_NAMES and not attack_long:
        pytest.skip("long tier (--attack-long)")
    value = "{type: uri_folder}" if section == "outputs" else "'1'"
    project = _project(tmp_path, JOB + f"{section}:\n  {name!r}: {value}\n".replace("'", '"'))
    before = _everything_under(tmp_path)
    for args in (("validate", "job.yml"), ("submit", "job.yml", "--local", "--dry-run"),
                 ("submit", "job.yml", "--local"), ("submit", "job.yml", "--dry-run")):
        result = amldist(*args, cwd=project)
        result.assert_clean(codes=(1,))
        assert "is not a name of letters, digits and _" in result.out + result.err, args
    assert _everything_under(tmp_path) == before  # nothing created, outside or inside


def test_a_legacy_output_name_cannot_leave_the_run_folder(tmp_path):
    project = _project(tmp_path, LEGACY + "outputs:\n  ../../../../escaped_legacy: {type: path}\n")
    before = _everything_under(tmp_path)
    for args in (("validate", "job.yml"), ("submit", "job.yml", "--local")):
        amldist(*args, cwd=project).assert_clean(codes=(1,))
    assert _everything_under(tmp_path) == before


def test_the_run_folders_gitignore_is_written_only_in_dot_amldist_and_never_through_a_link(tmp_path):
    project = _project(tmp_path, JOB)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (project / ".amldist").mkdir()
    os.symlink(victim, project / ".amldist" / ".gitignore")
    amldist("submit", "job.yml", "--local", cwd=project).assert_clean(codes=(0,))
    assert victim.read_text() == "mine\n"  # the planted link was not written through
    found = [os.path.relpath(os.path.join(here, ".gitignore"), project)
             for here, _, files in os.walk(tmp_path) if ".gitignore" in files]
    assert found == [os.path.join(".amldist", ".gitignore")]  # the planted link itself, and nothing else
    os.unlink(project / ".amldist" / ".gitignore")
    amldist("submit", "job.yml", "--local", cwd=project).assert_clean(codes=(0,))
    assert (project / ".amldist" / ".gitignore").read_text().endswith("*\n")
    assert not (project / ".gitignore").exists() and not (project / ".amldist" / "runs" / ".gitignore").exists()


def test_the_inside_check_resolves_dots_and_links(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    os.symlink(tmp_path, root / "up")
    assert inside(root, root / "a" / "b") == str(root / "a" / "b")
    for escape in (root / ".." / "x", root / "up" / "x", tmp_path / "runner", "/etc/passwd"):
        with pytest.raises(FileProblem, match="outside"):
            inside(root, escape)
    with pytest.raises(FileProblem, match="outside"):
        make_folder(root, root / "up" / "made")
    assert not (tmp_path / "made").exists()
    os.symlink(tmp_path / "target.txt", root / "planted")
    assert create_file(root, root / "planted", "x") is False and not (tmp_path / "target.txt").exists()


def _finished_run(project, command):
    (project / "job.yml").write_text(JOB.replace("echo hi", command)
                                     + "outputs:\n  out: {type: uri_folder}\n", encoding="utf-8")
    amldist("submit", "job.yml", "--local", "--name", "made", cwd=project).assert_clean(codes=(0,))


def test_download_copies_self_links_as_links_and_never_writes_through_the_destination(tmp_path):
    project = _project(tmp_path, JOB)
    _finished_run(project, "cd ${{outputs.out}} && ln -s a b && ln -s b a && ln -s / root && mkdir d && "
                           "echo hi > d/f && ln -s .. d/up && mkfifo fifo")
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = project / "dl"
    (dest / "named-outputs" / "out").mkdir(parents=True)
    os.symlink(outside, dest / "named-outputs" / "out" / "d")  # planted: d/f must not land in outside/
    result = amldist("job", "download", "made", "--local", "--all", "-o", "dl", cwd=project, timeout=30)
    result.assert_clean(codes=(0,))
    out = dest / "named-outputs" / "out"
    assert os.readlink(out / "a") == "b" and os.readlink(out / "b") == "a" and os.readlink(out / "root") == "/"
    assert (out / "d" / "f").read_text() == "hi\n" and not os.path.islink(out / "d")
    assert os.listdir(outside) == [] and not (out / "fifo").exists()
    target = project / "a_file"
    target.write_text("x")
    again = amldist("job", "download", "made", "--local", "-o", "a_file", cwd=project)
    again.assert_clean(codes=(1, 2))
    assert len(again.err.strip().splitlines()) <= 2 and target.read_text() == "x"


@pytest.mark.parametrize("name", ["abc\n", "abc\r", "a\x1b[31mb", "a b", "-x", "a" * 256])
def test_job_names_with_newlines_or_escapes_are_refused_with_one_escaped_line(tmp_path, name):
    project = _project(tmp_path, JOB)
    for args in (("submit", "job.yml", "--local", "--dry-run", "--name", name),
                 ("submit", "job.yml", "--dry-run", "--name", name),
                 ("submit", "job.yml", "--local", "--dry-run", "--set", f"name={name!r}")):
        result = amldist(*args, cwd=project)
        result.assert_clean(codes=(1, 2))
        assert "\x1b" not in result.err + result.out and "\r" not in result.err + result.out, args
        errors = [line for line in result.err.splitlines() if line.startswith("error:")]
        assert len(errors) <= 1, result.err


@pytest.mark.parametrize("name", ["evil\x1b[31mred", "two\nlines"])
def test_job_verbs_print_hostile_run_folder_names_escaped(tmp_path, name):
    project = _project(tmp_path, JOB)
    (project / ".amldist" / "runs" / name).mkdir(parents=True)
    for args in (("job", "list", "--local"), ("job", "show", name, "--local"), ("job", "logs", name, "--local"),
                 ("job", "cancel", name, "--local"), ("job", "download", name, "--local", "-o", "dl")):
        result = amldist(*args, cwd=project, timeout=30)
        result.assert_clean()
        assert "\x1b" not in result.out + result.err, args
        assert all(not line.startswith("lines") for line in (result.out + result.err).splitlines()), args


LEAF = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
name: leaf
version: 1
type: command
command: echo hi
environment: azureml:env:1
"""


def _nested(tmp_path, levels: int, fan_out: int, step_name: str = "s{i}"):
    (tmp_path / "c0.yml").write_text(LEAF)
    for level in range(1, levels + 1):
        kind = "    type: pipeline\n" if level > 1 else ""
        jobs = "".join(f"  {step_name.format(i=i)}:\n{kind}    component: ./c{level - 1}.yml\n" for i in range(fan_out))
        (tmp_path / f"c{level}.yml").write_text(
            "$schema: https://azuremlschemas.azureedge.net/latest/pipelineComponent.schema.json\n"
            f"name: p{level}\nversion: 1\ntype: pipeline\njobs:\n{jobs}")
    (tmp_path / "pipeline.yml").write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json\ntype: pipeline\n"
        f"jobs:\n  top:\n    type: pipeline\n    component: ./c{levels}.yml\n")


def test_nested_pipeline_fan_out_is_bounded_in_seconds_and_memory(tmp_path):
    _nested(tmp_path, levels=8, fan_out=4)  # 65,536 steps if expanded
    for args in (("validate", "pipeline.yml"), ("submit", "pipeline.yml", "--local", "--dry-run"),
                 ("submit", "pipeline.yml", "--dry-run")):
        result = amldist(*args, cwd=tmp_path, timeout=60)
        result.assert_clean(codes=(1,))
        assert result.seconds < 30 and "too-many-steps" in result.out + result.err, args


def test_a_nested_step_named_to_escape_is_refused_and_creates_nothing(tmp_path):
    project = tmp_path / "a" / "b" / "project"
    project.mkdir(parents=True)
    _nested(project, levels=1, fan_out=1, step_name="../../escaped_step")
    before = _everything_under(tmp_path)
    for args in (("validate", "pipeline.yml"), ("submit", "pipeline.yml", "--local"),
                 ("submit", "pipeline.yml", "--dry-run")):
        amldist(*args, cwd=project, timeout=60).assert_clean(codes=(1,))
    assert _everything_under(tmp_path) == before
