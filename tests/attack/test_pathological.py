"""Every pathological input class of the hardening issue, through the real ``amldist`` command.

Each run is a subprocess under a 2 GiB address-space cap and a time limit, so a
crash (SIGSEGV), a hang (a FIFO), or runaway memory (/dev/zero) fails the test
instead of the machine. Expected: exit 0/1/2, one clear line, never a traceback.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import pytest

from tests.attack.limits import amldist
from tests.conftest import ROOT

JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
type: command
command: python train.py
environment: azureml:env:1
code: .
compute: local
"""

LEGACY = """\
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: contoso.trainer
version: 0.0.1
type: DistributedComponent
code: .
environment:
  docker: {image: contoso/train:1}
launcher:
  type: torch.distributed
  additional_arguments: python train.py
"""

PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
jobs:
  train:
    component: {component}
"""

COMMANDS = [("validate",), ("submit", "--local", "--dry-run"), ("convert",)]


def _write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_25000_nested_brackets_are_refused_not_a_crash(tmp_path, command):
    path = _write(tmp_path, "deep.yml", "a: " + "[" * 25_000 + "]" * 25_000 + "\n")
    result = amldist(command[0], path, *command[1:])
    result.assert_clean(codes=(1,))
    assert "nesting deeper than 100 levels" in result.out + result.err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_fifo_named_yml_is_refused_by_name(tmp_path, command):
    fifo = tmp_path / "spec.yml"
    os.mkfifo(fifo)
    result = amldist(command[0], fifo, *command[1:], timeout=30)
    result.assert_clean(codes=(1,) if command[0] == "validate" else (2,))  # a FILE that is no file: usage (2)
    assert "FIFO" in result.out + result.err


def test_a_fifo_found_in_a_folder_does_not_block_validate(tmp_path):
    os.mkfifo(tmp_path / "pipe.yml")
    _write(tmp_path, "job.yml", JOB)
    result = amldist("validate", tmp_path, timeout=30)
    result.assert_clean(codes=(1,))
    assert f"{tmp_path / 'pipe.yml'}:0:0: error not-a-regular-file" in result.out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_symlink_to_dev_zero_is_refused(tmp_path, command):
    link = tmp_path / "zero.yml"
    os.symlink("/dev/zero", link)
    result = amldist(command[0], link, *command[1:], timeout=30)
    result.assert_clean(codes=(1,) if command[0] == "validate" else (2,))  # a FILE that is no file: usage (2)
    assert "character device" in result.out + result.err


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_pipeline_component_that_is_a_special_file(tmp_path, target):
    if target == "fifo":
        os.mkfifo(tmp_path / "comp.yml")
        target = "./comp.yml"
    path = _write(tmp_path, "pipeline.yml", PIPELINE.format(component=target))
    for command in (("validate",), ("submit", "--local", "--dry-run")):
        result = amldist(command[0], path, *command[1:], timeout=30)
        result.assert_clean(codes=(1, 2))
        assert "regular file" in result.out + result.err or "device" in result.out + result.err


def test_a_53_mb_spec_is_refused_at_once_in_little_memory(tmp_path):
    path = tmp_path / "huge.yml"
    with open(path, "w") as fh:
        fh.write(JOB + "environment_variables:\n")
        line = "  V{:08d}: " + "x" * 40 + "\n"
        fh.writelines(line.format(i) for i in range(1_000_000))
    assert path.stat().st_size > 50_000_000
    for command in COMMANDS:
        result = amldist(command[0], path, *command[1:], timeout=30)
        result.assert_clean(codes=(1,))
        assert "at most" in result.out + result.err and result.seconds < 10


def test_40000_unknown_keys_are_refused_quickly(tmp_path):
    path = _write(tmp_path, "keys.yml", JOB + "".join(f"unknown_{i}: 1\n" for i in range(40_000)))
    result = amldist("validate", path, timeout=30)
    result.assert_clean(codes=(1,))
    assert "yaml-too-many-keys" in result.out and result.seconds < 5


@pytest.mark.parametrize("extra, code", [
    ("resources:\n  instance_count: !!int abc\n", "yaml-bad-value"),
    ("resources:\n  instance_count: " + "1" * 5_000 + "\n", "yaml-int-too-long"),
    ("environment_variables:\n  'A=B': x\n", "invalid-format"),
    ("environment_variables:\n  A: \"x\\0y\"\n", "yaml-nul"),
    ("distribution:\n  type: pytorch\n  process_count_per_instance: 100000\n", "out-of-range"),
    ("resources:\n  instance_count: 1e400\n", "wrong-type"),
], ids=["bad-int-tag", "5000-digits", "env-name-with-=", "nul", "huge-count", "1e400"])
def test_bad_values_are_diagnostics_for_validate_and_submit(tmp_path, extra, code):
    path = _write(tmp_path, "job.yml", JOB + extra)
    result = amldist("validate", path)
    result.assert_clean(codes=(1,))
    assert f" error {code}: " in result.out
    result = amldist("submit", path, "--local", "--dry-run")
    result.assert_clean(codes=(1,))
    assert result.err.startswith((f"error: {path}:", f"{path}:"))  # the YAML error, or validate's diagnostics


def test_1000_nested_optional_groups(tmp_path):
    command = "python train.py " + "$[[--a ${{inputs.x}} " * 1_000 + "]]" * 1_000
    text = JOB.replace("command: python train.py", f"command: '{command}'") + \
        "inputs:\n  x: {type: integer, optional: true}\n"
    path = _write(tmp_path, "job.yml", text)
    for cmd in (("validate",), ("submit", "--local", "--dry-run")):
        result = amldist(cmd[0], path, *cmd[1:])
        result.assert_clean(codes=(1, 2))
        assert "nested more than" in result.out + result.err


def test_a_process_count_past_the_local_cap_starts_nothing(tmp_path):
    path = _write(tmp_path, "job.yml", JOB + "distribution:\n  type: pytorch\n  process_count_per_instance: 9999\n"
                  "resources:\n  instance_count: 9999\n")
    result = amldist("submit", path, "--local", "--dry-run", timeout=30)
    result.assert_clean(codes=(1, 2))
    assert "at most" in result.err and result.seconds < 10
    assert not (tmp_path / ".amldist").exists()


FORGED = "x.yml:1:1: error forged: fake"


@pytest.mark.parametrize("key", [f"evil\n{FORGED}", f"evil\r{FORGED}", "evil\x1b[2K\x1b[1Gfake", "evil\u2028x"])
def test_names_cannot_forge_lines_or_drive_the_terminal(tmp_path, key):
    import json

    path = _write(tmp_path, "job.yml", JOB + json.dumps(key) + ": 1\n")
    result = amldist("validate", path)
    result.assert_clean(codes=(1,))
    lines = result.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}:") and "\x1b" not in result.out
    assert not any(line.startswith("x.yml") for line in result.out.splitlines() + result.err.splitlines())


@pytest.mark.parametrize("name", ["a\nx.yml:1:1: error forged: fake.yml", "a\x1b[31m.yml"])
def test_file_names_with_newlines_or_escapes_are_escaped(tmp_path, name):
    path = _write(tmp_path, name, "type: command\ncommand: [unclosed\n")
    for command in (("validate",), ("submit", "--local", "--dry-run"), ("convert",)):
        result = amldist(command[0], path, *command[1:])
        result.assert_clean(codes=(1,))
        text = result.out + result.err
        assert "\x1b" not in text
        assert not any(line.startswith("x.yml") for line in text.splitlines())


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "FIFO"),
    (lambda p: os.mkdir(p), "folder"),
    (lambda p: os.symlink("/dev/null", p), "character device"),
])
def test_convert_output_must_be_a_regular_file_even_with_force(tmp_path, make, kind):
    legacy = _write(tmp_path, "legacy.yaml", LEGACY)
    out = tmp_path / "out.yaml"
    make(out)
    before = os.lstat(out)
    result = amldist("convert", legacy, "-o", out, "--force", timeout=30)
    result.assert_clean(codes=(2,))  # never replaced, even with --force: a usage mistake
    assert kind in result.err
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert sorted(os.listdir(tmp_path)) == ["legacy.yaml", "out.yaml"]


def test_convert_force_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    legacy = _write(tmp_path, "legacy.yaml", LEGACY)
    out = _write(tmp_path, "out.yaml", "old\n")
    os.chmod(out, 0o604)
    result = amldist("convert", legacy, "-o", out, "--force")
    result.assert_clean(codes=(0,))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o604 and "type: command" in out.read_text()
    result = amldist("convert", legacy, "-o", out)  # without --force an existing file is kept
    result.assert_clean(codes=(2,))
    assert "--force" in result.err


def test_sigint_during_a_long_validate_exits_130_without_a_traceback(tmp_path):
    for i in range(400):
        _write(tmp_path, f"job_{i:03d}.yml", JOB + "".join(f"unknown_{j}: 1\n" for j in range(200)))
    proc = subprocess.Popen([sys.executable, "-m", "amldist", "validate", tmp_path], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        import time

        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode in (130, 0, 1), err  # 0/1 only when it finished before the signal
    assert "Traceback" not in err


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    path = _write(tmp_path, "keys.yml", JOB + "".join(f"unknown_{i}: 1\n" for i in range(3_000)))
    proc = subprocess.Popen(f"{sys.executable} -m amldist validate {path} | head -1", shell=True, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert len(out.splitlines()) == 1 and "Traceback" not in err, err
