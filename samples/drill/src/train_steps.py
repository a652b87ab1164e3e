"""DDP by steps, resumable: amldist.runtime.checkpoint saves every --save-every steps (and when SIGTERM says the
node is going away), and a restart resumes after the latest complete checkpoint. The model's state carries the
list of steps it has applied, so the end can prove every step was applied exactly once."""

import argparse
import json
import os
import time

from amldist.runtime.checkpoint import Checkpoints, GraceHook

# First, before torch loads (seconds on a busy machine): a SIGTERM from here on is a request to save and stop,
# never the end of the process before it could save.
GRACE = GraceHook()

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from amldist.runtime import destroy, init_distributed  # noqa: E402


def batch(step: int, rank: int):
    g = torch.Generator().manual_seed(step * 1000 + rank)  # the data of a step is the same on every attempt
    x = torch.randn(32, 8, generator=g)
    return x, x.sum(dim=1, keepdim=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=0.25)
    parser.add_argument("--model-dir", default="outputs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    grace = GRACE
    env = init_distributed(backend="gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ckpt, seen, start = Checkpoints(), [], 0
    found = ckpt.latest()
    if found is not None:
        state = found.load()
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        seen, start = state["seen"], found.step + 1
    print(f"rank {env.rank}/{env.world_size}: starting at step {start}"
          + (f" (resumed from {found.path})" if found else ""), flush=True)
    for step in range(start, args.steps):
        x, y = batch(step, env.rank)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        seen.append(step)
        time.sleep(args.step_seconds)  # stands for a longer step of real training
        stop = grace.should_stop()
        if (step + 1) % args.save_every == 0 or stop:
            ckpt.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "seen": seen}, step)
            if env.rank == 0:
                print(f"checkpoint at step {step}", flush=True)
        if stop:
            print(f"rank {env.rank}: stopping at step {step} after saving", flush=True)
            destroy()
            raise SystemExit(grace.exit_code)
    if env.rank == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
        with open(os.path.join(args.model_dir, "steps.json"), "w") as fh:
            json.dump({"seen": seen, "resumed_at": start}, fh)
        print(f"done: {len(seen)} steps applied, each once: {seen == list(range(args.steps))}", flush=True)
    destroy()


if __name__ == "__main__":
    main()
