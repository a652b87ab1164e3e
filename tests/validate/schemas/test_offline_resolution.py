"""The shipped schema files work on their own, offline, in another tool: check-jsonschema, run the way a
user runs it (``--schemafile amldist/schemas/CommandJob.schema.json job.yml``) from another folder,
resolves ``common.schema.json`` next to the file and never fetches anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.validate.schemas.support import SCHEMA_DIR

CHECK = shutil.which("check-jsonschema") or str(Path(sys.executable).with_name("check-jsonschema"))
pytestmark = pytest.mark.skipif(not Path(CHECK).exists(), reason="check-jsonschema (the dev extra) is not installed")
ROOT = SCHEMA_DIR.parents[1]


def run(schema: str, document: Path, cwd: Path):
    proc = subprocess.run([CHECK, "--schemafile", str(SCHEMA_DIR / schema), str(document)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_sample_job_passes(tmp_path):
    code, out = run("CommandJob.schema.json", ROOT / "samples" / "pytorch_ddp" / "job.yml", tmp_path)
    assert code == 0, out
    assert "ok" in out


def test_a_key_of_another_distribution_type_fails_through_the_common_file(tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("command: python train.py\nenvironment: azureml:env:1\n"
                   "distribution:\n  type: pytorch\n  worker_count: 2\n")
    code, out = run("CommandJob.schema.json", job, tmp_path)
    assert code == 1, out
    assert "worker_count" in out and "Unresolvable" not in out and "$ref" not in out


def test_a_copy_of_the_folder_elsewhere_works_the_same(tmp_path):
    """Nothing points back at this checkout or at a host: the files resolve between themselves."""
    copy = tmp_path / "schemas"
    shutil.copytree(SCHEMA_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    job = tmp_path / "job.yml"
    job.write_text("command: python train.py\nenvironment: azureml:env:1\nresources: {instance_count: 0}\n")
    proc = subprocess.run([CHECK, "--schemafile", str(copy / "CommandJob.schema.json"), str(job)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1 and "instance_count" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
