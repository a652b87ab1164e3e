"""Shared fixtures: where the conformance corpus lives, and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = Path(os.environ.get("AMLDIST_CONFORMANCE", ROOT.parent / "shared" / "conformance"))


def pytest_addoption(parser):
    parser.addoption("--attack-long", action="store_true",
                     help="tests/attack: the long fuzz tier (10,000+ cases; also AMLDIST_ATTACK_LONG=1)")
    parser.addoption("--long", action="store_true",
                     help="also run the long tier: end-to-end runs that take minutes (tests marked long; also "
                     "-m long or AMLDIST_LONG=1)")
    parser.addoption("--bench", action="store_true",
                     help="also run the benchmark scripts end to end (tests marked bench; also -m bench or "
                     "AMLDIST_BENCH=1); the default run checks only the benchmarks' own workloads")


def pytest_configure(config):
    config.addinivalue_line("markers", "bench: runs a benchmark script end to end (slow, timing only); skipped "
                            "unless --bench, -m bench or AMLDIST_BENCH=1")


    config.addinivalue_line("markers", "long: an end-to-end run of minutes; skipped unless --long, -m long or "
                            "AMLDIST_LONG=1")


def pytest_collection_modifyitems(config, items):
    """The default run skips the benchmarks (they time things, and their own correctness checks, the workload
    each one measures, run unmarked) and the long tier (minutes-long end-to-end runs)."""
    tiers = (("bench", "--bench", "AMLDIST_BENCH", "a benchmark: run with --bench (or -m bench)"),
             ("long", "--long", "AMLDIST_LONG", "the long tier: run with --long (or -m long)"))
    for marker, option, variable, reason in tiers:
        if config.getoption(option) or os.environ.get(variable) or marker in (config.option.markexpr or ""):
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)


def conformance_files(group: str) -> list[Path]:
    """Every YAML file under conformance/<group>, or [] when the corpus is absent."""
    base = CONFORMANCE / group
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*") if p.suffix in (".yml", ".yaml"))


@pytest.fixture
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance corpus not found at {CONFORMANCE} (set AMLDIST_CONFORMANCE)")
    return CONFORMANCE


@pytest.fixture
def cli(capsys):
    """Run ``amldist`` in-process: returns (exit code, stdout, stderr)."""
    from amldist.cli.main import main

    def run(*argv: str):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
