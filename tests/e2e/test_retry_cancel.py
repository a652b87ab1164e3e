"""``amldist job cancel`` while ``amldist submit --local --retry N`` runs: whichever attempt is named, the attempt
running is canceled and no further attempt starts, also when the cancel lands between two attempts (while the loop
diagnoses the failed one, or after it decided to retry and before the next one runs); nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.backends.local.helpers import ROOT, amldist_cmd, survivors, write_job

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
RETRIES_CANCELED = "the retries were canceled by 'amldist job cancel'"

# Each rank records its pid and a sleeping child's under its job's name (AZUREML_RUN_ID: the attempt), then sleeps;
# the drill kills the first attempt's rank, the later attempts sleep until they are canceled.
SCRIPT = r'''
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
out = os.path.join(os.environ["PID_DIR"], os.environ["AZUREML_RUN_ID"])
with open(out + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}\n")
os.replace(out + ".tmp", out + ".pids")
time.sleep(120)
'''


def sleeping_job(folder: Path) -> Path:
    path = write_job(folder, f"""
        command: python sleeper.py
        environment_variables:
          PID_DIR: {folder / 'pids'}
        distribution: {{type: pytorch, process_count_per_instance: 1}}
        resources: {{instance_count: 1}}
        """)
    (folder / "src" / "sleeper.py").write_text(SCRIPT)
    return path


def amldist(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``amldist ARGS`` from another terminal."""
    return subprocess.run(amldist_cmd(*args), cwd=folder, capture_output=True, text=True, env=ENV, timeout=120)


def wait_for(path: Path, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)
    return [int(pid) for pid in path.read_text().split()]


def left_running(folder: Path) -> list[int]:
    """Every process (but this test's) whose working folder lies in ``folder``: the runs' ranks and their children
    run in their run folders, so a process the runs left behind is one of them."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(folder)):
                    found.append(int(entry))
            except OSError:
                continue
    return survivors(found, timeout=5)


def status(folder: Path, name: str) -> dict:
    return json.loads((folder / ".amldist" / "runs" / name / "status.json").read_text())


def run_names(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / ".amldist" / "runs").iterdir())


@pytest.mark.parametrize("named", ["r", "r-attempt2"])
def test_cancel_of_any_attempt_during_a_retry_cancels_it_and_no_attempt_follows(tmp_path, named):
    path = sleeping_job(tmp_path)
    submit = subprocess.Popen(amldist_cmd("submit", str(path), "--local", "--name", "r", "--inject",
                                          "kill:rank=0,after=1", "--retry", "2"),
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    pids = []
    try:
        pids += wait_for(tmp_path / "pids" / "r.pids")
        pids += wait_for(tmp_path / "pids" / "r-attempt2.pids")  # attempt 2 runs; the budget allows a third
        canceled = amldist(tmp_path, "job", "cancel", named)
        _out, err = submit.communicate(timeout=60)
    finally:
        if submit.poll() is None:
            submit.kill()
        gone = survivors(pids)
    assert canceled.returncode == 0, canceled.stderr
    assert canceled.stdout.splitlines() == ["job r-attempt2: Canceled",
                                            f"job {named}: its retries are canceled; no further attempt starts"]
    assert submit.returncode == 143, err[-2000:]  # the canceled exit code: `job cancel` is a SIGTERM
    assert f"{RETRIES_CANCELED}: r-attempt2 was stopped and no further attempt starts" in err
    assert run_names(tmp_path) == ["r", "r-attempt2"]
    second = status(tmp_path, "r-attempt2")
    assert (second["status"], second["stopped_by"]) == ("Canceled", "amldist job cancel")
    assert gone == [] and left_running(tmp_path) == []
    again = amldist(tmp_path, "job", "cancel", named)  # the retries are over: nothing is left to stop
    assert again.returncode == 0 and "nothing to cancel" in again.stderr and "retries" not in again.stdout


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cancel_from_another_terminal(folder: Path, seen: list):
    """Run ``amldist job cancel r`` (a real other process) once, and keep what it printed."""
    if not seen:
        seen.append(amldist(folder, "job", "cancel", "r"))


def test_a_cancel_while_the_loop_diagnoses_the_failed_attempt_starts_no_next_attempt(cli, here, monkeypatch):
    from amldist.diagnosis import retry

    seen: list = []
    diagnose = retry.diagnosed_failure

    def cancel_then_diagnose(backend, record):  # the gap made observable: the cancel lands during the diagnosis
        cancel_from_another_terminal(here, seen)
        return diagnose(backend, record)

    monkeypatch.setattr(retry, "diagnosed_failure", cancel_then_diagnose)
    code, _out, err = cli("submit", str(sleeping_job(here)), "--local", "--name", "r", "--inject",
                          "kill:rank=0,after=1", "--retry", "2")
    assert seen[0].returncode == 0, seen[0].stderr
    assert seen[0].stdout.splitlines() == ["job r: Failed",
                                           "job r: its retries are canceled; no further attempt starts"]
    assert code == 143, err
    assert f"{RETRIES_CANCELED}: no attempt after r starts" in err
    assert run_names(here) == ["r"]
    assert left_running(here) == []
    _code, out, _err = cli("job", "show", "r")
    assert f"{RETRIES_CANCELED}: no further attempt started" in out


def test_a_cancel_after_the_loop_decided_to_retry_stops_the_attempt_before_it_starts_a_process(cli, here,
                                                                                          monkeypatch):
    from amldist.backends.local.backend import LocalBackend

    seen: list = []
    options = LocalBackend.retry_options

    def cancel_then_options(self, record, signature, scope, **more):  # after the loop's check, before attempt 2
        cancel_from_another_terminal(here, seen)
        return options(self, record, signature, scope, **more)

    monkeypatch.setattr(LocalBackend, "retry_options", cancel_then_options)
    code, _out, err = cli("submit", str(sleeping_job(here)), "--local", "--name", "r", "--inject",
                          "kill:rank=0,after=1", "--retry", "2")
    assert seen[0].returncode == 0, seen[0].stderr
    assert code == 143, err
    assert run_names(here) == ["r", "r-attempt2"]  # made, but it read the stop before it started anything
    second = status(here, "r-attempt2")
    assert (second["status"], second["stopped_by"]) == ("Canceled", "amldist job cancel")
    assert not (here / "pids" / "r-attempt2.pids").exists()
    assert f"{RETRIES_CANCELED}: r-attempt2 was stopped and no further attempt starts" in err
    assert left_running(here) == []


def test_cancel_of_a_run_without_retry_is_unchanged_and_leaves_no_marker(cli, here):
    code, _out, _err = cli("submit", str(sleeping_job(here)), "--local", "--name", "r", "--inject",
                           "kill:rank=0,after=1")
    assert code == 1
    code, out, err = cli("job", "cancel", "r")
    assert code == 0 and out.strip() == "job r: Failed" and "already Failed; nothing to cancel" in err
    assert not (here / ".amldist" / "runs" / "r" / "retries_canceled").exists()
    assert status(here, "r")["attempt"] is None
