"""bench/bench_diagnose_logs.py: the default run checks its workload (the folder is what the benchmark says, and
grep is asked the same question); ``--bench`` runs it end to end at a small size."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_diagnose_logs as bench  # noqa: E402

from amldist.diagnosis.folder import diagnose_folder  # noqa: E402


def test_the_workload_is_an_azure_ml_folder_with_one_culprit_that_grep_and_diagnose_both_find(tmp_path):
    folder = bench.write_workload(tmp_path / "job", 24, 16)
    logs = sorted((folder / "artifacts" / "user_logs").iterdir())
    assert len(logs) == 24 and all(15 * 1024 <= p.stat().st_size <= 18 * 1024 for p in logs)
    result = diagnose_folder(str(folder))
    assert (result.rank.rank, result.finding.signature) == (bench.culprit(24), "gpu-ecc-error")
    assert result.rank.node == bench.culprit(24) // bench.PER_NODE  # nodes told apart by host
    patterns = bench.grep_patterns(tmp_path)
    done = subprocess.run(["grep", "-E", "-l", "-r", "-f", str(patterns), str(folder)], capture_output=True,
                          text=True, check=False)
    assert done.stdout.split() == [str(logs[bench.culprit(24)])]  # the same patterns find the same rank


@pytest.mark.bench
def test_the_benchmark_runs_and_prints_a_ratio_and_bounded_memory():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_diagnose_logs.py"), "--ranks", "64", "--kib",
                           "64", "--rounds", "1"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    times = [float(t) for t in re.findall(r": (\d+) ms", done.stdout)]
    ratio = float(re.search(r"ratio: ([\d.]+)", done.stdout)[1])
    assert ratio == pytest.approx(times[1] / times[0], rel=0.05)
    assert float(re.search(r"peak memory (\d+) MiB", done.stdout)[1]) < 200
