"""The benchmark still runs end to end (tiny sizes; the numbers themselves are not checked here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_module_without

skip_module_without("torch", reason="the benchmark forms torch process groups")
pytestmark = pytest.mark.bench  # skipped by the default run (tests/conftest.py)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_runtime.py"


def test_benchmark_runs_and_prints_a_ratio(base_env):
    result = subprocess.run([sys.executable, str(BENCH), "--ranks", "2", "--calls", "2", "--rounds", "1"],
                            env=base_env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    times = [float(t) for t in re.findall(r"([\d.]+) ms", result.stdout)]
    assert len(times) == 2 and all(t > 0 for t in times)
    ratio = float(re.search(r"ratio: ([\d.]+)", result.stdout)[1])
    assert ratio == pytest.approx(times[1] / times[0], rel=0.01)
