"""amldist.runtime.frameworks without starting processes: Lightning's environment and DeepSpeed's variables
from the environments Azure ML's launchers give (Open MPI on two nodes, the per-process pytorch launcher)."""

from __future__ import annotations

import pytest

from amldist.runtime import DistEnvError
from amldist.runtime.frameworks import DEEPSPEED_READS, export_env, lightning_environment

# rank 3 of 2 nodes x 2 processes under Azure ML's mpirun (facts: OMPI_COMM_WORLD_*, AZ_BATCH_MASTER_NODE)
AZURE_MPI = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
             "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "AZ_BATCH_MASTER_NODE": "10.0.0.4:6000",
             "AZUREML_EXPERIMENT_ID": "x"}


def test_deepspeed_finds_all_it_reads_so_it_patches_nothing():
    environ = dict(AZURE_MPI)
    env = export_env(environ)
    assert all(name in environ for name in DEEPSPEED_READS)  # then deepspeed.init_distributed() uses them as is
    assert (environ["RANK"], environ["LOCAL_RANK"], environ["WORLD_SIZE"]) == ("3", "1", "4")
    # the address from AZ_BATCH_MASTER_NODE, never its port (Azure Batch's), and not DeepSpeed's 54965
    assert (environ["MASTER_ADDR"], environ["MASTER_PORT"]) == ("10.0.0.4", "6105")
    assert env.node_rank == 1 and environ["NODE_RANK"] == "1"


def test_lightning_environment_is_the_launchers_world():
    pytest.importorskip("lightning", reason="pip install lightning")
    env = lightning_environment(AZURE_MPI)
    assert env.creates_processes_externally
    assert (env.global_rank(), env.world_size(), env.local_rank(), env.node_rank()) == (3, 4, 1, 1)
    assert (env.main_address, env.main_port) == ("10.0.0.4", 6105)
    env.validate_settings(num_devices=2, num_nodes=2)
    env.set_global_rank(3), env.set_world_size(4)  # what Lightning sets for devices=2, num_nodes=2


def test_a_trainer_that_disagrees_with_the_launcher_is_refused_by_name():
    pytest.importorskip("lightning", reason="pip install lightning")
    env = lightning_environment(AZURE_MPI)
    with pytest.raises(DistEnvError, match=r"devices=4, num_nodes=1.*2 node\(s\) x 2"):
        env.validate_settings(num_devices=4, num_nodes=1)
    with pytest.raises(DistEnvError, match="global rank to 1, but the launcher says 3"):
        env.set_global_rank(1)  # never silently ignored


def test_import_stays_standard_library_only():
    import subprocess
    import sys

    probe = "import sys, amldist.runtime.frameworks; print([m for m in ('torch', 'lightning') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
