"""The command's end: ``amldist`` (which skips Python's teardown, amldist/cli/process_exit.py) against the same
command ending with a plain ``sys.exit`` (the teardown in full), in CPU seconds of the whole process.

Two commands: the Azure dry run of the PyTorch sample (azure-ai-ml loaded: a large teardown) and ``validate`` of
the same file (amldist's own modules only). The two ways alternate, so a busy machine slows both alike; the
ratio printed is fast / plain of the medians (aim: <= 0.9 for the dry run, <= 1.05 for validate: never slower).
Exit 1 when an aim is missed. Without azure-ai-ml the dry run is left out, in one line.

    python bench/bench_cli_exit.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "samples" / "pytorch_ddp" / "job.yml")
FAST = [sys.executable, "-m", "amldist"]
PLAIN = [sys.executable, "-c", "import sys; from amldist.cli.main import main; sys.exit(main())"]
AIMS = {"submit --dry-run (Azure ML)": 0.9, "validate": 1.05}


def cpu_seconds(argv: list[str]) -> float:
    """User plus system CPU of one finished command (this process's children, before and after)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[-4:])} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(args: list[str], repeat: int) -> tuple[float, float]:
    fast, plain = [], []
    for _ in range(repeat):
        fast.append(cpu_seconds(FAST + args))
        plain.append(cpu_seconds(PLAIN + args))
    return statistics.median(fast), statistics.median(plain)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    commands = {"validate": ["validate", SAMPLE]}
    if importlib.util.find_spec("azure.ai.ml"):
        commands = {"submit --dry-run (Azure ML)": ["submit", SAMPLE, "--dry-run"], **commands}
    else:
        print("azure-ai-ml is not installed: the Azure dry run is left out (pip install '.[azure]')")
    missed = []
    for name, args in commands.items():
        fast, plain = compare(args, repeat)
        ratio = fast / plain
        print(f"{name}: {fast:.2f} s CPU without the teardown, {plain:.2f} s with it: ratio {ratio:.2f} "
              f"(aim <= {AIMS[name]})")
        if ratio > AIMS[name]:
            missed.append(name)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
