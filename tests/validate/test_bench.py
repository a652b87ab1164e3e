"""The benchmark script runs (tiny --quick mode; no timing is asserted)."""

import subprocess
import sys

from tests.validate.helpers import ROOT


def test_bench_validate_quick():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_validate.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "12 specs" in out and "speed-up:" in out and "x of the import" in out
    assert "azure-ai-ml load + _validate():" in out and "files raised" in out
    assert out.count("target <= 0.08") == 2 and "target >= 50x" in out
