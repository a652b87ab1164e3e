"""init_distributed(): export the detected variables and form torch's default process group;
destroy() tears it down.

torch is imported inside the functions that need it, so ``import amldist.runtime`` and
``--print`` work in containers without it. The choices (backend, device, keyword arguments) are
small pure functions so they can be checked without a GPU.
"""

from __future__ import annotations

import atexit
import datetime
import gc
import inspect
import os
import sys
from collections.abc import Collection, MutableMapping

from . import diagnostics, evidence
from .detection import detect
from .dist_env import DistEnv, DistEnvError
from .env_reader import quote
from .torchelastic import TorchElastic

# With this set, torch's env:// rendezvous makes every rank a client of a store that torchrun's
# agent is supposed to host; in a world torchrun did not start, nobody hosts it and ranks hang.
AGENT_STORE_VAR = "TORCHELASTIC_USE_AGENT_STORE"

_current: DistEnv | None = None
_collect_pending = False  # a group was formed here and not yet collected after: destroy() must gc.collect()
_watchdog = None  # watchdog.Watchdog while one runs


def export_env(env: DistEnv, environ: MutableMapping[str, str]) -> None:
    """Write ``env.to_env()`` into ``environ``. NCCL_* and UCX_* are never touched: they are the
    user's or the image's tuning and NCCL's own defaults are sound."""
    environ.update(env.to_env())
    if env.launcher != TorchElastic.name:
        environ.pop(AGENT_STORE_VAR, None)


