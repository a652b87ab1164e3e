"""Multi-worker training under Azure ML's ``distribution: tensorflow`` (TF_CONFIG).

Azure ML starts one process per worker and gives each a TF_CONFIG: the cluster's "host:port"
lists and this task's type and index. ``amldist.runtime.detect()`` reads it (rank = place among
chief and workers) for logging and for the torch fallback.

- With TensorFlow installed (``--framework auto`` or ``tensorflow``): a small Keras regression model
  under ``tf.distribute.MultiWorkerMirroredStrategy``, which reads TF_CONFIG itself. The chief
  (rank 0) saves the model to ``--model-dir``; the others save to a scratch folder, as the
  strategy requires every worker to take part in saving.
- Without it (``auto`` prints why) or with ``--framework torch``: the same model with torch
  DistributedDataParallel over gloo, the group formed by ``init_distributed()`` from the same
  TF_CONFIG cluster (master = the first worker's host and port).

Rank 0 writes ``metrics.json`` next to the model. Locally, without TF_CONFIG, it trains alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

try:
    from amldist.runtime import destroy, detect, init_distributed
except ImportError:  # the job's code snapshot lacks the runtime
    sys.exit(
        "error: amldist.runtime is not importable; submit with `amldist submit` (it bundles the runtime "
        "into the code snapshot) or copy amldist/runtime/ into this folder as amldist/runtime/"
    )

FEATURES, ROWS = 8, 2048


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", choices=("auto", "tensorflow", "torch"), default="auto")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-dir", required=True)
    return parser.parse_args(argv)


def synthetic(seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)  # the same data on every worker; the strategy shards it
    x = rng.standard_normal((ROWS, FEATURES)).astype("float32")
    y = (x @ rng.standard_normal((FEATURES, 1)) + 0.1 * rng.standard_normal((ROWS, 1))).astype("float32")
    return x, y


def synthetic_torch(seed: int):
    """The same kind of data from torch alone: the fallback must not need numpy (torch does not ship it)."""
    import torch

    gen = torch.Generator().manual_seed(seed)  # the same data on every worker; each takes its own rows
    x = torch.randn(ROWS, FEATURES, generator=gen)
    y = x @ torch.randn(FEATURES, 1, generator=gen) + 0.1 * torch.randn(ROWS, 1, generator=gen)
    return x, y


def train_tensorflow(args, env) -> dict:
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    x, y = synthetic(args.seed)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(ROWS, seed=args.seed).batch(args.batch_size)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((FEATURES,)), tf.keras.layers.Dense(32, activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(args.learning_rate), loss="mse")
    history = model.fit(dataset, epochs=args.epochs, verbose=2 if env.rank == 0 else 0)
    target = Path(args.model_dir) if env.rank == 0 else Path(tempfile.mkdtemp())
    model.save(target / "model.keras")
    return {"loss": [float(v) for v in history.history["loss"]]}


def train_torch(args, env) -> dict:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    init_distributed(backend="gloo")
    x, y = synthetic_torch(args.seed)
    shard = slice(env.rank, None, env.world_size)  # every worker takes its own rows
    x, y = x[shard], y[shard]
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.learning_rate)
    per_worker = max(1, args.batch_size // env.world_size)
    history = []
    for epoch in range(args.epochs):
        total = torch.zeros(2)
        for start in range(0, x.shape[0], per_worker):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x[start:start + per_worker]), y[start:start + per_worker])
            loss.backward()
            optimizer.step()
            total += torch.stack([loss.detach(), torch.ones(())])
        dist.all_reduce(total)
        history.append(float(total[0] / total[1]))
        if env.rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss {history[-1]:.4f}", flush=True)
    if env.rank == 0:
        torch.save(model.state_dict(), Path(args.model_dir) / "model.pt")
    destroy()  # barrier, tear down, free the group before exit: a safe end for gloo too
    return {"loss": history}


def main(argv=None) -> int:
    args = parse_args(argv)
    env = detect()  # TF_CONFIG -> rank, world size; a world of one without it
    framework = args.framework
    if framework == "auto":
        framework = "tensorflow" if importlib.util.find_spec("tensorflow") else "torch"
        if framework == "torch" and env.rank == 0:
            print("tensorflow is not installed: training with torch (gloo) over the TF_CONFIG cluster instead",
                  file=sys.stderr, flush=True)
    Path(args.model_dir).mkdir(parents=True, exist_ok=True)
    metrics = (train_tensorflow if framework == "tensorflow" else train_torch)(args, env)
    if env.rank == 0:
        metrics.update(framework=framework, world_size=env.world_size, launcher=env.launcher)
        (Path(args.model_dir) / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
