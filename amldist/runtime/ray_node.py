"""One node of a Ray cluster for ``distribution: type: ray``, the way a Ray job runs on Azure ML.

Azure ML starts ``ray start --head`` on the job's first node and ``ray start --address HEAD`` on
every other node, then runs the job's command once, on the head, against that cluster (a script
connects with ``ray.init()``: ``RAY_ADDRESS`` names the head). The local and Slurm backends start
this module once per emulated node; it reads its part from three variables the backend sets:

- ``AMLDIST_RAY_ROLE``: ``head`` or ``worker``;
- ``AMLDIST_RAY_HEAD``: the head's ``host:port`` (the GCS port: ``distribution.port``, or a free port
  locally; Azure ML's default 6379 is often taken on a workstation);
- ``AMLDIST_RAY_NODES``: how many Ray nodes the cluster has (``resources.instance_count``).
Optional: ``AMLDIST_RAY_NODE_IP`` (this node's address, ``--node-ip-address``; the head's own defaults to
the host of ``AMLDIST_RAY_HEAD``, a worker's to what Ray finds), ``AMLDIST_RAY_HEAD_ARGS`` / ``AMLDIST_RAY_WORKER_ARGS`` (``head_node_additional_args`` /
``worker_node_additional_args``, split like a shell's words and given to ``ray start`` as arguments,
never to a shell), ``AMLDIST_RAY_DASHBOARD`` (``include_dashboard``: ``true``) and
``AMLDIST_RAY_DASHBOARD_PORT``.

The head waits until every node has joined (asked of the cluster itself, through Ray's client),
runs the command after ``--`` with ``RAY_ADDRESS`` set, stops its Ray node and exits with the
command's code. A worker starts its node once the head's is alive, keeps it up until the head's port
closes, then stops it and exits 0.
Ray is the user's dependency, like torch: without it, one line and exit 2. Standard library only,
as the rest of the runtime: the cluster is driven through Ray's own command line
(``python -m ray.scripts.scripts``, what the ``ray`` command runs), so the Python that runs the
ranks is the one whose Ray is used.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import signal
import socket
import subprocess
import sys
import time

JOIN_TIMEOUT = float(os.environ.get("AMLDIST_RAY_JOIN_TIMEOUT", "300"))  # seconds for every node to join
POLL = 0.5
# Asked of the cluster by the head: how many nodes are alive (a child Python, so this module never imports ray).
COUNT_NODES = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
               "print(sum(1 for n in ray.nodes() if n.get('Alive')))")


class RayNodeError(Exception):
    """A problem to report in one line (exit 2)."""


def settings(environ) -> dict:
    """The node's part, read from the variables in the module docstring; RayNodeError when one is wrong."""
    role = environ.get("AMLDIST_RAY_ROLE", "")
    head = environ.get("AMLDIST_RAY_HEAD", "")
    host, _, port = head.rpartition(":")
    if role not in ("head", "worker") or not host or not port.isascii() or not port.isdigit():
        raise RayNodeError("AMLDIST_RAY_ROLE must be head or worker and AMLDIST_RAY_HEAD host:port "
                           f"(got {role!r} and {head!r}); start this module through amldist submit")
    nodes = environ.get("AMLDIST_RAY_NODES", "1")
    if not nodes.isascii() or not nodes.isdigit() or not 1 <= int(nodes) <= 100_000:
        raise RayNodeError(f"AMLDIST_RAY_NODES={nodes!r} is not a node count")
    own = environ.get("AMLDIST_RAY_NODE_IP") or (host if role == "head" else "")
    return {"role": role, "host": host, "port": int(port), "nodes": int(nodes), "ip": own,
            "args": shlex.split(environ.get(f"AMLDIST_RAY_{role.upper()}_ARGS", "")),
            "dashboard": environ.get("AMLDIST_RAY_DASHBOARD", "").lower() == "true",
            "dashboard_port": environ.get("AMLDIST_RAY_DASHBOARD_PORT", "")}


