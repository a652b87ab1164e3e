"""Lightning DDP on synthetic data, with the world from amldist.runtime (any launcher Azure ML uses).

Lightning has no Azure ML environment of its own: lightning_environment() is a Lightning
ClusterEnvironment whose ranks, node rank and main address come from amldist's launcher detection,
and the Trainer's devices and num_nodes are the launcher's. Each rank prints the world Lightning
formed; rank 0 saves the weights. Exits non-zero when a rank's world disagrees with the launcher.
"""

import argparse
import json
import os

import lightning as L
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from amldist.runtime import destroy
from amldist.runtime.frameworks import lightning_environment


class Regression(L.LightningModule):
    def __init__(self, features: int = 8):
        super().__init__()
        self.layer = nn.Linear(features, 1)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


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
    env = lightning_environment()
    # GPUs when every process of this node can have one of its own, the CPU otherwise (a laptop, a CPU
    # cluster, or more processes than GPUs as in the 2 x 2 local run)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    use_gpu = gpus > 0 and gpus >= env.dist.local_world_size
    trainer = L.Trainer(
        accelerator="gpu" if use_gpu else "cpu", strategy="ddp", plugins=[env],
        num_nodes=env.dist.num_nodes, devices=env.dist.local_world_size, max_steps=args.steps,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    model = Regression()
    trainer.fit(model, DataLoader(synthetic_data(), batch_size=16))
    world = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "node_rank": trainer.node_rank,
             "local_rank": trainer.local_rank, "launcher": env.dist.launcher}
    print("lightning world " + json.dumps(world, sort_keys=True), flush=True)
    expected = (env.dist.rank, env.dist.world_size, env.dist.node_rank, env.dist.local_rank)
    if (world["rank"], world["world_size"], world["node_rank"], world["local_rank"]) != expected:
        raise SystemExit(f"Lightning formed {world}, the launcher said {expected}")
    if trainer.global_rank == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pt"))
    destroy()  # Lightning leaves the group formed: free it while Python is whole (see the README)


if __name__ == "__main__":
    main()
