"""What amldist.runtime.init_distributed() costs over calling init_process_group() yourself.

One run, one set of worker processes (torch is imported once per worker, outside the timing),
then rounds that alternate the two ways of forming the same group (ABBA order, so drift in
machine load hits both alike). A round: every rank forms a gloo group on a fresh port from the
same Azure ML PyTorch-style variables, runs the all_reduce calls, and tears the group down (both
the same safe way, barrier + destroy_process_group + gc.collect, what ``destroy()`` does); the
time is the wall clock from the parent's "go" until every rank reported back. Prints the median
of each and their ratio (the aim is <= 1.05).

    python bench/bench_runtime.py [--ranks 4] [--calls 20] [--rounds 40] [--max-ratio 1.05]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("direct", "runtime")
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
                 "MASTER_IP", "TF_CONFIG", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")
LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MV2_", "SLURM_", "GROUP_")
# Both ways get the same bound, so a rank that dies makes the others fail instead of waiting
# for torch's default 30 minutes.
GROUP_TIMEOUT = datetime.timedelta(seconds=60)


def worker(calls: int) -> None:
    """A rank: import once, then per line on stdin ("direct PORT" / "runtime PORT") form the
    group that way, all_reduce ``calls`` times, tear down, answer "done"."""
    import torch
    import torch.distributed as dist

    from amldist.runtime import destroy, init_distributed

    print("ready", flush=True)
    for line in sys.stdin:
        variant, port = line.split()
        os.environ["MASTER_PORT"] = port
        if variant == "direct":
            dist.init_process_group("gloo", init_method="env://", timeout=GROUP_TIMEOUT)
        else:
            init_distributed(timeout=GROUP_TIMEOUT)
        tensor = torch.ones(1024)
        for _ in range(calls):
            dist.all_reduce(tensor)
        if variant == "direct":  # the teardown destroy() does, written out: both sides end alike
            dist.barrier()
            dist.destroy_process_group()
            gc.collect()
        else:
            destroy()
        print("done", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_workers(ranks: int, calls: int) -> list[subprocess.Popen]:
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and not k.startswith(LAUNCHER_PREFIXES)}
    base.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", WORLD_SIZE=str(ranks),
                LOCAL_WORLD_SIZE=str(ranks), NODE_RANK="0", MASTER_ADDR="127.0.0.1")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "--calls", str(calls)],
                              env=dict(base, RANK=str(rank), LOCAL_RANK=str(rank)),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for rank in range(ranks)]
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    """End of input lets each worker exit; one still busy after the group timeout is killed."""
    for proc in procs:
        proc.stdin.close()
    for proc in procs:
        try:
            proc.wait(timeout=GROUP_TIMEOUT.total_seconds() + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def expect(proc: subprocess.Popen, word: str) -> None:
    line = proc.stdout.readline().strip()
    if line != word:
        raise SystemExit(f"worker {proc.pid} said {line!r} instead of {word!r} (exit code {proc.poll()})")


def one_round(procs: list[subprocess.Popen], variant: str) -> float:
    port = free_port()
    start = time.perf_counter()
    for proc in procs:
        proc.stdin.write(f"{variant} {port}\n")
        proc.stdin.flush()
    for proc in procs:
        expect(proc, "done")
    return time.perf_counter() - start


def detection_cost(calls: int = 2000) -> float:
    """Seconds per detect() + export of one rank's variables: the work init_distributed() adds."""
    sys.path.insert(0, str(ROOT))
    from amldist.runtime import detect
    from amldist.runtime.process_group import child_env

    environ = dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="4", LOCAL_WORLD_SIZE="4", NODE_RANK="0",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
    start = time.perf_counter()
    for _ in range(calls):
        child_env(detect(environ), environ)
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds per variant")
    parser.add_argument("--max-ratio", type=float, help="exit 1 when the ratio is above this")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.calls)
        return 0
    procs = start_workers(args.ranks, args.calls)
    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    try:
        for proc in procs:
            expect(proc, "ready")
        for variant in VARIANTS:  # warm-up, not counted
            one_round(procs, variant)
        for i in range(args.rounds):
            for variant in VARIANTS if i % 2 == 0 else reversed(VARIANTS):
                times[variant].append(one_round(procs, variant))
    finally:
        stop(procs)
    direct, runtime = (statistics.median(times[variant]) for variant in VARIANTS)
    ratio = runtime / direct
    print(f"{args.ranks}-rank gloo group + {args.calls} all_reduce, median of {args.rounds} rounds each:")
    print(f"  {'init_process_group() directly':34} {direct * 1000:8.1f} ms")
    print(f"  {'amldist.runtime.init_distributed()':34} {runtime * 1000:8.1f} ms")
    print(f"  ratio: {ratio:.3f} (aim <= 1.05)")
    print(f"  detection + export alone: {detection_cost() * 1e6:.0f} us per call (the rest is noise)")
    return 1 if args.max_ratio is not None and ratio > args.max_ratio else 0


if __name__ == "__main__":
    sys.exit(main())
