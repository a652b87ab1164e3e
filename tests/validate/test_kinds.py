"""Every Azure ML kind: amldist's verdict on the fixtures in fixtures/kinds/ is the one MANIFEST.yaml records.

The last test loads each fixture with azure-ai-ml 1.35.2 (the loader the manifest names) and checks
that its verdict is the recorded one too, so the manifest cannot drift from what Azure ML does.
"""

from __future__ import annotations

import pathlib
import warnings

import pytest
import yaml

from amldist.diagnostics import ERROR, NOTE, WARNING
from amldist.model.kinds import VALIDATED, detect_kind, recognise
from amldist.validate import validate_file

HERE = pathlib.Path(__file__).parent / "fixtures" / "kinds"
MANIFEST = yaml.safe_load((HERE / "MANIFEST.yaml").read_text())


def test_every_fixture_is_in_the_manifest():
    on_disk = {p.name for p in HERE.glob("*.yml")}
    assert on_disk == set(MANIFEST)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_kind_is_recognised(name):
    entry = MANIFEST[name]
    data = yaml.safe_load((HERE / name).read_text())
    assert recognise(data) == entry["kind"]
    assert detect_kind(data) == (entry["kind"] if entry["kind"] in VALIDATED else None)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_amldist_gives_the_recorded_verdict(name):
    entry = MANIFEST[name]
    diags = validate_file(HERE / name)
    errors = [(d.code, d.line) for d in diags if d.severity == ERROR]
    expected = entry["amldist"]
    if expected == "accepted":
        assert errors == []
        assert not [d for d in diags if d.severity == NOTE]
    elif expected == "skipped":
        assert [(d.severity, d.code) for d in diags] == [(NOTE, "skipped-kind")]
    else:  # one clear error at the line the mistake is on
        assert errors == [(expected["error"], expected["line"])]
    warned = [(d.code, d.line) for d in diags if d.severity == WARNING]
    if "warning" in entry:
        assert warned == [(entry["warning"]["code"], entry["warning"]["line"])]


def test_placeholder_read_as_a_mapping_is_one_error_saying_what_to_write():
    diags = validate_file(HERE / "env_brace_placeholder.yml")
    assert len(diags) == 1
    assert "'{your environment name}' is an unfilled template placeholder" in diags[0].message
    assert "azureml:<name>:<version>" in diags[0].hint


def test_a_bare_image_is_told_to_go_under_image():
    (diag,) = validate_file(HERE / "env_bare_image.yml")
    assert diag.hint.startswith("a Docker image goes under environment: {image: mcr.microsoft.com/")


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_azure_ai_ml_gives_the_recorded_verdict(name, monkeypatch):
    ml = pytest.importorskip("azure.ai.ml")
    entry = MANIFEST[name]
    monkeypatch.chdir(HERE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(ml, entry["loader"])(name)
            verdict = "accepted"
        except Exception:  # any refusal at load time: what az ml would print instead of submitting
            verdict = "refused"
    assert verdict == entry["azure"]
