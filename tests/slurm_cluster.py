"""A real Slurm cluster on this host, for end-to-end tests: munge, one slurmctld and two slurmd.

Built from Debian's packages (``apt-get install slurm-wlm munge``): the daemons run as the current
user with every state, spool, log and socket file in a temporary folder, on ports chosen free, so a
test cluster never touches a system Slurm or munge and is torn down whole. The two nodes ``n1`` and
``n2`` are both this host (``NodeAddr=127.0.0.1``, each slurmd started with ``-N``); the config keeps
the plugins that need no privileges or cgroups (``proctrack/linuxproc``, ``task/none``) and lets each
node claim 4 CPUs (``SlurmdParameters=config_overrides``) so a 2 x 2 job fits on a 2-core machine.
Clients find the cluster through ``SLURM_CONF`` (see :attr:`SlurmCluster.env`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "scancel")


def missing_tools() -> list[str]:
    """The Slurm and munge programs that are not on PATH (the tests skip, naming them)."""
    return [name for name in DAEMONS if shutil.which(name) is None]


def free_ports(count: int) -> list[int]:
    """Ports free on the loopback interface now (held open together, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class SlurmCluster:
    root: Path
    nodes: tuple[str, ...] = ("n1", "n2")
    cpus_per_node: int = 4
    pids: dict[str, Path] = field(default_factory=dict)
    # the partitions' lines (NAME OPTIONS...; each spans every node) and more slurm.conf lines: a test that needs
    # another shape (preemption between partitions) starts its own cluster with them
    partitions: tuple[str, ...] = ("debug Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",)
    extra: tuple[str, ...] = ()

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        (self.root / "munge").mkdir(mode=0o700)
        for name in ("state", "spool", "log"):
            (self.root / name).mkdir()
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        host = socket.gethostname()
        ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        r = self.root
        lines = [
            "ClusterName=amldisttest", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={ctld_port}",
            f"SlurmUser={_user()}", f"SlurmdUser={_user()}", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={r}/munge/munge.sock", f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SlurmdParameters=config_overrides",
            "MpiDefault=none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "ReturnToService=2",
            "SchedulerType=sched/builtin", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "JobAcctGatherType=jobacct_gather/none", "KillWait=5",
            "MinJobAge=300",
        ]
        for node, port in zip(self.nodes, node_ports):
            lines.append(f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
                         f"CPUs={self.cpus_per_node} State=UNKNOWN")
        lines += [f"PartitionName={name} Nodes={','.join(self.nodes)} {options}"
                  for name, _, options in (p.partition(" ") for p in self.partitions)]
        lines += list(self.extra)
        self.conf.write_text("\n".join(lines) + "\n")

    def start(self, timeout: float = 30.0) -> "SlurmCluster":
        self.write_config()
        m = self.root / "munge"
        subprocess.run(["munged", "--force", f"--key-file={m}/munge.key", f"--socket={m}/munge.sock",
                        f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log", f"--seed-file={m}/munge.seed"],
                       check=True, capture_output=True, timeout=30)
        self.pids["munged"] = m / "munged.pid"
        subprocess.run(["slurmctld", "-f", str(self.conf)], check=True, env=self.env, capture_output=True, timeout=30)
        self.pids["slurmctld"] = self.root / "slurmctld.pid"
        for node in self.nodes:
            subprocess.run(["slurmd", "-f", str(self.conf), "-N", node], check=True, env=self.env,
                           capture_output=True, timeout=30)
            self.pids[f"slurmd {node}"] = self.root / f"slurmd.{node}.pid"
        self.wait_idle(timeout)
        return self

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True,
                                  text=True, timeout=30)
            out = proc.stdout + proc.stderr
            states = dict(line.split() for line in proc.stdout.splitlines() if len(line.split()) == 2)
            if proc.returncode == 0 and all(states.get(node) == "idle" for node in self.nodes):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the test Slurm cluster did not come up in {timeout:.0f} s: {out.strip()}\n"
                           + self.logs())

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
                         for p in sorted((self.root / "log").glob("*.log")))

    def stop(self) -> None:
        """Stop every daemon (slurmd first, so no job step outlives the controller)."""
        order = [k for k in self.pids if k.startswith("slurmd")] + ["slurmctld", "munged"]
        for name in order:
            pid = _read_pid(self.pids.get(name))
            if pid is not None:
                _terminate(pid)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _read_pid(path: Path | None) -> int | None:
    try:
        return int(path.read_text().split()[0]) if path else None
    except (OSError, ValueError, IndexError):
        return None


def _terminate(pid: int, grace: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start_cluster(**shape) -> SlurmCluster:
    """A started cluster in a new temporary folder (``shape``: :class:`SlurmCluster`'s ``partitions``, ``extra``);
    call ``stop()`` (and remove ``root``) after."""
    # a short path: munge's and slurmd's sockets must fit in sun_path (108 bytes)
    root = Path(tempfile.mkdtemp(prefix="amlslurm-", dir="/tmp"))
    cluster = SlurmCluster(root, **shape)
    try:
        return cluster.start()
    except BaseException:
        cluster.stop()
        raise
