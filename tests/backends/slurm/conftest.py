"""The real two-node Slurm cluster (tests/slurm_cluster.py) for the Slurm backend's end-to-end tests:
started once per session when Slurm and munge are installed, torn down after."""

from __future__ import annotations

import shutil

import pytest

from tests.slurm_cluster import missing_tools, start_cluster


@pytest.fixture(scope="session")
def slurm_cluster():
    missing = missing_tools()
    if missing:
        pytest.skip(f"Slurm/munge not installed ({', '.join(missing)}): apt-get install slurm-wlm munge")
    cluster = start_cluster()
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def on_cluster(slurm_cluster, monkeypatch, tmp_path):
    """The current test talks to the test cluster (SLURM_CONF) from a fresh folder (run folders go there)."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    monkeypatch.chdir(tmp_path)
    return slurm_cluster
