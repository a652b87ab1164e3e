"""Checkpoints that survive a preemption: atomic saves, the latest complete one after a restart, and a
SIGTERM grace hook.

    from amldist.runtime.checkpoint import Checkpoints, GraceHook
    ckpt, grace = Checkpoints(), GraceHook()          # install the hook early: SIGTERM now sets a flag
    found = ckpt.latest()                             # None on a first attempt
    start = 0 if found is None else found.step + 1
    if found: model.load_state_dict(found.load()["model"])
    for step in range(start, steps):
        train_one(step)
        if step % 10 == 0 or grace.should_stop():     # every rank calls both, at the same steps
            ckpt.save({"model": model.state_dict()}, step)
        if grace.should_stop():
            raise SystemExit(grace.exit_code)         # 143: ended by SIGTERM, after saving

The folder is ``AMLDIST_CHECKPOINT_DIR`` when the backend sets it (``amldist submit --retry``: every attempt
of a run gets the same folder, so a retry resumes), else ``./outputs/checkpoints``. A checkpoint is a
folder ``step_<N>`` holding ``state.pt`` (saved by rank 0) or ``rank_<R>.pt`` (``every_rank=True``:
each rank its own shard) and ``COMPLETE`` (json: step, world size, time). Every file is written into
``.staging-step_<N>-<id>/``, flushed to disk, and the folder is renamed to ``step_<N>`` only after every
rank has written (a barrier) and ``COMPLETE`` is written: a process killed at any moment leaves either
a complete checkpoint or a staging folder that :meth:`Checkpoints.latest` never returns (and the next
save removes). The ``keep`` newest complete checkpoints are kept.

:class:`GraceHook` turns SIGTERM (a preempted VM, Slurm's preemption and time limit, ``amldist job
cancel``) into a flag; :meth:`GraceHook.should_stop` is True on *every* rank as soon as *one* rank was
signalled (a MAX all-reduce of the flag when a process group exists, so only the signalled node's
ranks need to be told), so all ranks save the same step together before the SIGKILL that follows
the grace period. Standard library only at import, as the rest of the runtime: torch is imported
by the functions that save and load (``pickle`` when torch is absent).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from dataclasses import dataclass

ENV_DIR = "AMLDIST_CHECKPOINT_DIR"
DEFAULT_DIR = os.path.join("outputs", "checkpoints")
COMPLETE = "COMPLETE"
PREFIX = "step_"
STAGING = ".staging-"


def _dist():
    """torch.distributed when a process group is formed, else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def _rank_world() -> tuple[int, int]:
    dist = _dist()
    return (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)


def _barrier() -> None:
    dist = _dist()
    if dist is not None and dist.get_world_size() > 1:
        dist.barrier()


def _write(obj, path: str) -> None:
    """``obj`` to ``path`` (torch.save, or pickle without torch), flushed to the disk."""
    with open(path, "wb") as fh:
        try:
            import torch
        except ImportError:
            import pickle
            pickle.dump(obj, fh)
        else:
            torch.save(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())


def _read(path: str, map_location="cpu"):
    try:
        import torch
    except ImportError:
        import pickle
        with open(path, "rb") as fh:
            return pickle.load(fh)
    return torch.load(path, map_location=map_location, weights_only=False)


