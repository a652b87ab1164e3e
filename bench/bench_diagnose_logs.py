"""``amldist job diagnose --logs DIR`` on 1,024 ranks' logs vs ``grep -E`` of the same patterns over the same files.

The workload is an Azure ML log folder (``artifacts/user_logs/std_log_process_NNNN.txt``) of ``--ranks`` logs of
``--kib`` KiB each (default 1,024 x 256 KiB: the tail diagnose reads is 256 KiB, so both read every byte), written
as a job of 8 ranks per node writes them: step lines, NCCL INFO lines, and at the end a watchdog timeout on every
rank but one, whose GPU hit an uncorrectable ECC error (rank :data:`CULPRIT`, or the last of fewer ranks).
The alternative is what one would run by hand: ``grep -E -c -f PATTERNS -r DIR`` with the signature table's own
line patterns (amldist/diagnosis/known_lines.py, written in the syntax RE2 and POSIX ERE share).

Both run as commands, in alternating rounds (ABAB, so drift in machine load hits both alike); the medians and
their ratio are printed, with the diagnose process's peak memory (ru_maxrss). The diagnosis must name the culprit
in every round, or the run fails.

    python bench/bench_diagnose_logs.py [--ranks 1024] [--kib 256] [--rounds 3] [--max-ratio 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PER_NODE = 8
CULPRIT = 613
STEP = ("2024-05-02 10:{m:02d}:{s:02d},{ms:03d} INFO train: epoch 0 step {step} loss {loss:.4f} lr 0.0001 "
        "tokens/s 41234.5 grad_norm 0.8312\n")


def culprit(ranks: int) -> int:
    return min(CULPRIT, ranks - 1)


def rank_text(rank: int, size: int, bad: int = CULPRIT) -> str:
    """One rank's log of about ``size`` bytes, ending the way the job ended for it."""
    node, local = divmod(rank, PER_NODE)
    host = f"4f0c2a9d81e34b7a9c5d3e2f1a0b{node:06d}"
    head = [f"{host}:{310 + local}:{310 + local} [{local}] NCCL INFO Bootstrap : Using eth0:10.0.{node // 250}."
            f"{node % 250 + 4}<0>\n",
            f"{host}:{310 + local}:{310 + local} [{local}] NCCL INFO NET/IB : Using [0]mlx5_ib0:1/IB [1]mlx5_ib1:1/IB "
            f"[RO]; OOB eth0:10.0.{node // 250}.{node % 250 + 4}<0>\n"]
    if rank == bad:
        end = [f"[rank{rank}]: Traceback (most recent call last):\n",
               f'[rank{rank}]:   File "/mnt/azureml/cr/j/abc/exe/wd/train.py", line 71, in main\n',
               f"[rank{rank}]:     loss.backward()\n",
               f"[rank{rank}]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"]
    else:
        end = [f"[rank{rank}]:[E502 10:41:08.160918398 ProcessGroupNCCL.cpp:655] [Rank {rank}] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=1602, OpType=ALLREDUCE, NumelIn=25165824, "
               "NumelOut=25165824, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n"]
    body, used, step = [], sum(map(len, head + end)), 0
    while used < size:
        line = STEP.format(m=step // 600 % 60, s=step // 10 % 60, ms=step % 1000, step=step, loss=2.3 - step * 1e-5)
        body.append(line)
        used += len(line)
        step += 1
    return "".join(head + body + end)


def write_workload(folder: Path, ranks: int, kib: int) -> Path:
    logs = folder / "artifacts" / "user_logs"
    logs.mkdir(parents=True)
    for rank in range(ranks):
        (logs / f"std_log_process_{rank:04d}.txt").write_text(rank_text(rank, kib * 1024, culprit(ranks)))
    return folder


def grep_patterns(folder: Path) -> Path:
    """The known lines' patterns, one a line, as ``grep -f`` reads them."""
    sys.path.insert(0, str(ROOT))
    from amldist.diagnosis.signatures import SIGNATURES

    path = folder / "patterns.txt"
    path.write_text("".join(s.entry.pattern + "\n" for s in SIGNATURES if hasattr(s, "entry")))
    return path


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-ratio", type=float, default=None, help="fail when diagnose/grep is above this")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="amldist-bench-diagnose-"))
    try:
        folder = write_workload(work / "job", args.ranks, args.kib)
        patterns = grep_patterns(work)
        diagnose = [sys.executable, "-m", "amldist", "job", "diagnose", "--logs", str(folder), "--format", "json"]
        grep = ["grep", "-E", "-c", "-r", "-f", str(patterns), str(folder / "artifacts")]
        times = {"diagnose": [], "grep": []}
        for _ in range(args.rounds):
            for name, command in (("diagnose", diagnose), ("grep", grep)):
                elapsed, out = timed(command)
                times[name].append(elapsed)
                if name == "diagnose" and json.loads(out)["first_failure"]["rank"] != culprit(args.ranks):
                    raise SystemExit(f"diagnose named the wrong rank: {json.loads(out)['first_failure']}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        mib = args.ranks * args.kib / 1024
        med = {name: statistics.median(values) for name, values in times.items()}
        print(f"workload: {args.ranks} ranks x {args.kib} KiB = {mib:.0f} MiB of logs, {args.rounds} rounds")
        print(f"grep -E -f (the same {sum(1 for _ in patterns.open())} patterns): {med['grep'] * 1000:.0f} ms")
        print(f"amldist job diagnose --logs: {med['diagnose'] * 1000:.0f} ms (peak memory {peak:.0f} MiB)")
        ratio = med["diagnose"] / med["grep"]
        print(f"ratio: {ratio:.2f}")
        return 1 if args.max_ratio is not None and ratio > args.max_ratio else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
