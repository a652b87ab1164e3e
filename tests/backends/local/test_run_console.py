"""The local run's own lines: a progress line while a large code folder is copied, and the end of a run (rank 0's
last lines or the failing rank's, the `amldist job logs` command, one duration)."""

from __future__ import annotations

import io
import os
import re
import subprocess

from amldist.backends.local import run_console
from amldist.engine.code_copy import copy_code
from amldist.backends.local.run_console import CopyProgress, logs_command

from tests.backends.local.helpers import amldist_cmd, write_job
from tests.conftest import ROOT


def folder_of(tmp_path, files: int):
    source = tmp_path / "code"
    source.mkdir()
    for i in range(files):
        (source / f"f{i}.txt").write_text("x" * 100)
    return source


def test_a_large_folder_gets_one_start_and_one_end_line_in_a_log(tmp_path, monkeypatch):
    monkeypatch.setattr(run_console, "LARGE_FILES", 3)
    stream = io.StringIO()
    progress = CopyProgress("code", stream, interactive=False)
    assert copy_code(str(folder_of(tmp_path, 6)), str(tmp_path / "copy"), progress=progress) == 6
    progress.done()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("copying the code folder code into the run")
    assert re.fullmatch(r"copying code: 6 files, 0\.0 MB, done in \d+\.\ds", lines[1])


def test_on_a_terminal_the_line_is_rewritten_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr(run_console, "LARGE_FILES", 3)
    monkeypatch.setattr(run_console, "EVERY_SECONDS", 0.0)
    stream = io.StringIO()
    progress = CopyProgress("code", stream, interactive=True)
    copy_code(str(folder_of(tmp_path, 5)), str(tmp_path / "copy"), progress=progress)
    progress.done()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.count("\r\x1b[K") == 4  # files 3, 4, 5, then done
    assert "copying code: 5 files" in text.rsplit("\r", 1)[1]


def test_a_small_folder_prints_nothing(tmp_path):
    stream = io.StringIO()
    progress = CopyProgress("code", stream, interactive=False)
    copy_code(str(folder_of(tmp_path, 3)), str(tmp_path / "copy"), progress=progress)
    progress.done()
    assert stream.getvalue() == ""


def test_the_logs_command_finds_the_run_from_here(tmp_path):
    default = tmp_path / ".amldist" / "runs" / "job1"
    assert logs_command("job1", str(default), cwd=str(tmp_path)) == "amldist job logs job1"
    step = tmp_path / ".amldist" / "runs" / "pipe1" / "train"
    assert logs_command("train", str(step), cwd=str(tmp_path)) == "amldist job logs pipe1 --step train"
    other = tmp_path / "elsewhere" / "job1"
    assert logs_command("job1", str(other), rank=2, cwd=str(tmp_path)) == \
        "amldist job logs job1 --run-root elsewhere --rank 2"


def submit(tmp_path, body: str, name: str) -> subprocess.CompletedProcess:
    path = write_job(tmp_path, body)
    return subprocess.run(amldist_cmd("submit", str(path), "--local", "--name", name), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_completed_run_ends_with_rank_0s_last_lines_one_duration_and_the_logs_command(tmp_path):
    done = submit(tmp_path, """
        command: python -c "import os; print('trained on rank', os.environ['RANK'])"
        distribution: {type: pytorch, process_count_per_instance: 2}
        """, "fine")
    assert done.returncode == 0, done.stderr
    end = done.stdout.split("--- last lines of rank 0's log", 1)[1].splitlines()
    assert end[1:] == ["trained on rank 0", "every rank's log: amldist job logs fine"]
    assert len(re.findall(r"\d+\.\ds", done.stdout + done.stderr)) == 1  # one duration: the status line's


def test_a_failed_run_ends_with_the_failing_ranks_lines_and_its_logs_command(tmp_path):
    done = submit(tmp_path, """
        command: python -c "import os, sys; print('rank', os.environ['RANK'], 'gives up'); sys.exit(int(os.environ['RANK']) == 1)"
        distribution: {type: pytorch, process_count_per_instance: 2}
        """, "broken")
    assert done.returncode == 1
    assert "rank 1 gives up" in done.stderr
    assert ("that rank's whole log: amldist job logs broken --rank 1\n"
            "every rank's log: amldist job logs broken\n") in done.stderr
