"""amldist.runtime.ray_node: what it reads, what ``ray start`` it runs, and its one-line refusals."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from amldist.runtime import ray_node

HEAD = {"AMLDIST_RAY_ROLE": "head", "AMLDIST_RAY_HEAD": "127.0.0.1:6390", "AMLDIST_RAY_NODES": "2"}


def test_the_head_starts_ray_head_on_its_port_without_a_dashboard():
    s = ray_node.settings({**HEAD, "AMLDIST_RAY_HEAD_ARGS": "--num-cpus 2 --resources '{\"a\": 1}'"})
    argv = ray_node.start_argv(s, python="py")
    assert argv[:5] == ["py", "-m", "ray.scripts.scripts", "start", "--block"]
    assert argv[argv.index("--port") + 1] == "6390" and "--head" in argv
    assert argv[argv.index("--include-dashboard") + 1] == "false"
    assert argv[-4:] == ["--num-cpus", "2", "--resources", '{"a": 1}']  # words for ray start, no shell


def test_a_worker_joins_the_head():
    s = ray_node.settings({**HEAD, "AMLDIST_RAY_ROLE": "worker", "AMLDIST_RAY_WORKER_ARGS": "--num-cpus 1"})
    argv = ray_node.start_argv(s, python="py")
    assert argv[argv.index("--address") + 1] == "127.0.0.1:6390" and "--head" not in argv
    assert "--node-ip-address" not in argv  # a worker's own address: Ray finds it (another host on a cluster)
    own = ray_node.start_argv(ray_node.settings({**HEAD, "AMLDIST_RAY_ROLE": "worker", "AMLDIST_RAY_NODE_IP": "10.1.0.5"}))
    assert own[own.index("--node-ip-address") + 1] == "10.1.0.5"
    assert argv[-2:] == ["--num-cpus", "1"]


@pytest.mark.parametrize("env", [
    {**HEAD, "AMLDIST_RAY_ROLE": "boss"},
    {**HEAD, "AMLDIST_RAY_HEAD": "127.0.0.1"},
    {**HEAD, "AMLDIST_RAY_HEAD": "127.0.0.1:６３９０"},  # full-width digits are digits to str.isdigit
    {**HEAD, "AMLDIST_RAY_NODES": "²"},
    {**HEAD, "AMLDIST_RAY_NODES": "0"},
])
def test_a_wrong_variable_is_one_error(env):
    with pytest.raises(ray_node.RayNodeError):
        ray_node.settings(env)


def test_without_ray_the_node_says_what_to_install_in_one_line(tmp_path):
    # -S: no site-packages, so no ray, as in a job image without it
    done = subprocess.run([sys.executable, "-S", ray_node.__file__, "--", "true"], capture_output=True, text=True,
                          env={**os.environ, **HEAD, "PYTHONPATH": ""}, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "pip install 'ray[default]'" in done.stderr and "Traceback" not in done.stderr
