"""One rank of a test world. Modes:

- ``runtime``: form the group with amldist.runtime.init_distributed() and all_reduce;
- ``ddp``: the same, then train a tiny model with DDP on rank-specific data;
- ``plain``: an unmodified script: init_process_group("gloo") with env://, then all_reduce.

Prints one line ``RESULT {json}`` with what the test checks.
"""

from __future__ import annotations

import datetime
import json
import os
import sys

import torch
import torch.distributed as dist

WATCHED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
           "NCCL_SOCKET_IFNAME", "UCX_TLS", "TORCHELASTIC_USE_AGENT_STORE")


def train_ddp(rank: int) -> tuple[list[float], list[float]]:
    """Parameters before and after 5 SGD steps. Each rank starts from its own random weights and
    sees its own data, so only DDP's broadcast and gradient averaging can make them agree."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(100 + rank)
    model = torch.nn.Linear(4, 2)
    before = [p for t in model.parameters() for p in t.detach().flatten().tolist()]
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(5):
        inputs, targets = torch.randn(8, 4), torch.randn(8, 2)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(inputs), targets).backward()
        optimizer.step()
    return before, [p for t in model.parameters() for p in t.detach().flatten().tolist()]


def main(mode: str) -> None:
    result: dict = {}
    if mode == "plain":
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    else:
        from amldist.runtime import destroy, init_distributed

        env = init_distributed(timeout=datetime.timedelta(seconds=60))
        result["env"] = env.as_dict()
        result["second_call_same"] = init_distributed() is env
        rank = env.rank
    result.update(dist_rank=rank, dist_world_size=dist.get_world_size(), backend=dist.get_backend())
    result["environ"] = {name: os.environ.get(name) for name in WATCHED}
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    result["sum"] = value.item()
    if mode == "ddp":
        result["params_before"], result["params_after"] = train_ddp(rank)
    if mode == "plain":
        dist.destroy_process_group()
    else:
        destroy()
        result["initialized_after_destroy"] = dist.is_initialized()
    # One write per line: under torchrun every rank shares one stdout pipe, and print() writes the
    # text and its newline separately when unbuffered, so two ranks' lines could fuse.
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
