"""Train a small regression model with DistributedDataParallel, one process per GPU (or CPU slot).

Started by Azure ML's ``distribution: pytorch`` (legacy launcher ``torch.distributed``), which sets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every process; ``amldist.runtime``
reads them (or any other launcher's) and forms the process group. Without a launcher it trains
alone, which is how to try it on a laptop:

    python train.py --epochs 2 --model-dir /tmp/model

Data: every ``*.csv`` file under ``--data`` (numeric columns, the last one is the target, an
optional header row is skipped), else a synthetic linear problem that is the same on every rank.
Rank 0 writes ``model.pt`` (the state dict) and ``metrics.json`` to ``--model-dir``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
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
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

FEATURES = 16  # synthetic problem size


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", help="folder of CSV files (default: synthetic data)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--synthetic-rows", type=int, default=2048, help="rows of synthetic data (without --data)")
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--model-dir", required=True, help="where rank 0 writes model.pt and metrics.json")
    return parser.parse_args(argv)


def synthetic(seed: int, rows: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)  # same data on every rank; the sampler splits it
    x = torch.randn(rows, FEATURES, generator=generator)
    w = torch.randn(FEATURES, 1, generator=generator)
    y = x @ w + 0.1 * torch.randn(rows, 1, generator=generator)
    return TensorDataset(x, y)


def from_csv(folder: str) -> TensorDataset:
    rows = []
    for path in sorted(Path(folder).rglob("*.csv")):
        with open(path, newline="") as fh:
            for line_no, row in enumerate(csv.reader(fh)):
                try:
                    rows.append([float(v) for v in row])
                except ValueError:
                    if line_no == 0:
                        continue  # a header row
                    raise SystemExit(f"error: {path}:{line_no + 1}: not a numeric row: {row}")
    if not rows:
        raise SystemExit(f"error: no CSV rows under {folder}")
    table = torch.tensor(rows)
    return TensorDataset(table[:, :-1], table[:, -1:])


def main(argv=None) -> int:
    args = parse_args(argv)
    env = init_distributed(backend=args.backend)
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(args.seed)  # identical initial weights everywhere (DDP also broadcasts them)

    dataset = from_csv(args.data) if args.data else synthetic(args.seed, args.synthetic_rows)
    sampler = DistributedSampler(dataset, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    features = dataset.tensors[0].shape[1]
    model = torch.nn.Sequential(torch.nn.Linear(features, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.learning_rate)
    loss_fn = torch.nn.MSELoss()

    started, history = time.time(), []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(2, device=device)  # summed loss, batches
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(ddp(x.to(device)), y.to(device))
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            total += torch.stack([loss.detach(), torch.ones((), device=device)])
        dist.all_reduce(total)  # the epoch's mean loss over every rank
        history.append(float(total[0] / total[1]))
        if env.rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss {history[-1]:.4f} (world of {env.world_size})", flush=True)

    if env.rank == 0:
        out = Path(args.model_dir)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), out / "model.pt")
        metrics = {"loss": history, "world_size": env.world_size, "launcher": env.launcher,
                   "seconds": round(time.time() - started, 3)}
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    destroy()  # barrier, tear down, free the group before exit: a safe end for gloo too
    return 0


if __name__ == "__main__":
    sys.exit(main())
