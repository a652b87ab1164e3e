"""Ctrl-C (SIGINT) and SIGTERM to a running ``amldist submit --local``: every process goes."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.backends.local.helpers import ROOT, amldist_cmd, recorded_pids, stop_amldist, survivors, wait_for_pid_files, worker_job


@pytest.mark.parametrize("sig, dist, ranks", [
    (signal.SIGINT, "pytorch", 3),
    (signal.SIGINT, "mpi", 2),  # mpirun puts each rank in a process group of its own
    (signal.SIGTERM, "pytorch", 2),
])
def test_a_signal_to_amldist_stops_every_child(tmp_path, sig, dist, ranks):
    path = worker_job(tmp_path, mode="hang", dist=dist, per_node=ranks)
    proc = subprocess.Popen(amldist_cmd("submit", str(path), "--local"), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_for_pid_files(tmp_path / "pids", ranks)
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