def child_env(env: DistEnv, environ: MutableMapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` with the mapped variables, for a process started under them."""
    copy = dict(environ)
    export_env(env, copy)
    return copy


def choose_backend(requested: str, cuda_available: bool) -> str:
    """"auto" is nccl when CUDA is there and gloo otherwise; anything else is the caller's choice."""
    if requested == "auto":
        return "nccl" if cuda_available else "gloo"
    return requested


def cuda_device_index(local_rank: int, device_count: int) -> int:
    """The GPU this process drives. Setting it from the local rank avoids NCCL's "Duplicate GPU
    detected", where every rank would otherwise default to GPU 0."""
    if local_rank < device_count:
        return local_rank
    if device_count == 1:
        return 0  # one GPU per process (e.g. Slurm --gpus-per-task=1): each sees only its own
    raise DistEnvError(
        f"local rank {local_rank} has no GPU: only {device_count} visible "
        f"(CUDA_VISIBLE_DEVICES={quote(os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'))}); start at most "
        f"{device_count} processes per node"
    )


def init_kwargs(parameters: Collection[str], backend: str, timeout, device) -> dict:
    """Keyword arguments for ``init_process_group``, limited to what its signature accepts.

    ``device_id`` (torch >= 2.3) makes NCCL connect at init, so a bad setup fails there and not
    at the first collective.
    """
    kwargs: dict = {"backend": backend, "init_method": "env://"}
    if timeout is not None:
        kwargs["timeout"] = timeout if isinstance(timeout, datetime.timedelta) else datetime.timedelta(seconds=timeout)
    if device is not None and "nccl" in backend and "device_id" in parameters:
        kwargs["device_id"] = device
    return kwargs


def init_distributed(backend: str = "auto", timeout=None, *, debug: bool | None = None, check: bool = False,
                     stall_timeout: float | None = None) -> DistEnv:
    """Detect the launcher, export RANK & co., pick the device and form the default process group.

    ``timeout`` is a ``datetime.timedelta`` or seconds; None keeps torch's default. ``debug``
    forces the rank-0 diagnostics on or off (default: the AMLDIST_DEBUG variable). ``check`` runs
    the fabric check once the group is formed (:mod:`.check`; raises ``FabricCheckFailed`` on every
    rank when it fails). ``stall_timeout`` (seconds; default: the AMLDIST_STALL_TIMEOUT variable,
    off when unset) starts the stall watchdog (:mod:`.watchdog`). A second call returns the same
    DistEnv without forming the group again.
    """
    global _current, _collect_pending
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        # Formed by an earlier call, or by the script itself: report, never form it twice.
        _current = _current or detect()
        return _current
    env = detect()
    from . import watchdog  # here, not at import: a bare `import amldist.runtime` starts nothing of it

    stall = watchdog.stall_timeout(stall_timeout, os.environ)  # a bad value fails before the rendezvous
    export_env(env, os.environ)
    name = choose_backend(backend, torch.cuda.is_available())
    if check and "nccl" in name:
        from .check import probe_transport

        probe_transport(os.environ)  # NCCL reads its variables when it starts: before init
    device = None
    if torch.cuda.is_available():
        index = cuda_device_index(env.local_rank, torch.cuda.device_count())
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
    # Before init, so the diagnostics are there to read when the rendezvous hangs.
    diagnostics.report(env, os.environ, flag=debug)
    evidence.arm(env.rank, os.environ)  # the Flight Recorder is read when the group is formed: before init
    parameters = inspect.signature(dist.init_process_group).parameters
    dist.init_process_group(**init_kwargs(parameters, name, timeout, device))
    # Registered after torch's own import, so it runs before torch's hooks (atexit is LIFO).
    atexit.unregister(_collect_at_exit)
    atexit.register(_collect_at_exit)
    _current, _collect_pending = env, True
    if check:
        _check(env)
    if stall is not None:
        _start_watchdog(env, stall)
    return env


def _check(env: DistEnv) -> None:
    from .check import FabricCheckFailed, run_check

    failures = run_check(env)
    if failures:
        raise FabricCheckFailed("; ".join(failures))


def _start_watchdog(env: DistEnv, seconds: float) -> None:
    global _watchdog
    from . import watchdog

    _watchdog = watchdog.Watchdog(env.rank, env.world_size, watchdog.job_store(env), seconds).start()


def _stop_watchdog() -> None:
    global _watchdog
    if _watchdog is not None:
        _watchdog.stop()
        _watchdog = None


def _collect_at_exit() -> None:
    """atexit hook: tear the group down (if the script did not) and free what still refers to it
    while the interpreter is whole; see destroy()."""
    _stop_watchdog()
    evidence.before_teardown()  # a rank leaving with its group up writes why, while the group can still say
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_initialized():
        dist.destroy_process_group()  # no barrier here: a rank may be exiting on an error
    gc.collect()


def destroy() -> None:
    """Tear the default process group down (if any), so init_distributed() may form a new one.

    The order is what keeps gloo runs from ending in ``terminate called without an active
    exception`` (SIGABRT, exit -6) on some rank:

    1. ``barrier()``: no rank lets go of the group while another still has collectives in flight;
    2. ``destroy_process_group()``: the backend's threads are shut down;
    3. ``gc.collect()`` now, and again at exit (a hook init_distributed() registers): the C++
       process group and the gloo work it still holds are referenced from Python objects in
       reference cycles (DistributedDataParallel and its reducer, usually still alive in the
       caller's frame), so destroy_process_group() alone does not free them. Left to interpreter
       finalization, freeing them takes the GIL of a half torn-down interpreter and aborts: the
       failure analysed in pytorch/pytorch PR #179291 (closed unmerged) and issue #190489.
       Collecting in an atexit hook frees them while Python is still whole.

    Call it once every rank is done, from every rank (it is collective because of the barrier).
    """
    global _current, _collect_pending
    _current = None
    _stop_watchdog()  # waiting in the barrier below is not a stall
    dist = sys.modules.get("torch.distributed")  # never import torch just to find nothing to do
    torn_down = dist is not None and dist.is_initialized()
    if torn_down:
        dist.barrier()
        dist.destroy_process_group()
    if torn_down or _collect_pending:  # with no group ever formed there is nothing to free (a full
        gc.collect()                  # collection costs ~0.4 s in a process holding azure-ai-ml)
        _collect_pending = False
