"""The conformance corpus (real specs written by others) against the shipped schemas.

valid/ must pass; invalid/ must fail with an error that names the field. The corpus
lives outside the repository; without it these tests skip with the reason.
"""

from __future__ import annotations

import pytest

from amldist.model.kinds import detect_kind
from amldist.model.yamlio import load_yaml
from tests.conftest import CONFORMANCE, conformance_files
from tests.validate.schemas.support import blamed_fields, errors, hints

VALID = conformance_files("valid")
INVALID = conformance_files("invalid")

# Why each known invalid file is invalid (MANIFEST.md): the field its error must name.
EXPECTED_FIELD = {
    "dist_job_bad.yml": "distribution.process_count_per_instance",
    "dist_job_pytorch_torch_distributed.yml": "distribution.type",
    "no_environment.yml": "environment",
}


def _ids(paths):
    return [str(p.relative_to(CONFORMANCE)) for p in paths]


def _load(path):
    data = load_yaml(path.read_text(encoding="utf-8")).data
    kind = detect_kind(data)
    assert kind is not None, f"{path.name}: detect_kind found no spec kind"
    return data, kind


def _format(errs):
    return "\n".join(f"  {'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:160]}" for e in errs)


def test_corpus_is_present_or_skipped_with_reason(conformance_dir):
    assert (conformance_dir / "valid").is_dir() and (conformance_dir / "invalid").is_dir()
    assert VALID and INVALID


@pytest.mark.parametrize("path", VALID, ids=_ids(VALID))
def test_valid_file_passes_its_schema(conformance_dir, path):
    data, kind = _load(path)
    errs = errors(data, kind)
    assert not errs, f"{path.name} ({kind}) should be valid:\n{_format(errs)}"


@pytest.mark.parametrize("path", INVALID, ids=_ids(INVALID))
def test_invalid_file_fails_naming_the_field(conformance_dir, path):
    data, kind = _load(path)
    errs = errors(data, kind)
    if not errs:  # some files are refused by a semantic rule (an unfilled placeholder), not by the schema
        from amldist.validate import validate_file

        refused = [d for d in validate_file(path) if d.severity == "error"]
        assert refused, f"{path.name} ({kind}) should be rejected"
        assert all(d.field for d in refused), f"{path.name}: an error that names no field: {refused}"
        return
    fields = blamed_fields(errs)
    assert all(fields), f"{path.name}: an error that names no field: {_format(errs)}"
    if path.name in EXPECTED_FIELD:
        assert EXPECTED_FIELD[path.name] in fields, f"{path.name}: expected {EXPECTED_FIELD[path.name]}, got {fields}"


def test_torch_distributed_in_v2_hints_pytorch(conformance_dir):
    path = CONFORMANCE / "invalid" / "azure-ai-ml-tests" / "dist_job_pytorch_torch_distributed.yml"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in this corpus")
    data, kind = _load(path)
    assert any("pytorch" in hint for hint in hints(errors(data, kind)))
