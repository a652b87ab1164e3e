"""Launch overhead: ``amldist submit --local`` against ``torchrun --standalone``, same script.

The job is a trivial 4-process gloo world: every rank calls init_process_group (env://, so the
same script works under both launchers), does one all_reduce, checks the sum and leaves. Each
repetition times the whole command, from start to exit, with the two launchers alternating so
that a busy machine slows both alike. The ratio printed is amldist / torchrun of the medians
(aim: <= 1.0).

    python bench/bench_submit_local.py [--repeat 3] [--nproc 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

SCRIPT = textwrap.dedent("""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    t = torch.ones(1) * dist.get_rank()
    dist.all_reduce(t)
    n = dist.get_world_size()
    assert t.item() == n * (n - 1) / 2, t
    dist.destroy_process_group()
""")

JOB = textwrap.dedent("""
    $schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
    type: command
    code: src
    command: python allreduce.py
    environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
    distribution:
      type: pytorch
      process_count_per_instance: {nproc}
    resources:
      instance_count: 1
""")


def timed(argv, cwd) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")  # torchrun sets it to 1 per worker; the same for both
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=300)
    except BaseException:
        # SIGTERM, not SIGKILL: both launchers then stop their workers (no orphans left behind).
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({proc.returncode}):\n{stdout}\n{stderr}")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nproc", type=int, default=4)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="amldist-bench-") as work:
        os.makedirs(os.path.join(work, "src"))
        with open(os.path.join(work, "src", "allreduce.py"), "w") as fh:
            fh.write(SCRIPT)
        with open(os.path.join(work, "job.yml"), "w") as fh:
            fh.write(JOB.format(nproc=args.nproc))
        amldist = [sys.executable, "-m", "amldist", "submit", "job.yml", "--local"]
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc-per-node={args.nproc}", os.path.join("src", "allreduce.py")]
        times = {"amldist": [], "torchrun": []}
        timed(torchrun, work)  # warm the file cache once, untimed
        for _ in range(args.repeat):
            times["torchrun"].append(timed(torchrun, work))
            times["amldist"].append(timed(amldist, work))

    for name, values in times.items():
        print(f"{name:9s} median {statistics.median(values):.2f}s  runs " + " ".join(f"{v:.2f}" for v in values))
    ratio = statistics.median(times["amldist"]) / statistics.median(times["torchrun"])
    print(f"ratio amldist/torchrun: {ratio:.2f} ({args.nproc} processes, gloo, {args.repeat} runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
