"""One trial of the sweep: DistributedDataParallel on synthetic data, the loss logged with MLflow.

Rank 0 logs ``loss`` once per epoch (``mlflow.log_metric``), as on Azure ML, where the sweep reads its
primary metric from what the trial logs; amldist's local sweep gives each trial a file store of its own
(MLFLOW_TRACKING_URI) and applies the early-termination policy to the same values. The other ranks only
train: MLflow is imported on rank 0 alone.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from amldist.runtime import destroy, init_distributed


def synthetic_data(samples=1024, features=8):
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(samples, features, generator=g)
    w = torch.randn(features, 1, generator=g)
    return TensorDataset(x, x @ w + 0.01 * torch.randn(samples, 1, generator=g))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.set_num_threads(1)  # several ranks share the CPU cores
    env = init_distributed(backend="gloo")
    if env.rank == 0:
        import mlflow  # rank 0 alone reports the metric

    dataset = synthetic_data()
    sampler = DistributedSampler(dataset, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Linear(dataset.tensors[0].shape[1], 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    loss_fn = nn.MSELoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        mean = torch.tensor([total / batches], dtype=torch.float64)
        dist.all_reduce(mean)
        if env.rank == 0:
            value = mean.item() / env.world_size
            mlflow.log_metric("loss", value, step=epoch)
            print(f"epoch {epoch}: loss {value:.5f} (world {env.world_size})", flush=True)
    destroy()


if __name__ == "__main__":
    main()
