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
