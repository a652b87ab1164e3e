"""Jobs written into a temporary folder, and process checks, for the local backend's tests."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "samples"

# Every rank records its own pid and a grandchild's (a sleeping child it starts), then behaves
# as MODE says: "ok" exits 0, "fail" makes rank FAIL_RANK exit 3 and the others sleep, "hang"
# sleeps, "env" dumps its environment. The pid files let a test check that nothing survives.
WORKER = r'''
import json, os, subprocess, sys, time
rank = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
out = os.environ["PID_DIR"]
mode = os.environ.get("MODE", "ok")
if mode == "env":
    with open(os.path.join(out, f"{rank}.env.json"), "w") as fh:
        json.dump({"env": dict(os.environ), "argv": sys.argv[1:], "cwd": os.getcwd()}, fh)
    sys.exit(0)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
tmp = os.path.join(out, f"{rank}.tmp")
with open(tmp, "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}\n")
os.replace(tmp, os.path.join(out, f"{rank}.pids"))
print(f"rank {rank} started", flush=True)
if mode == "fail" and rank == os.environ.get("FAIL_RANK"):
    print("boom: failing on purpose", flush=True)
    sys.exit(3)
if mode in ("fail", "hang"):
    time.sleep(120)
'''


def write_job(folder: Path, body: str, *, name: str = "job.yml") -> Path:
    """A job file ``name`` in ``folder`` with ``src/worker.py``; ``body`` is YAML after the header."""
    (folder / "src").mkdir(parents=True, exist_ok=True)
    (folder / "src" / "worker.py").write_text(WORKER)
    (folder / "pids").mkdir(exist_ok=True)
    header = ("$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ntype: command\ncode: src\n"
              "environment: azureml:AzureML-sklearn-1.5@latest\n")
    path = folder / name
    path.write_text(header + textwrap.dedent(body))
    return path


def worker_job(folder: Path, *, mode: str, dist: str = "pytorch", nodes: int = 1, per_node: int = 2,
               extra: str = "", fail_rank: int = 1) -> Path:
    return write_job(folder, f"""
        command: python worker.py
        environment_variables:
          PID_DIR: {folder / 'pids'}
          MODE: {mode}
          FAIL_RANK: "{fail_rank}"
        distribution:
          type: {dist}
          process_count_per_instance: {per_node}
        resources:
          instance_count: {nodes}
        """ + textwrap.dedent(extra))


def drill_stops(run: Path, rank: int) -> list[int]:
    """The steps at which ``rank`` of a samples/drill run says it saved and stopped (its log's ``rank R: stopping
    at step N after saving``). A rank of the preempted node prints it before it exits itself, so the line is there
    whatever its launcher then does to the other ranks (rank 0's ``checkpoint at step N`` can be cut off: a task
    that ends non-zero makes srun's --kill-on-bad-exit kill the rest of the step)."""
    prefix = f"rank {rank}: stopping at step "
    lines = (run / "user_logs" / f"std_log_process_{rank:02d}.txt").read_text().splitlines()
    return [int(line[len(prefix):].split()[0]) for line in lines if line.startswith(prefix)]


def recorded_pids(pid_dir: Path) -> list[int]:
    pids = []
    for f in sorted(pid_dir.glob("*.pids")):
        pids += [int(x) for x in f.read_text().split()]
    return pids


def wait_for_pid_files(pid_dir: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(list(pid_dir.glob("*.pids"))) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(list(pid_dir.glob('*.pids')))} of {count} ranks started")
        time.sleep(0.05)


def process_state(pid: int) -> str | None:
    """The process's state letter in /proc (R, S, T for stopped, Z for a zombie...); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def alive(pid: int) -> bool:
    """True for a running process (zombies count as gone: they no longer run)."""
    try:
        return process_state(pid) not in (None, "Z")
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def survivors(pids, timeout: float = 5) -> list[int]:
    """The pids still alive after up to ``timeout`` seconds (killed after the check, never leaked)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if alive(p)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in left:  # do not leave processes behind even when the test fails
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def stop_amldist(proc, pid_dir: Path) -> None:
    """After a failed check: stop an ``amldist submit`` subprocess and whatever it started.

    SIGTERM first (amldist then stops every rank, grandchildren included), SIGKILL if it does
    not end; then the recorded rank pids, should any have outlived it.
    """
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - whatever happened, do not leave it running
            proc.kill()
            proc.wait(timeout=10)
    survivors(recorded_pids(pid_dir), timeout=0)


def amldist_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "amldist", *args]
