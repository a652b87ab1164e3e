"""Each MPI rank reports its place, read from Open MPI's variables by amldist.runtime.detect().

With mpi4py the ranks also check that MPI agrees and sum their ranks with an allreduce. When
the local backend emulates several nodes it starts the ranks without mpirun, so MPI_Init sees
a world of one per process: the script says so and skips the collective.
"""

import argparse
import os
import sys

from amldist.runtime import detect


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--greeting", default="hello from")
    args = parser.parse_args()

    env = detect()
    master = os.environ.get("AZ_BATCH_MASTER_NODE") or os.environ.get("AZ_BATCHAI_MPI_MASTER_NODE", "<unset>")
    print(f"{args.greeting} rank {env.rank}/{env.world_size} (local {env.local_rank}/{env.local_world_size}, "
          f"node {env.node_rank}/{env.num_nodes}) via {env.launcher}; master node {master}", flush=True)
    if env.launcher != "openmpi":
        sys.exit(f"expected Open MPI's variables, found the {env.launcher} launcher")

    try:
        from mpi4py import MPI
    except ImportError:
        print("mpi4py is not installed: skipping the MPI allreduce", flush=True)
        return
    comm = MPI.COMM_WORLD
    if comm.Get_size() != env.world_size:
        print(f"note: MPI sees a world of {comm.Get_size()} but the launcher variables say {env.world_size} "
              "(nodes emulated without mpirun): skipping the MPI allreduce", flush=True)
        return
    if comm.Get_rank() != env.rank:
        sys.exit(f"MPI rank {comm.Get_rank()} != OMPI_COMM_WORLD_RANK {env.rank}")
    total = comm.allreduce(env.rank, op=MPI.SUM)
    expected = env.world_size * (env.world_size - 1) // 2
    print(f"allreduce of ranks: {total} (expected {expected})", flush=True)
    if total != expected:
        sys.exit("MPI allreduce returned a wrong sum")


if __name__ == "__main__":
    main()
