"""status.json and the local job verbs on real runs: completed, failed and canceled runs told apart."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time

import pytest

from amldist.backends.local import jobs, log_files, proc, run_state
from amldist.backends.local.plan import plan
from amldist.backends.local.supervisor import launch
from amldist.errors import UserError
from amldist.submit.prepare import prepare
from amldist.submit.prepared import SubmitOptions

from tests.backends.local.helpers import recorded_pids, survivors, wait_for_pid_files, worker_job


def start(tmp_path, mode, *, name, **kw):
    path = worker_job(tmp_path, mode=mode, **kw)
    path.write_text(path.read_text() + "outputs:\n  model:\n    type: uri_folder\n")
    opts = SubmitOptions(run_root=str(tmp_path / "runs"), grace_seconds=0.3, status_line=False, name=name)
    return plan(prepare(str(path)), opts)


def run(tmp_path, mode, *, name, **kw):
    p = start(tmp_path, mode, name=name, **kw)
    out, err = io.StringIO(), io.StringIO()
    code = launch(p, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_completed_and_failed_runs_are_told_apart(tmp_path):
    ok_code, ok_out, _ = run(tmp_path, "ok", name="good")
    bad_code, _, _ = run(tmp_path, "fail", name="bad", fail_rank=1)
    survivors(recorded_pids(tmp_path / "pids"), timeout=0)
    assert (ok_code, bad_code) == (0, 1)
    root = str(tmp_path / "runs")
    good, bad = jobs.get_run(root, "good").to_json(), jobs.get_run(root, "bad").to_json()
    assert good["status"] == "Completed" and bad["status"] == "Failed"
    assert [r["exit_code"] for r in good["ranks"]] == [0, 0]
    assert bad["ranks"][1]["exit_code"] == 3  # the failing rank's own code
    assert bad["ranks"][0]["exit_code"] == -signal.SIGTERM  # stopped after the grace
    assert bad["nodes"] == [{"node": 0, "exit_code": 3}]
    assert good["outputs"]["model"]["path"] == str(tmp_path / "runs" / "good" / "outputs" / "model")
    assert good["duration_seconds"] > 0 and good["end_time"]
    assert {r.name for r in jobs.list_runs(root)} == {"good", "bad"}
    # the end of a run says where everything is
    assert "status: Completed" in ok_out and "output model:" in ok_out and "exit 0" in ok_out
    text = jobs.show_text(jobs.get_run(root, "bad"))
    assert "status: Failed" in text and "rank 1: exit 3" in text


def test_status_json_shows_a_running_run_and_a_cancel_request_records_canceled(tmp_path):
    p = start(tmp_path, "hang", name="live")
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", launch(p, out=io.StringIO(),
                                                                              err=io.StringIO())))
    thread.start()
    try:
        wait_for_pid_files(tmp_path / "pids", 2)
        state = jobs.get_run(str(tmp_path / "runs"), "live").to_json()
        assert state["status"] == "Running"
        assert state["pid"] == os.getpid()
        assert all(r["pid"] and r["exit_code"] is None for r in state["ranks"])
        with pytest.raises(UserError, match="download is allowed once it has ended"):
            jobs.download(str(tmp_path / "runs"), "live", str(tmp_path / "dl"))
    except BaseException:
        survivors(recorded_pids(tmp_path / "pids"), timeout=0)
        raise
    # From a thread the supervisor cannot take SIGTERM (pytest owns the signals): do what cancel does
    # short of the signal, mark the request, and end the ranks; the marker makes the end Canceled.
    open(os.path.join(p.run_dir, run_state.CANCEL_FILE), "w").close()
    for pid in recorded_pids(tmp_path / "pids")[::2]:
        os.kill(pid, signal.SIGTERM)
    thread.join(30)
    survivors(recorded_pids(tmp_path / "pids"), timeout=0)
    state = jobs.get_run(str(tmp_path / "runs"), "live").to_json()
    assert state["status"] == "Canceled" and state["stopped_by"] == "amldist job cancel"


def test_a_run_whose_supervisor_died_reads_as_failed(tmp_path):
    run_dir = tmp_path / "runs" / "ghost"
    run_dir.mkdir(parents=True)
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    run_state.write_state(str(run_dir), {
        "name": "ghost", "status": "Running", "pid": dead, "pid_start_time": 1, "start_time": run_state.now_iso(),
        "ranks": [], "outputs": {}})
    state = jobs.get_run(str(tmp_path / "runs"), "ghost")
    assert state.status == "Failed" and "killed or crashed" in state.error
    # a live pid with another start time is not that run's supervisor either
    run_state.write_state(str(run_dir), {
        "name": "ghost", "status": "Running", "pid": os.getpid(),
        "pid_start_time": proc.start_time(os.getpid()) + 1, "ranks": [], "outputs": {}})
    assert jobs.get_run(str(tmp_path / "runs"), "ghost").status == "Failed"
    assert jobs.cancel(str(tmp_path / "runs"), "ghost", err=io.StringIO()).status == "Failed"


def test_a_run_that_ends_between_the_read_and_the_proof_reads_as_its_end(tmp_path, monkeypatch):
    """The race a cancel that polls can lose: status.json read while Running, then the owner records
    its end and lets go of the folder before the proof looks. The end on disk wins, not Failed."""
    from amldist.backends.local import records

    run_dir = tmp_path / "runs" / "ending"
    run_dir.mkdir(parents=True)
    state = {"name": "ending", "status": "Running", "pid": os.getpid(), "pid_start_time": 1,
             "start_time": run_state.now_iso(), "ranks": [], "outputs": {}}
    run_state.write_state(str(run_dir), state)

    def owner_ends_meanwhile(record):
        run_state.write_state(str(run_dir), {**state, "status": "Canceled", "stopped_by": "amldist job cancel"})
        return False

    monkeypatch.setattr(records, "alive", owner_ends_meanwhile)
    record = jobs.get_run(str(tmp_path / "runs"), "ending")
    assert (record.status, record.stopped_by) == ("Canceled", "amldist job cancel")


def test_a_live_run_is_proven_alive_once_per_read(tmp_path, monkeypatch):
    """The /proc proof runs once for a live run (job list and cancel's polling read every run)."""
    from amldist.backends.local import records

    run_dir = tmp_path / "runs" / "live"
    run_dir.mkdir(parents=True)
    run_state.write_state(str(run_dir), {"name": "live", "status": "Running", "pid": os.getpid(),
                                         "pid_start_time": 1, "start_time": run_state.now_iso(),
                                         "ranks": [], "outputs": {}})
    calls = []
    monkeypatch.setattr(records, "alive", lambda record: calls.append(record) or True)
    assert jobs.get_run(str(tmp_path / "runs"), "live").status == "Running"
    assert len(calls) == 1


def test_cancel_waits_for_the_process_before_it_believes_a_failed_reading(tmp_path):
    """While the run's process still runs (its pidfd says so), a ``Failed`` read (a proof of life that
    missed) is not the end: cancel waits, and returns what the run then writes."""
    import subprocess
    import sys

    if not hasattr(os, "pidfd_open"):
        pytest.skip("needs pidfd_open (Linux 5.3+)")
    run_dir = tmp_path / "runs" / "ending"
    run_dir.mkdir(parents=True)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    state = {"name": "ending", "status": "Running", "pid": child.pid, "pid_start_time": 1,  # never proven alive
             "start_time": run_state.now_iso(), "ranks": [], "outputs": {}}
    run_state.write_state(str(run_dir), state)
    assert jobs.get_run(str(tmp_path / "runs"), "ending").status == "Failed"  # what a reader sees meanwhile
    writer = threading.Timer(0.3, lambda: run_state.write_state(str(run_dir), {**state, "status": "Canceled"}))
    writer.start()
    handle = os.pidfd_open(child.pid)
    try:
        record = jobs._wait_for_end(str(tmp_path / "runs"), "ending", handle, timeout=10)
    finally:
        os.close(handle)
        writer.join()
        child.wait()
    assert record.status == "Canceled"


def test_logs_one_rank_all_ranks_and_download(tmp_path):
    code, _, _ = run(tmp_path, "ok", name="done")
    assert code == 0
    root = str(tmp_path / "runs")
    out = io.StringIO()
    log_files.logs(root, "done", rank=1, out=out)
    assert out.getvalue() == "rank 1 started\n"
    out = io.StringIO()
    log_files.logs(root, "done", out=out)
    assert sorted(out.getvalue().splitlines()) == ["[rank 0] rank 0 started", "[rank 1] rank 1 started"]
    with pytest.raises(UserError, match="no rank 5"):
        log_files.logs(root, "done", rank=5, out=io.StringIO())
    (tmp_path / "runs" / "done" / "outputs" / "model" / "w.bin").write_bytes(b"\0\1")
    written = jobs.download(root, "done", str(tmp_path / "dl"), all_outputs=True)
    assert len(written) == 2
    assert (tmp_path / "dl" / "artifacts" / "user_logs" / "std_log_process_01.txt").read_text() == "rank 1 started\n"
    assert (tmp_path / "dl" / "named-outputs" / "model" / "w.bin").read_bytes() == b"\0\1"
    with pytest.raises(UserError, match="no output 'nope'"):
        jobs.download(root, "done", str(tmp_path / "dl2"), output_name="nope")
    with pytest.raises(UserError, match="no local run named 'other'"):
        jobs.get_run(root, "other")
    with pytest.raises(UserError):
        jobs.get_run(root, "../runs/done")  # a name, never a path


def test_status_json_is_replaced_whole(tmp_path):
    path = tmp_path / "status.json"
    run_state.write_state(str(tmp_path), {"a": 1})
    run_state.write_state(str(tmp_path), {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]  # no temporary file left
