"""Fixtures for the runtime tests: environments scrubbed of launcher variables, and real
multi-process worlds that are always waited on with a deadline and killed on failure."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "runtime_worker.py"

# Whatever the machine running the tests carries (a CI job under Slurm, a shell with RANK set)
# must not leak into the worlds the tests build.
_LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MV2_", "MPI_LOCAL", "SLURM_", "TORCHELASTIC_", "AZ_BATCH",
                      "GROUP_", "ROLE_")
_LAUNCHER_VARS = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
                  "MASTER_PORT", "MASTER_IP", "TF_CONFIG", "AZUREML_NODE_COUNT", "AMLDIST_DEBUG"}


def _is_launcher_var(name: str) -> bool:
    return name in _LAUNCHER_VARS or name.startswith(_LAUNCHER_PREFIXES)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture
def free_port():
    """A function returning a TCP port nobody listens on right now."""
    return _free_port


@pytest.fixture
def port_is_free():
    return _port_is_free


@pytest.fixture
def clean_os_environ():
    """os.environ without launcher variables; restored as a whole afterwards, since the code under
    test writes to it directly."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if _is_launcher_var(name):
            del os.environ[name]
    yield os.environ
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _fresh_runtime_state():
    """init_distributed() and the diagnostics remember things per process; tests start afresh."""
    from amldist.runtime import destroy, diagnostics

    destroy()
    diagnostics.reset()
    yield
    destroy()
    diagnostics.reset()


@pytest.fixture
def base_env():
    """Environment for child processes: no launcher variables, amldist importable, one thread each
    (2 cores shared by up to 4 ranks), gloo kept on loopback."""
    env = {name: value for name, value in os.environ.items() if not _is_launcher_var(name)}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHONUNBUFFERED="1")
    return env


class World:
    """Child processes started together; ``wait`` collects every RESULT line or fails with output."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(argv, env=env, cwd=cwd or ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def wait(self, timeout: float = 90) -> list[dict]:
        """Every ``RESULT {json}`` line printed by any process, after all exited with 0. On a
        failure or after ``timeout`` seconds (all killed then), fails with every process's stderr."""
        outputs, deadline, late = [], time.monotonic() + timeout, None
        for proc in self.procs:
            try:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                late = late or proc
                self.kill()
                try:
                    out, err = proc.communicate(timeout=10)  # what it wrote before it was killed
                except subprocess.TimeoutExpired:  # a child that left the process group holds the pipe
                    out, err = "", "(output unreadable: a child outside the process group holds the pipe)"
            outputs.append((proc, out, err))
        self.procs = []  # all finished: the same World may start another round
        failed = [f"{' '.join(map(str, p.args))} exited with {p.returncode}:\n{err[-4000:]}"
                  for p, _, err in outputs if p.returncode != 0]
        if late is not None:
            failed.insert(0, f"{' '.join(map(str, late.args))} did not finish within {timeout} s; all were killed")
        if failed:
            pytest.fail("\n\n".join(failed), pytrace=False)
        return [json.loads(line[len("RESULT "):]) for _, out, _ in outputs for line in out.splitlines()
                if line.startswith("RESULT ")]

    def wait_meeting_on_a_port(self, start, ports=None, timeout: float = 90, attempts: int = 3):
        """``start(port)`` starts ranks that meet on ``port``; returns ``(port, results)``.

        A free port cannot be reserved between choosing it and rank 0 binding it, so when a run
        fails because another process on this machine took it meanwhile (EADDRINUSE: not what
        any test checks), the ranks start again on the next port of ``ports`` (default: fresh
        free ports), ``attempts`` times at most. Any other failure fails at once.
        """
        ports = iter(_free_port, None) if ports is None else iter(ports)
        for attempt in range(attempts):
            port = next(ports)
            start(port)
            try:
                return port, self.wait(timeout)
            except pytest.fail.Exception as failure:
                if attempt == attempts - 1 or "EADDRINUSE" not in str(failure):
                    raise

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the ranks it started
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)


@pytest.fixture
def world():
    w = World()
    yield w
    w.kill()


def worker_argv(mode: str) -> list[str]:
    return [sys.executable, str(WORKER), mode]


@pytest.fixture
def worker():
    return worker_argv
