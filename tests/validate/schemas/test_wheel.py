"""A non-editable wheel ships the schemas (issue 2, point 1).

The wheel is built from a copy of the project files in a temporary folder, so setuptools'
build/ and egg-info churn never touches the working tree. Takes a few seconds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.validate.schemas.support import SCHEMA_DIR, schema_files

ROOT = SCHEMA_DIR.parents[1]

pytest.importorskip("build", reason="the 'build' package is needed (it is in the dev extra)")
pytest.importorskip("setuptools", reason="setuptools is the build backend")


def test_wheel_contains_every_schema_file(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "amldist", src / "amldist",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    out = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list(out.glob("amldist-*.whl"))
    assert len(wheels) == 1, wheels

    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
        expected = schema_files()
        assert expected
        for path in expected:
            member = f"amldist/schemas/{path.name}"
            assert member in names, f"{member} missing from the wheel"
            assert wheel.read(member) == path.read_bytes(), f"{member} differs from the source"


def test_schemas_symlink_points_at_the_package_data():
    """The top-level schemas/ folder is the package folder, not a copy that could drift."""
    top = ROOT / "schemas"
    assert top.exists(), "top-level schemas/ is missing"
    assert top.resolve() == SCHEMA_DIR.resolve()
    assert {p.name for p in top.glob("*.json")} == {p.name for p in schema_files()}
