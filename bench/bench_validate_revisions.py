"""Benchmark: ``validate`` of bench_validate.py's 300 command jobs, this checkout against an earlier git revision.

Both sides run in the same run, interleaved, each in its own warm process (import, one file to warm up, then
the timed loop over the same 300 files, as bench_validate.py's first measurement, in CPU time); the earlier
revision is exported with ``git archive`` into a temporary folder. Two sets of files:

- ``same commands``: the jobs exactly as bench_validate.py writes them (their commands differ only in the
  inputs' values, so what is kept per command text is reused from the second file on);
- ``distinct commands``: the same jobs, each command made different (``--seed N`` appended), so that
  nothing kept for one command serves another: every command is analysed afresh, as in a repository of
  unrelated jobs.

Prints each side's median CPU time and the ratio, and the share of the warm loop spent in the shell analysis
(``amldist.validate.command_rules.shell_findings``, the same entry point in both revisions; measured in
runs of their own, since timing each call costs a little).

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
# the same loop with the shell analysis timed call by call: its share of the loop
SHARE = WARM.replace("from amldist.validate import validate_file", """from amldist.validate import validate_file
from amldist.validate import command_rules
shell = [0.0]
def timed_shell(*args, _analyse=command_rules.shell_findings, **kwargs):
    began = time.process_time()
    try:
        return _analyse(*args, **kwargs)
    finally:
        shell[0] += time.process_time() - began
command_rules.shell_findings = timed_shell""").replace("\nstart = ", "\nshell[0] = 0.0  # the warm-up's left out\nstart = ").replace(
    '"loop_s": ', '"shell_s": shell[0], "loop_s": ')


def warm_loop(tree: Path, listing: Path, script: str = WARM) -> dict:
    """One warm loop over ``listing`` with ``tree``'s amldist: its report (``loop_s``, ``shell_s``).

    Run in ``tree``: ``python -c`` puts its working directory first on ``sys.path``, so started from this
    checkout both sides would import this checkout's amldist whatever PYTHONPATH says."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", script, str(listing)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"warm loop failed in {tree}: {done.stderr[-800:]}")
    report = json.loads(done.stdout)
    imported = Path(report["amldist"]).resolve()
    if not imported.is_relative_to(tree.resolve()):
        raise SystemExit(f"the warm loop for {tree} imported {imported}")
    return report


def write_jobs(folder: Path, count: int, distinct: bool) -> Path:
    """bench_validate's command jobs (the same seed as its first measurement) and the listing of their paths."""
    folder.mkdir()
    rng = random.Random(5)
    paths = []
    for i in range(count):
        text = bench_validate._job(rng, i)
        if distinct:
            text = text.replace("  --out ${{outputs.model}}\n", f"  --out ${{{{outputs.model}}}} --seed {i}\n", 1)
            assert f"--seed {i}" in text
        (folder / f"cj_{i}.yml").write_text(text)
        paths.append(str(folder / f"cj_{i}.yml"))
    listing = folder / "command-jobs.json"
    listing.write_text(json.dumps(paths))
    return listing


def compare(label: str, listing: Path, trees: dict, runs: int, count: int) -> None:
    """Interleaved runs of each tree over ``listing``; prints the medians, the ratio and the shell share."""
    loops: dict = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            loops[name].append(warm_loop(tree, listing)["loop_s"])
    (now, ours), (then, theirs) = [(name, statistics.median(times)) for name, times in loops.items()]
    print(f"-- {count} command jobs, {label}; {runs} runs each, interleaved, CPU time")
    for name, seconds in ((now, ours), (then, theirs)):
        share = statistics.median(r["shell_s"] / r["loop_s"] for r in
                                  (warm_loop(trees[name], listing, SHARE) for _ in range(max(1, runs // 2))))
        print(f"{name + ':':16s}{seconds:.3f} s  ({seconds / count * 1000:.2f} ms a job; "
              f"shell analysis {100 * share:.0f}% of it)")
    print(f"ratio: {theirs / ours:.2f}x  (> 1: this checkout is faster)")


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
        trees = {"this checkout": ROOT, args.revision: earlier}
        for label, distinct in (("same commands", False), ("distinct commands", True)):
            listing = write_jobs(Path(tmp) / label.replace(" ", "-"), args.count, distinct)
            compare(label, listing, trees, args.runs, args.count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
