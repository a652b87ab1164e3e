"""One rank that trains by steps with amldist.runtime.checkpoint: resumes from the latest checkpoint, saves
every SAVE_EVERY steps (and when the grace hook says so), records which steps it applied, and prints
``RESULT {json}``. Waits at STALL_AT for a SIGTERM (a file tells the test it is there) when asked."""

from __future__ import annotations

import json
import os
import sys
import time

import torch

from amldist.runtime import destroy, init_distributed
from amldist.runtime.checkpoint import Checkpoints, GraceHook

grace = GraceHook()
env = init_distributed(backend="gloo")
ckpt = Checkpoints(keep=int(os.environ.get("KEEP", "2")))
every_rank = os.environ.get("EVERY_RANK") == "1"
found = ckpt.latest()
state = {"seen": [], "weight": torch.zeros(1)} if found is None else found.load()
start = 0 if found is None else found.step + 1
steps, save_every = int(os.environ["STEPS"]), int(os.environ["SAVE_EVERY"])
stall_at = int(os.environ.get("STALL_AT", "-1"))
stopped = False
for step in range(start, steps):
    state["seen"].append(step)
    state["weight"] += 1
    if step == stall_at and env.rank == int(os.environ.get("STALL_RANK", "0")):
        open(os.environ["READY_FILE"], "w").close()
        while grace.signalled_at is None:  # the test sends SIGTERM to this rank only
            time.sleep(0.05)
    stop = grace.should_stop()
    if step % save_every == 0 or stop:
        ckpt.save(state, step, every_rank=every_rank)
    if stop:
        stopped = True
        break
print("RESULT " + json.dumps({"rank": env.rank, "start": start, "seen": state["seen"], "stopped": stopped,
                              "complete": [c.step for c in ckpt.complete()]}), flush=True)
destroy()
sys.exit(grace.exit_code if stopped else 0)
