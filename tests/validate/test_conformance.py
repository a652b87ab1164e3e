"""Issue 2, point 5: the shared conformance corpus through the real CLI."""

from __future__ import annotations

import json

import pytest

from tests.conftest import conformance_files
from tests.validate.helpers import run_cli


# Files the corpus files under valid/ that azure-ai-ml 1.35.2 refuses at load time, and the validator
# issue asks amldist to refuse too: file -> (code, field) of the one error expected instead.
REFUSED_BY_AZURE = {
    # `environment: < your environment name >`: an unfilled template placeholder; load_job says
    # "Environment schema data cannot be a string ... prefixed with 'azureml:'"
    "nebulaml/cifar10_deepspeed/job.yml": ("unfilled-placeholder", "environment"),
}


def test_every_valid_file_passes(conformance_dir):
    files = conformance_files("valid")
    assert files, f"no YAML under {conformance_dir / 'valid'}"
    code, out, err = run_cli("validate", "--format", "json", *files)
    report = json.loads(out)
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    expected = [d for d in errors if any(d["file"].endswith(name) and (d["code"], d["field"]) == want
                                         for name, want in REFUSED_BY_AZURE.items())]
    assert len(expected) == len(REFUSED_BY_AZURE) and code == 1, errors
    assert [d for d in errors if d not in expected] == []
    assert len(report["files"]) == len(files)


# what each invalid file is rejected for (MANIFEST.md); the message must name the field
INVALID_FIELDS = {
    "dist_job_bad.yml": "distribution.process_count_per_instance",
    "dist_job_pytorch_torch_distributed.yml": "distribution.type",
    "no_environment.yml": "environment",
}


def test_every_invalid_file_fails_naming_the_field(conformance_dir):
    files = conformance_files("invalid")
    assert files, f"no YAML under {conformance_dir / 'invalid'}"
    for path in files:
        code, out, _ = run_cli("validate", path)
        assert code == 1, (path, out)
        errors = [line for line in out.splitlines() if " error " in line]
        assert errors, out
        field = INVALID_FIELDS.get(path.name)
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
