"""DistributedDataParallel on synthetic data: every launcher, one script.

amldist.runtime.init_distributed() reads whatever launcher started this process (Azure ML's
PyTorch distribution, torchrun, mpirun, Slurm, TF_CONFIG) and forms the process group: nccl when
each process of a node has a GPU, gloo otherwise. The data is a fixed random regression problem, so the loss must fall and
every rank must end with the same weights; the script checks both and exits non-zero if not.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from amldist.runtime import destroy, detect, init_distributed


def synthetic_data(samples=2048, features=16):
    """y = X w + noise, the same on every rank (fixed seed)."""
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(samples, features, generator=g)
    w = torch.randn(features, 1, generator=g)
    return TensorDataset(x, x @ w + 0.01 * torch.randn(samples, 1, generator=g))


def mean_over_ranks(value: float, world_size: int) -> float:
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / world_size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--model-dir", default="outputs")
    args = parser.parse_args()

    torch.set_num_threads(1)  # several ranks share the CPU cores
    # nccl when every process of this node can have a GPU of its own, gloo on the CPU otherwise
    # (a laptop, a CPU cluster, or more processes than GPUs as in the 2 x 2 local run).
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    use_gpu = gpus > 0 and gpus >= detect().local_world_size
    env = init_distributed(backend="nccl" if use_gpu else "gloo")
    device = torch.device(f"cuda:{env.local_rank}" if use_gpu else "cpu")
    print(f"rank {env.rank}/{env.world_size} (local {env.local_rank}/{env.local_world_size}, node "
          f"{env.node_rank}/{env.num_nodes}) via {env.launcher}, master {env.master_addr}:{env.master_port}",
          flush=True)

    dataset = synthetic_data()
    sampler = DistributedSampler(dataset, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Linear(dataset.tensors[0].shape[1], 1).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    loss_fn = nn.MSELoss()

    losses, started = [], time.time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x.to(device)), y.to(device))
            loss.backward()  # DDP averages the gradients over all ranks here
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        losses.append(mean_over_ranks(total / batches, env.world_size))
        if env.rank == 0:
            print(f"epoch {epoch}: loss {losses[-1]:.5f}", flush=True)

    # DDP keeps replicas identical: the largest and smallest checksum over ranks must agree.
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    high, low = torch.tensor([checksum], dtype=torch.float64), torch.tensor([-checksum], dtype=torch.float64)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MAX)
    in_sync = abs(high.item() + low.item()) < 1e-9
    if env.rank == 0:
        print(f"parameters in sync across {env.world_size} ranks: {in_sync}", flush=True)
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
        with open(os.path.join(args.model_dir, "metrics.json"), "w") as fh:
            json.dump({"losses": losses, "world_size": env.world_size, "seconds": time.time() - started}, fh)
    destroy()
    # The loss must fall over the epochs; with one epoch (--input epochs=1, a quick check) there is
    # nothing to compare, and only the replicas' agreement is checked.
    if not in_sync or (len(losses) > 1 and not losses[-1] < losses[0]):
        raise SystemExit(f"training check failed: in sync {in_sync}, losses {losses}")


if __name__ == "__main__":
    main()
