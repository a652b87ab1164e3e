"""Hugging Face Accelerate on synthetic data, with the world from amldist.runtime (any launcher Azure ML uses).

Accelerate reads launcher variables of its own and stops on several nodes under MPI without
MASTER_ADDR; init_distributed() reads the launcher first, exports RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT and forms the group, which Accelerator() then uses as it is. Each rank
prints the world Accelerate sees; rank 0 saves the weights. Exits non-zero when Accelerate's world
disagrees with the launcher.
"""

import argparse
import json
import os

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from amldist.runtime import destroy, detect, init_distributed


def synthetic_data(samples=256, features=8):
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(samples, features, generator=g)
    return TensorDataset(x, x @ torch.randn(features, 1, generator=g))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--model-dir", default="outputs")
    args = parser.parse_args()
    torch.set_num_threads(1)  # several ranks share the CPU cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # Accelerate would otherwise pick a thread count and warn
    # GPUs when every process of this node can have one of its own, the CPU otherwise (a laptop, a CPU
    # cluster, or more processes than GPUs as in the 2 x 2 local run)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    use_gpu = gpus > 0 and gpus >= detect().local_world_size
    env = init_distributed(backend="nccl" if use_gpu else "gloo")  # before Accelerator(): it uses this group
    accelerator = Accelerator(cpu=not use_gpu)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer, loader = accelerator.prepare(model, optimizer, DataLoader(synthetic_data(), batch_size=16))
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        optimizer.zero_grad()
        accelerator.backward(nn.functional.mse_loss(model(x), y))
        optimizer.step()
    world = {"rank": accelerator.process_index, "world_size": accelerator.num_processes,
             "local_rank": accelerator.local_process_index, "launcher": env.launcher,
             "distributed_type": str(accelerator.distributed_type)}
    print("accelerate world " + json.dumps(world, sort_keys=True), flush=True)
    if (world["rank"], world["world_size"], world["local_rank"]) != (env.rank, env.world_size, env.local_rank):
        raise SystemExit(f"Accelerate sees {world}, the launcher said {env}")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(accelerator.unwrap_model(model).state_dict(), os.path.join(args.model_dir, "model.pt"))
    destroy()


if __name__ == "__main__":
    main()
