"""``distribution: type: ray`` planned locally: one Ray node per emulated node, the command once, on the head."""

from __future__ import annotations

import pytest

from amldist.engine import launchers
from amldist.backends.local.plan import describe, plan
from amldist.errors import UserError
from amldist.submit.prepare import prepare
from amldist.submit.prepared import SubmitOptions

from tests.backends.local.helpers import write_job


def ray_plan(tmp_path, distribution: str = "", nodes: int = 3):
    job = write_job(tmp_path, f"""
        command: python worker.py --value ${{{{inputs.x}}}}
        inputs:
          x: 7
        distribution:
          type: Ray{distribution}
        resources:
          instance_count: {nodes}
        """)
    return plan(prepare(str(job)), SubmitOptions(run_root=str(tmp_path / "runs")))


def test_one_ray_node_per_emulated_node_and_the_command_on_the_head_only(tmp_path):
    p = ray_plan(tmp_path)
    assert p.kind == "ray" and [r.label for r in p.ranks] == ["ray head", "ray worker 1", "ray worker 2"]
    assert [r.node for r in p.ranks] == [0, 1, 2]
    roles = [r.added["AMLDIST_RAY_ROLE"] for r in p.ranks]
    assert roles == ["head", "worker", "worker"]
    heads = {r.added["AMLDIST_RAY_HEAD"] for r in p.ranks}
    assert len(heads) == 1 and heads.pop().startswith("127.0.0.1:")
    assert {r.added["AMLDIST_RAY_NODES"] for r in p.ranks} == {"3"}
    head, *workers = p.ranks
    assert head.argv[1] == launchers.RAY_NODE and head.argv[2] == "--"
    assert head.argv[-1].startswith("python worker.py --value")  # the command, through the shell, on the head
    assert all(w.argv[1:] == [launchers.RAY_NODE] for w in workers)  # workers run no command
    assert [r.log_path.rsplit("/", 1)[1] for r in p.ranks] == [f"std_log_node_0{n}.txt" for n in range(3)]
    text = describe(p)
    assert "the head runs" in text and "(Ray worker node)" in text


def test_the_distributions_ray_fields_reach_the_nodes(tmp_path):
    p = ray_plan(tmp_path, """
          port: 6399
          include_dashboard: true
          dashboard_port: 8299
          head_node_additional_args: --num-cpus 2
          worker_node_additional_args: --num-cpus 1""", nodes=2)
    head, worker = p.ranks
    assert head.added["AMLDIST_RAY_HEAD"] == "127.0.0.1:6399"
    assert head.added["AMLDIST_RAY_HEAD_ARGS"] == "--num-cpus 2"
    assert worker.added["AMLDIST_RAY_WORKER_ARGS"] == "--num-cpus 1"
    assert head.added["AMLDIST_RAY_DASHBOARD"] == "true" and head.added["AMLDIST_RAY_DASHBOARD_PORT"] == "8299"


def test_an_existing_cluster_address_is_one_line(tmp_path):
    with pytest.raises(UserError, match="distribution.address .* joins an existing Ray cluster"):
        ray_plan(tmp_path, "\n          address: 10.0.0.4:6379", nodes=1)
