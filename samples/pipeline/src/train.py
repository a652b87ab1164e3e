"""Step 2: DDP training (gloo on CPU) on prep's data; rank 0 saves the model."""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from amldist.runtime import init_distributed

parser = argparse.ArgumentParser()
parser.add_argument("--data"); parser.add_argument("--model"); parser.add_argument("--steps", type=int, default=50)
args = parser.parse_args()
torch.set_num_threads(1)
env = init_distributed(backend="gloo")
rows = [tuple(map(float, line.split(","))) for line in open(os.path.join(args.data, "data.csv"))]
mine = rows[env.rank::env.world_size]  # each rank its own shard
x, y = torch.tensor([[r[0]] for r in mine]), torch.tensor([[r[1]] for r in mine])
torch.manual_seed(0)
model = DistributedDataParallel(nn.Linear(1, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print(f"rank {env.rank}/{env.world_size}: loss {loss.item():.5f}", flush=True)
if env.rank == 0:
    torch.save(model.module.state_dict(), os.path.join(args.model, "model.pt"))
dist.barrier()  # every rank done before the group goes (a gloo teardown race otherwise)
dist.destroy_process_group()
