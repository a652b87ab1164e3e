"""Benchmark: ``validate`` of bench_validate.py's 300 command jobs, this checkout against an earlier git revision.

Both sides run in the same run, interleaved, each in its own warm process (import, one file to warm up, then
the timed loop over the same 300 files, as bench_validate.py's first measurement, in CPU time); the earlier
revision is
exported with ``git archive`` into a temporary folder. Prints each side's median and the ratio.

    python bench/bench_validate_revisions.py REVISION [--runs 5] [--count 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_validate  # noqa: E402  (the same generator and warm loop)

ROOT = Path(__file__).resolve().parents[1]


# bench_validate's warm loop, timed in CPU seconds: on a shared machine other processes' load stays out of it; it
# also says which amldist it imported, so that a side timing the other's code is caught
WARM = bench_validate.AMLDIST_WARM.replace("time.perf_counter()", "time.process_time()").replace(
    '{"loop_s": ', '{"amldist": __import__("amldist").__file__, "loop_s": ')


def loop_seconds(tree: Path, listing: Path) -> float:
    """One warm loop over ``listing`` with ``tree``'s amldist.

    Run in ``tree``: ``python -c`` puts its working directory first on ``sys.path``, so started from this
    checkout both sides would import this checkout's amldist whatever PYTHONPATH says."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", WARM, str(listing)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"warm loop failed in {tree}: {done.stderr[-800:]}")
    report = json.loads(done.stdout)
    imported = Path(report["amldist"]).resolve()
    if not imported.is_relative_to(tree.resolve()):
        raise SystemExit(f"the warm loop for {tree} imported {imported}")
    return report["loop_s"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--count", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        earlier = Path(tmp) / "earlier"
        earlier.mkdir()
        archive = subprocess.run(["git", "archive", args.revision], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(earlier)], input=archive.stdout, check=True)
        specs = Path(tmp) / "specs"
        specs.mkdir()
        rng = random.Random(5)
        paths = []
        for i in range(args.count):
            (specs / f"cj_{i}.yml").write_text(bench_validate._job(rng, i))
            paths.append(str(specs / f"cj_{i}.yml"))
        listing = specs / "command-jobs.json"
        listing.write_text(json.dumps(paths))
        now, then = [], []
        for _ in range(args.runs):
            now.append(loop_seconds(ROOT, listing))
            then.append(loop_seconds(earlier, listing))
    ours, theirs = statistics.median(now), statistics.median(then)
    print(f"{args.count} command jobs, {args.runs} runs each, interleaved")
    print(f"this checkout:  {ours:.3f} s  ({ours / args.count * 1000:.2f} ms a job)")
    print(f"{args.revision}: {theirs:.3f} s  ({theirs / args.count * 1000:.2f} ms a job)")
    print(f"ratio: {theirs / ours:.2f}x  (> 1: this checkout is faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
