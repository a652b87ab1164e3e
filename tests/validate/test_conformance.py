"""Issue 2, point 5: the shared conformance corpus through the real CLI."""

from __future__ import annotations

import json

import pytest

from tests.conftest import conformance_files
from tests.validate.helpers import run_cli


# what each invalid file is rejected for (MANIFEST.md), keyed by the end of its path; the message must name the field
INVALID_FIELDS = {
    "dist_job_bad.yml": "distribution.process_count_per_instance",
    "dist_job_pytorch_torch_distributed.yml": "distribution.type",
    "no_environment.yml": "environment",
    # `environment: < your environment name >`, an unfilled template placeholder: azure-ai-ml's load_job refuses
    # it ("Environment schema data cannot be a string ... prefixed with 'azureml:'"); the corpus files it as invalid
    "nebulaml/cifar10_deepspeed/job.yml": "environment",
}


def test_every_valid_file_passes(conformance_dir):
    files = conformance_files("valid")
    assert files, f"no YAML under {conformance_dir / 'valid'}"
    code, out, err = run_cli("validate", "--format", "json", *files)
    report = json.loads(out)
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert errors == [] and code == 0, errors
    assert len(report["files"]) == len(files)


def test_every_invalid_file_fails_naming_the_field(conformance_dir):
    files = conformance_files("invalid")
    assert files, f"no YAML under {conformance_dir / 'invalid'}"
    for path in files:
        code, out, _ = run_cli("validate", path)
        assert code == 1, (path, out)
        errors = [line for line in out.splitlines() if " error " in line]
        assert errors, out
        field = next((f for name, f in INVALID_FIELDS.items() if path.as_posix().endswith("/" + name)), None)
        if field is not None:
            assert any(field in line for line in errors), (path.name, errors)
        else:  # a file added to the corpus later: at least some field is named
            assert any(":" in line.split(" error ", 1)[1] for line in errors), errors


def test_torch_distributed_suggests_pytorch(conformance_dir):
    [path] = [p for p in conformance_files("invalid") if p.name == "dist_job_pytorch_torch_distributed.yml"] or [None]
    if path is None:
        pytest.skip("dist_job_pytorch_torch_distributed.yml is not in this corpus")
    _, out, _ = run_cli("validate", path)
    assert "did you mean 'pytorch'?" in out
