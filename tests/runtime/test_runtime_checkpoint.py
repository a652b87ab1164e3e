"""amldist.runtime.checkpoint: atomic, resumable checkpoints and a SIGTERM grace every rank agrees on, with
real gloo worlds of two processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amldist.runtime.checkpoint import Checkpoints

WORKER = Path(__file__).resolve().parent / "checkpoint_worker.py"


def test_the_latest_complete_checkpoint_is_found_and_partial_ones_never_are(tmp_path):
    ckpt = Checkpoints(str(tmp_path), keep=2)
    assert ckpt.latest() is None  # a first attempt
    for step in (0, 5, 10):
        ckpt.save({"step": step}, step)
    assert [c.step for c in ckpt.complete()] == [5, 10]  # keep=2: the oldest went
    assert ckpt.latest().load() == {"step": 10}
    # what a process killed mid-save leaves, and strays, are never a checkpoint
    (tmp_path / ".staging-step_20-abc").mkdir()
    (tmp_path / "step_30").mkdir()  # no COMPLETE: killed before it was sealed
    (tmp_path / "step_²").mkdir()
    (tmp_path / "step_²" / "COMPLETE").write_text("{}")
    os.symlink(tmp_path / "step_10", tmp_path / "step_40")
    assert ckpt.latest().step == 10
    ckpt.save({"step": 11}, 11)
    assert not (tmp_path / ".staging-step_20-abc").exists()  # the next save clears the debris
    with pytest.raises(ValueError):
        ckpt.save({}, -1)


def test_the_folder_comes_from_the_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("AMLDIST_CHECKPOINT_DIR", str(tmp_path / "shared"))
    assert Checkpoints().folder == str(tmp_path / "shared")
    monkeypatch.delenv("AMLDIST_CHECKPOINT_DIR")
    assert Checkpoints().folder == os.path.join("outputs", "checkpoints")


def start_world(tmp_path, base_env, port, **settings):
    procs = []
    for rank in range(2):
        env = {**base_env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
               "RANK": str(rank), "LOCAL_RANK": str(rank), "AMLDIST_CHECKPOINT_DIR": str(tmp_path / "ckpt"),
               "READY_FILE": str(tmp_path / "ready"), **{k: str(v) for k, v in settings.items()}}
        procs.append(subprocess.Popen([sys.executable, str(WORKER)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True))
    return procs


def results(procs, timeout=120):
    import json
    out = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("a rank did not finish")
        lines = [json.loads(line[7:]) for line in stdout.splitlines() if line.startswith("RESULT ")]
        assert lines, stderr[-3000:]
        out.append((proc.returncode, lines[0]))
    return sorted(out, key=lambda r: r[1]["rank"])


@pytest.mark.parametrize("every_rank", ["0", "1"])
def test_sigterm_to_one_rank_saves_the_same_step_on_all_and_a_restart_resumes_there(tmp_path, base_env, free_port,
                                                                                  every_rank):
    procs = start_world(tmp_path, base_env, free_port(), STEPS=12, SAVE_EVERY=4, STALL_AT=6, STALL_RANK=1,
                        EVERY_RANK=every_rank)
    deadline = time.monotonic() + 90
    while not (tmp_path / "ready").exists():
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "rank 1 never reached step 6"
        time.sleep(0.05)
    procs[1].send_signal(signal.SIGTERM)  # a preempted node: only its rank is told
    first = results(procs)
    assert [code for code, _ in first] == [143, 143]  # both stopped after saving, as ended by SIGTERM
    assert all(r["stopped"] and r["seen"] == list(range(7)) for _, r in first)
    assert first[0][1]["complete"] == [4, 6]  # the periodic save at 4 and the grace save at 6

    second = results(start_world(tmp_path, base_env, free_port(), STEPS=12, SAVE_EVERY=4, EVERY_RANK=every_rank))
    assert [code for code, _ in second] == [0, 0]
    for _, r in second:
        assert r["start"] == 7  # resumed after the grace checkpoint, not from step 0
        assert r["seen"] == list(range(12))  # every step applied exactly once across the two attempts
