"""Train a small classifier with DistributedDataParallel on processes started by ``mpirun``.

Azure ML's ``distribution: mpi`` starts ``process_count_per_instance`` copies of this script on
each node under Open MPI, which sets OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK and _LOCAL_SIZE
but none of the variables torch reads. ``amldist.runtime.init_distributed()`` maps them (the
node rank is rank // local size, the master address comes from AZ_BATCH_MASTER_NODE, never
with Azure Batch's port) and forms the process group. Locally:

    mpirun -np 2 python train.py --model-dir /tmp/model

When mpi4py is installed the script also checks that MPI and torch agree on the world.
Rank 0 writes ``model.pt`` and ``metrics.json`` to ``--model-dir``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

try:
    from amldist.runtime import destroy, init_distributed
except ImportError:  # the job's code snapshot lacks the runtime
    sys.exit(
        "error: amldist.runtime is not importable; submit with `amldist submit` (it bundles the runtime "
        "into the code snapshot) or copy amldist/runtime/ into this folder as amldist/runtime/"
    )

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES, ROWS = 8, 4096


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="per process")
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-dir", required=True)
    return parser.parse_args(argv)


def check_mpi_agrees(env) -> None:
    try:
        from mpi4py import MPI
    except ImportError:
        return  # optional: the runtime alone is enough
    comm = MPI.COMM_WORLD
    if (comm.Get_rank(), comm.Get_size()) != (env.rank, env.world_size):
        raise SystemExit(f"error: MPI says rank {comm.Get_rank()} of {comm.Get_size()}, torch {env.rank} of {env.world_size}")


def main(argv=None) -> int:
    args = parse_args(argv)
    env = init_distributed()
    check_mpi_agrees(env)
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")

    # Every rank draws its own shard of a shared synthetic problem: the labelling plane is common.
    plane = torch.randn(FEATURES, generator=torch.Generator().manual_seed(args.seed))
    local = torch.Generator().manual_seed(args.seed + 1 + env.rank)
    x = torch.randn(ROWS // env.world_size, FEATURES, generator=local)
    y = (x @ plane > 0).float().unsqueeze(1)

    torch.manual_seed(args.seed)
    model = torch.nn.Linear(FEATURES, 1).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.learning_rate)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for step in range(args.steps):
        index = torch.randint(0, x.shape[0], (args.batch_size,), generator=local)
        optimizer.zero_grad()
        loss = loss_fn(ddp(x[index].to(device)), y[index].to(device))
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        correct = ((model(x.to(device)) > 0).float() == y.to(device)).sum()
    counts = torch.stack([correct, torch.tensor(float(x.shape[0]), device=device)])
    dist.all_reduce(counts)
    accuracy = float(counts[0] / counts[1])
    if env.rank == 0:
        print(f"accuracy {accuracy:.3f} over {int(counts[1])} rows on {env.world_size} ranks "
              f"({env.num_nodes} node(s), launcher {env.launcher})", flush=True)
        out = Path(args.model_dir)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), out / "model.pt")
        (out / "metrics.json").write_text(json.dumps(
            {"accuracy": accuracy, "world_size": env.world_size, "launcher": env.launcher}, indent=2))
    destroy()  # barrier, tear down, free the group before exit: a safe end for gloo too
    return 0


if __name__ == "__main__":
    sys.exit(main())