def _sync_folder(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Checkpoint:
    """One complete checkpoint: its step and folder."""

    step: int
    path: str
    every_rank: bool

    def load(self, map_location="cpu", rank: int | None = None):
        """The saved state: ``state.pt``, or this rank's shard (``rank_<R>.pt``) when every rank saved."""
        if not self.every_rank:
            return _read(os.path.join(self.path, "state.pt"), map_location)
        rank = _rank_world()[0] if rank is None else rank
        return _read(os.path.join(self.path, f"rank_{rank:05d}.pt"), map_location)


class Checkpoints:
    """The checkpoints of one run (see the module docstring)."""

    def __init__(self, folder: str | None = None, *, keep: int = 2):
        self.folder = folder or os.environ.get(ENV_DIR) or DEFAULT_DIR
        self.keep = max(1, keep)

    def complete(self) -> list[Checkpoint]:
        """Every complete checkpoint, oldest first; staging folders and strays are not checkpoints."""
        found = []
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        for name in names:
            digits = name[len(PREFIX):]
            path = os.path.join(self.folder, name)
            if not (name.startswith(PREFIX) and digits.isascii() and digits.isdigit()):
                continue
            if not os.path.isfile(os.path.join(path, COMPLETE)) or os.path.islink(path):
                continue
            found.append(Checkpoint(int(digits), path, not os.path.exists(os.path.join(path, "state.pt"))))
        return sorted(found, key=lambda c: c.step)

    def latest(self) -> Checkpoint | None:
        """The newest complete checkpoint, or None (a first attempt)."""
        done = self.complete()
        return done[-1] if done else None

    def save(self, state, step: int, *, every_rank: bool = False) -> Checkpoint | None:
        """Save ``state`` as step ``step``; every rank calls it (it holds barriers when a process group
        exists). Returns the checkpoint (None on ranks other than 0)."""
        if not isinstance(step, int) or step < 0:
            raise ValueError(f"a checkpoint's step is a whole number >= 0, not {step!r}")
        rank, world = _rank_world()
        os.makedirs(self.folder, exist_ok=True)
        staging = os.path.join(self.folder, f"{STAGING}{PREFIX}{step}-{self._run_id(rank)}")
        if rank == 0:
            os.makedirs(staging)
        _barrier()  # the staging folder exists for everyone
        if every_rank:
            _write(state, os.path.join(staging, f"rank_{rank:05d}.pt"))
        elif rank == 0:
            _write(state, os.path.join(staging, "state.pt"))
        _barrier()  # every shard is on disk
        done = None
        if rank == 0:
            done = self._seal(staging, step, world, every_rank)
        _barrier()  # nobody moves on (or exits) before the checkpoint is complete
        return done

    def _run_id(self, rank: int) -> str:
        """One staging name for all ranks: rank 0's id, agreed through the folder's name prefix."""
        dist = _dist()
        token = uuid.uuid4().hex[:12] if rank == 0 else ""
        if dist is not None and dist.get_world_size() > 1:
            box = [token]
            dist.broadcast_object_list(box, src=0)
            token = box[0]
        return token

    def _seal(self, staging: str, step: int, world: int, every_rank: bool) -> Checkpoint:
        with open(os.path.join(staging, COMPLETE), "w", encoding="utf-8") as fh:
            json.dump({"step": step, "world_size": world, "every_rank": every_rank, "time": time.time()}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        final = os.path.join(self.folder, f"{PREFIX}{step}")
        if os.path.isdir(final) and not os.path.islink(final):
            shutil.rmtree(final)  # the same step saved again (a retry re-running it): the newer wins
        os.rename(staging, final)
        _sync_folder(self.folder)
        self._prune()
        return Checkpoint(step, final, every_rank)

    def _prune(self) -> None:
        """Keep the ``keep`` newest complete checkpoints; remove staging folders of older saves."""
        for old in self.complete()[:-self.keep]:
            shutil.rmtree(old.path, ignore_errors=True)
        for name in os.listdir(self.folder):
            if name.startswith(STAGING):
                shutil.rmtree(os.path.join(self.folder, name), ignore_errors=True)


class GraceHook:
    """SIGTERM as a flag every rank sees (see the module docstring). ``exit_code``: 143, the code a
    process ended by SIGTERM reports, so the backend still sees a preempted attempt."""

    exit_code = 128 + signal.SIGTERM

    def __init__(self, signals=(signal.SIGTERM,)):
        self.signalled_at: float | None = None
        self._agreed = False
        for signum in signals:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, _frame) -> None:
        if self.signalled_at is None:
            self.signalled_at = time.time()
            print(f"amldist.runtime.checkpoint: {signal.Signals(signum).name} received: saving before the "
                  "grace period ends", flush=True)

    def should_stop(self) -> bool:
        """True on every rank once any rank was signalled (every rank must call it at the same steps)."""
        if self._agreed:
            return True
        mine = self.signalled_at is not None
        dist = _dist()
        if dist is None or dist.get_world_size() == 1:
            self._agreed = mine
            return mine
        import torch
        on_gpu = dist.get_backend() == "nccl"  # NCCL reduces only tensors on the rank's GPU
        device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
        flag = torch.tensor([1 if mine else 0], dtype=torch.int32, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self._agreed = bool(flag.item())
        return self._agreed
