"""Fixtures of the schema tests (helpers live in support.py)."""

from __future__ import annotations

import pytest

from tests.validate.schemas.support import load_schemas


@pytest.fixture(scope="session")
def schemas() -> dict[str, dict]:
    return load_schemas()
