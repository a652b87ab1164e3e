"""MPI launchers: Open MPI (Azure ML's ``distribution: mpi`` images), MVAPICH, and the PMI
family that Intel MPI and MPICH's hydra share. They differ only in variable names, so ``Mpi``
holds the reading and each launcher is a subclass that names its variables (``detect`` and
``read`` are class methods here, called on the class like the other launchers' static ones)."""

from __future__ import annotations

from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import EnvReader, split_host_port
from .launcher import Launcher

# The ports Azure ML documents for its MPI jobs: 6105 between nodes, 54965 on a single node
# (binding 6105 on a single node was reported to fail with "Address already in use").
AZUREML_MPI_PORT_MULTI_NODE = 6105
AZUREML_MPI_PORT_ONE_NODE = 54965


class Mpi(Launcher):
    """The MPI family; not a launcher itself (no variables named), never in ``LAUNCHERS``."""

    rank_vars: tuple[str, ...] = ()
    size_var = local_rank_var = local_size_var = ""

    @classmethod
    def detect(cls, environ: Mapping[str, str]) -> bool:
        r = EnvReader(environ)
        return bool(cls.rank_vars) and r.first(*cls.rank_vars) is not None and r.has(cls.size_var)

    @classmethod
    def read(cls, r: EnvReader) -> DistEnv:
        rank = r.require_int("rank", *cls.rank_vars)
        world_size = r.require_int("world_size", cls.size_var, minimum=1)
        why = f" when {r.sources['rank']} is (mpirun sets both)"
        local_rank = r.require_int("local_rank", cls.local_rank_var, context=why)
        local_size = r.require_int("local_world_size", cls.local_size_var, minimum=1, context=why)
        if world_size % local_size:
            raise DistEnvError(
                f"{cls.size_var}={world_size} is not a multiple of {cls.local_size_var}={local_size}: "
                "the node rank needs the same number of processes on every node"
            )
        # Never OMPI_COMM_WORLD_NODE_RANK: despite its name it is not the node's index, and using
        # it hangs multi-node jobs. With ranks filled node by node, the quotient is.
        node_rank = r.derived("node_rank", rank // local_size, f"{r.sources['rank']} // {cls.local_size_var}")
        num_nodes = r.derived("num_nodes", world_size // local_size, f"{cls.size_var} / {cls.local_size_var}")
        if num_nodes > 1:
            addr = r.master_addr(
                # Only the address: the port in AZ_BATCH_MASTER_NODE belongs to Azure Batch and
                # collides when torch binds it.
                split_host_port(r.environ.get("AZ_BATCH_MASTER_NODE", ""), "AZ_BATCH_MASTER_NODE")[0], "AZ_BATCH_MASTER_NODE",
                missing=f"MASTER_ADDR, MASTER_IP or AZ_BATCH_MASTER_NODE must be set when {cls.size_var}={world_size} "
                f"and {cls.local_size_var}={local_size} spread the ranks over {num_nodes} nodes",
            )
            port = r.master_port(AZUREML_MPI_PORT_MULTI_NODE)
        else:
            # AZ_BATCHAI_MPI_MASTER_NODE is missing on some computes; on one node loopback is right.
            one_node = r.environ.get("AZ_BATCHAI_MPI_MASTER_NODE", "").strip()
            addr = r.master_addr(one_node or "127.0.0.1", "AZ_BATCHAI_MPI_MASTER_NODE" if one_node else "default")
            port = r.master_port(AZUREML_MPI_PORT_ONE_NODE)
        return r.build(
            cls.name, rank=rank, local_rank=local_rank, world_size=world_size, local_world_size=local_size,
            node_rank=node_rank, num_nodes=num_nodes, master_addr=addr, master_port=port,
        )


class OpenMpi(Mpi):
    """Open MPI's mpirun, what Azure ML's ``distribution: mpi`` images use."""

    name = "openmpi"
    rank_vars = ("OMPI_COMM_WORLD_RANK",)
    size_var, local_rank_var, local_size_var = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                "OMPI_COMM_WORLD_LOCAL_SIZE")


class Mvapich(Mpi):
    name = "mvapich"
    rank_vars = ("MV2_COMM_WORLD_RANK",)
    size_var, local_rank_var, local_size_var = ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
                                                "MV2_COMM_WORLD_LOCAL_SIZE")


class IntelMpi(Mpi):
    """Intel MPI and MPICH's hydra, through the PMI variables they share; PMIX_RANK replaces
    PMI_RANK when the job runs under PMIx."""

    name = "pmi"
    rank_vars = ("PMI_RANK", "PMIX_RANK")
    size_var, local_rank_var, local_size_var = "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"
