"""The attack suite's tiers: a fast one for CI, a long one with --attack-long or AMLDIST_ATTACK_LONG=1."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def attack_long(pytestconfig) -> bool:
    return bool(pytestconfig.getoption("--attack-long", default=False) or os.environ.get("AMLDIST_ATTACK_LONG"))
