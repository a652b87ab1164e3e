"""The public API others build on: validate_spec, validate_paths, validate_file."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.model import loads
from amldist.validate import validate_file, validate_paths, validate_spec
from tests.validate.helpers import FIXTURES


def test_validate_spec_checks_a_model_object():
    spec = loads("type: command\ncommand: python t.py ${{inputs.lr}}\nenvironment: azureml:e:1\n"
                 "distribution:\n  type: pytorch\n  process_count_per_instance: -1\n")
    found = [(d.code, d.field, d.line) for d in validate_spec(spec)]
    assert sorted(found) == [("out-of-range", "distribution.process_count_per_instance", 0),
                             ("undeclared-input", "command", 0)]
    spec.distribution.process_count_per_instance = 2
    spec.inputs = {"lr": 0.1}
    assert validate_spec(spec) == []


def test_validate_paths_mixes_files_folders_and_globs(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    diags = validate_paths(["valid", "invalid/negative_counts.yml", "invalid/too_many_*.yml"])
    files = {d.file for d in diags if d.severity == "error"}
    assert files == {"invalid/negative_counts.yml", "invalid/too_many_processes.yml"}
    with pytest.raises(UserError) as info:
        validate_paths(["valid", "missing.yml"])
    assert info.value.exit_code == 2 and "missing.yml" in info.value.message


def test_validate_file_accepts_path_objects_and_names_the_file():
    path = FIXTURES / "invalid" / "fractional_processes.yml"
    [d] = validate_file(path)
    assert d.file == str(path) and d.to_text().startswith(f"{path}:7:3: error wrong-type: ")


def test_validate_file_keeps_only_the_last_files_read(tmp_path, monkeypatch):
    """A file validated again at once is not read again, and a folder of many specs does not stay in memory."""
    from amldist.validate import documents

    reads = []
    monkeypatch.setattr(documents, "_documents", {})
    monkeypatch.setattr(documents, "file_text", lambda path: reads.append(path) or (open(path).read(), None))
    paths = []
    for i in range(documents._KEPT + 10):
        paths.append(tmp_path / f"job_{i}.yml")
        paths[-1].write_text(f"type: command\ncommand: echo {i}\nenvironment: azureml:env:1\ncompute: gpu\n")
        assert validate_file(paths[-1]) == validate_file(paths[-1])
    assert len(reads) == len(paths) and len(documents._documents) == documents._KEPT
    validate_file(paths[0])  # long gone: read again
    assert len(reads) == len(paths) + 1
