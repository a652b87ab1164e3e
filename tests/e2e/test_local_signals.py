"""Whatever stops a running ``amldist submit --local`` (Ctrl-C, SIGTERM, SIGHUP, SIGKILL), every
process of the job goes with it, mpirun's ranks and the ranks' own children included."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time

import pytest

from amldist.backends.local import supervisor
from amldist.engine import run_folder
from amldist.backends.local.plan import plan
from amldist.submit.prepare import prepare
from amldist.submit.prepared import SubmitOptions

from tests.backends.local.helpers import (ROOT, alive, amldist_cmd, recorded_pids, stop_amldist, survivors,
                                          wait_for_pid_files, worker_job, write_job)


def start_amldist(tmp_path, path):
    return subprocess.Popen(amldist_cmd("submit", str(path), "--local"), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def watchdog_of(pid: int) -> int:
    """The watchdog process amldist ``pid`` started (see process_groups.Watchdog)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmdline = fh.read().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid and b"--watch" in cmdline:
                return int(entry)
    raise AssertionError(f"amldist {pid} has no watchdog")


@pytest.mark.parametrize("sig, dist, ranks", [
    (signal.SIGINT, "pytorch", 3),
    (signal.SIGINT, "mpi", 2),  # mpirun puts each rank in a process group of its own
    (signal.SIGTERM, "pytorch", 2),
    (signal.SIGHUP, "pytorch", 2),  # the terminal closed, ssh dropped
    pytest.param(signal.SIGHUP, "mpi", 2, marks=pytest.mark.long(
        covered_by="the SIGINT mpi case (mpirun's process groups) and the SIGHUP pytorch case (the signal)")),
])
def test_a_signal_to_amldist_stops_every_child(tmp_path, sig, dist, ranks):
    path = worker_job(tmp_path, mode="hang", dist=dist, per_node=ranks)
    proc = start_amldist(tmp_path, path)
    try:
        wait_for_pid_files(tmp_path / "pids", ranks)
        watchdog = watchdog_of(proc.pid)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    except BaseException:
        stop_amldist(proc, tmp_path / "pids")  # no orphans, even when the test fails here
        raise
    assert proc.returncode == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err
    assert "\r" not in out  # stdout is a pipe, not a terminal: no status line
    pids = recorded_pids(tmp_path / "pids")
    assert len(pids) == 2 * ranks
    assert survivors(pids) == []
    assert survivors([watchdog]) == []  # told the run ended well, it left without touching anything


@pytest.mark.parametrize("dist", ["pytorch", "mpi"])
def test_sigkill_to_amldist_leaves_no_process_of_the_job(tmp_path, dist):
    path = worker_job(tmp_path, mode="hang", dist=dist, per_node=2)
    proc = start_amldist(tmp_path, path)
    try:
        wait_for_pid_files(tmp_path / "pids", 2)
        watchdog = watchdog_of(proc.pid)
        proc.kill()  # SIGKILL: amldist runs no code of its own any more
        proc.communicate(timeout=30)
    except BaseException:
        stop_amldist(proc, tmp_path / "pids")
        raise
    assert proc.returncode == -signal.SIGKILL
    pids = recorded_pids(tmp_path / "pids")
    assert len(pids) == 4  # 2 ranks (under mpirun: its ranks) and their sleeping children
    assert survivors(pids, timeout=10) == []
    assert survivors([watchdog], timeout=10) == []  # and the watchdog ends once they are gone