def start_argv(s: dict, python: str = sys.executable) -> list[str]:
    """``ray start`` for this node, in the foreground (``--block``: the node lives as long as the process)."""
    argv = [python, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats"]
    argv += ["--node-ip-address", s["ip"]] if s["ip"] else []
    if s["role"] == "head":
        argv += ["--head", "--port", str(s["port"]), "--include-dashboard", "true" if s["dashboard"] else "false"]
        if s["dashboard"] and s["dashboard_port"]:
            argv += ["--dashboard-port", s["dashboard_port"]]
    else:
        argv += ["--address", f"{s['host']}:{s['port']}"]
    return argv + s["args"]


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def alive_nodes(address: str) -> int:
    """How many Ray nodes the cluster at ``address`` says are alive (0 while it cannot say)."""
    try:
        done = subprocess.run([sys.executable, "-c", COUNT_NODES, address], capture_output=True, text=True,
                              timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return 0
    last = done.stdout.strip().splitlines()[-1:] or ["0"]
    return int(last[0]) if done.returncode == 0 and last[0].isdigit() else 0


def wait_for_cluster(s: dict, node: subprocess.Popen) -> None:
    """Block until every node joined; RayNodeError when the head's node died or the wait ran out."""
    address, deadline = f"{s['host']}:{s['port']}", time.monotonic() + JOIN_TIMEOUT
    while not port_open(s["host"], s["port"]):
        if node.poll() is not None or time.monotonic() > deadline:
            raise RayNodeError(f"the Ray head did not start (ray start exited {node.poll()}); see the log above")
        time.sleep(POLL)
    while (alive := alive_nodes(address)) < s["nodes"]:
        if node.poll() is not None or time.monotonic() > deadline:
            raise RayNodeError(f"{alive} of {s['nodes']} Ray node(s) joined the head at {address} within "
                               f"{JOIN_TIMEOUT:.0f} s; see the workers' logs (AMLDIST_RAY_JOIN_TIMEOUT to wait longer)")
        time.sleep(POLL)
    print(f"amldist: Ray cluster of {alive} node(s) at {address}", flush=True)


def stop(proc: subprocess.Popen | None, grace: float = 30.0) -> None:
    """SIGTERM (Ray drains and stops its node's processes), then SIGKILL after ``grace`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_head(s: dict, command: list[str], children: list) -> int:
    node = subprocess.Popen(start_argv(s), stdin=subprocess.DEVNULL)
    children.append(node)
    wait_for_cluster(s, node)
    if not command:
        return 0
    user = subprocess.Popen(command, env={**os.environ, "RAY_ADDRESS": f"{s['host']}:{s['port']}"})
    children.append(user)
    return user.wait()


def wait_for_head(s: dict) -> None:
    """Block until the head's own node is alive in its GCS: ``ray start --address`` gives up when the GCS answers
    before the head registered (a loaded machine, or the head's node started later, as on Slurm)."""
    address, deadline = f"{s['host']}:{s['port']}", time.monotonic() + JOIN_TIMEOUT
    while not (port_open(s["host"], s["port"]) and alive_nodes(address) >= 1):
        if time.monotonic() > deadline:
            raise RayNodeError(f"the Ray head at {address} did not come up within {JOIN_TIMEOUT:.0f} s; "
                               "see the head's log (AMLDIST_RAY_JOIN_TIMEOUT to wait longer)")
        time.sleep(POLL * 2)


def run_worker(s: dict, children: list) -> int:
    """Start this node once the head's is alive and keep it up (:func:`keep_up`); a node whose start failed while
    the head is up is started again until AMLDIST_RAY_JOIN_TIMEOUT (Ray gives a raylet 30 s to register, which a
    loaded machine can exceed)."""
    wait_for_head(s)
    deadline = time.monotonic() + JOIN_TIMEOUT
    while True:
        node = subprocess.Popen(start_argv(s), stdin=subprocess.DEVNULL)
        children.append(node)
        code = keep_up(s, node)
        if code is not None:
            return code
        if time.monotonic() > deadline:
            return node.returncode or 1
        print(f"amldist: this Ray node stopped (ray start exited {node.returncode}) while the head is up; "
              "starting it again", flush=True)


def keep_up(s: dict, node: subprocess.Popen) -> int | None:
    """Keep ``node`` up while the head's port answers: 0 once the head has gone (the job is over), None when the
    node stopped while the head is still up."""
    misses = 0
    while node.poll() is None:
        misses = 0 if port_open(s["host"], s["port"]) else misses + 1
        if misses >= 2:  # the job is over: nothing is left to drain towards a head that has gone
            stop(node, grace=3.0)
            return 0
        time.sleep(POLL * 2)
    return None if port_open(s["host"], s["port"]) else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    children: list[subprocess.Popen] = []

    def on_signal(signum, _frame):  # the backend stops the run: pass it on, then leave
        for child in reversed(children):
            stop(child, grace=10.0)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        s = settings(os.environ)
        if importlib.util.find_spec("ray") is None:
            raise RayNodeError(f"distribution type ray needs Ray in the job's Python ({sys.executable}): "
                               "pip install 'ray[default]'")
        return run_head(s, command, children) if s["role"] == "head" else run_worker(s, children)
    except RayNodeError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        for child in reversed(children):
            stop(child)


if __name__ == "__main__":
    sys.exit(main())
