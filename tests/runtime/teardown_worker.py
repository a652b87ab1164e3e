"""One rank ending the way the DDP sample ends: a DistributedDataParallel model still alive in
main()'s frame, rank 0 busy writing a checkpoint while the others already tear down, then
amldist.runtime.destroy() and a normal interpreter exit. Prints ``RESULT {json}``."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from amldist.runtime import destroy, init_distributed


def main() -> None:
    torch.set_num_threads(1)
    env = init_distributed(backend="gloo")
    torch.manual_seed(env.rank)
    data = TensorDataset(torch.randn(1024, 16), torch.randn(1024, 1))
    sampler = DistributedSampler(data, num_replicas=env.world_size, rank=env.rank, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    ddp = DistributedDataParallel(torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            optimizer.step()
        mean = torch.tensor([loss.item()], dtype=torch.float64)
        torch.distributed.all_reduce(mean)
    if env.rank == 0:  # the others reach destroy() first, as in the sample
        with tempfile.TemporaryDirectory() as folder:
            torch.save(ddp.module.state_dict(), Path(folder) / "model.pt")
    destroy()
    sys.stdout.write("RESULT " + json.dumps({"rank": env.rank}) + "\n")
    sys.stdout.flush()
    # ddp, its reducer and the optimizer are still referenced here: exit must not abort on them


if __name__ == "__main__":
    main()