def test_a_second_ctrl_c_skips_the_grace_period(tmp_path):
    pid_dir = tmp_path / "pids"
    path = write_job(tmp_path, f"""
        command: >-
          trap '' TERM; sleep 120 & echo "$$ $!" > {pid_dir}/$RANK.tmp; mv {pid_dir}/$RANK.tmp {pid_dir}/$RANK.pids; wait
        distribution: {{type: pytorch, process_count_per_instance: 2}}
        """)
    proc = start_amldist(tmp_path, path)
    try:
        wait_for_pid_files(pid_dir, 2)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None  # the ranks ignore SIGTERM: amldist waits out the 5 s grace...
        proc.send_signal(signal.SIGINT)  # ...unless told again
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)
    except BaseException:
        stop_amldist(proc, pid_dir)
        raise
    assert time.monotonic() - started < 3, "the second Ctrl-C did not cut the 5 s grace short"
    assert proc.returncode == 130, err
    assert survivors(recorded_pids(pid_dir), timeout=0) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_code_copy_removes_the_partial_run_folder(tmp_path, monkeypatch, sig):
    path = worker_job(tmp_path, mode="ok")
    for i in range(20):
        (tmp_path / "src" / f"data_{i}.txt").write_text("x" * 100)
    real_copy = run_folder.copy_code

    def copy_then_signal(source, dest, **kw):  # the real copy, and a real signal to this process
        count = real_copy(source, dest, **kw)
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler interrupts this long before it ends
        return count

    monkeypatch.setattr(run_folder, "copy_code", copy_then_signal)
    p = plan(prepare(str(path)), SubmitOptions(run_root=str(tmp_path / "runs"), status_line=False))
    err = io.StringIO()
    handler_before = signal.getsignal(sig)
    started = time.monotonic()
    assert supervisor.launch(p, out=io.StringIO(), err=err) == 128 + sig
    assert time.monotonic() - started < 4
    assert f"stopped by {signal.Signals(sig).name} before it started" in err.getvalue()
    assert not os.path.exists(p.run_dir)
    assert signal.getsignal(sig) == handler_before  # amldist's handlers are gone again
    assert recorded_pids(tmp_path / "pids") == []  # no rank was started


SLOW_COPY = """\
import sys, time
from amldist.engine import run_folder
real_copy = run_folder.copy_code

def copy_then_wait(source, dest, **kw):  # the real copy, then a pause in which the test SIGKILLs this process
    count = real_copy(source, dest, **kw)
    open("copied", "w").close()
    time.sleep(60)
    return count

run_folder.copy_code = copy_then_wait
from amldist.cli.main import main
sys.exit(main(["submit", "job.yml", "--local", "--name", "half"]))
"""


def test_sigkill_during_the_code_copy_leaves_an_honest_half_made_run(tmp_path):
    """SIGKILL cannot be caught: the half-made folder stays, and every reader says what it is."""
    import json
    import sys

    worker_job(tmp_path, mode="ok")  # job.yml
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cli(*argv):
        return subprocess.run(amldist_cmd(*argv), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)

    proc = subprocess.Popen([sys.executable, "-c", SLOW_COPY], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "copied").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        listed = json.loads(cli("job", "list", "--local", "--format", "json").stdout)
        assert [(r["name"], r["status"]) for r in listed] == [("half", "Preparing")]
        shown = cli("job", "show", "half", "--local")
        assert shown.returncode == 2 and "has not started yet: amldist is making its folder" in shown.stderr
    finally:
        proc.kill()
        proc.wait()
    listed = json.loads(cli("job", "list", "--local", "--format", "json").stdout)
    assert [(r["name"], r["status"]) for r in listed] == [("half", "Failed")]
    assert "killed before the run started" in listed[0]["error"]
    shown = cli("job", "show", "half", "--local")
    assert shown.returncode == 2 and "never started" in shown.stderr and "Traceback" not in shown.stderr
    again = cli("submit", "job.yml", "--local", "--name", "half")
    assert again.returncode == 2 and "left half made" in again.stderr and "remove that folder" in again.stderr
    run_dir = tmp_path / ".amldist" / "runs" / "half"
    assert (run_dir / "job.yml").exists() and (run_dir / "code").is_dir()  # nothing was removed unasked


def test_a_daemon_that_leaves_the_session_is_stopped_with_the_run(tmp_path):
    marker = tmp_path / "daemon.pid"
    path = write_job(tmp_path, f"command: setsid sleep 120 & echo $! > {marker}; sleep 0.3; exit 0\n")
    proc = start_amldist(tmp_path, path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    daemon = int(marker.read_text())
    assert survivors([daemon]) == []
    assert not alive(daemon)
