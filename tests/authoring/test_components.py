"""components/: every spec validates and loads in azure-ai-ml; the twin is a fresh conversion (the
trainers' real two-rank runs are end-to-end tests: tests/e2e/test_component_trainers.py)."""

import pytest

from amldist.cli.convert import HEADER
from amldist.authoring.convert import convert_legacy
from tests.conftest import ROOT

COMPONENTS = ROOT / "components"
V2_SPECS = sorted(COMPONENTS.glob("*/component.yaml"))
DDP = COMPONENTS / "pytorch_ddp_trainer"


def test_the_expected_components_are_there():
    assert {p.parent.name for p in V2_SPECS} == {"pytorch_ddp_trainer", "mpi_trainer", "tensorflow_trainer"}
    for folder in (p.parent for p in V2_SPECS):
        assert (folder / "README.md").is_file() and (folder / "src" / "train.py").is_file()
        assert "from amldist.runtime import" in (folder / "src" / "train.py").read_text()
    assert (DDP / "component.legacy.yaml").is_file()


def test_amldist_validate_accepts_them_all(cli):
    code, out, err = cli("validate", "--strict", str(COMPONENTS))
    assert code == 0, out + err


def test_the_v2_twin_is_a_fresh_conversion():
    fresh = HEADER.format(source="component.legacy.yaml") + convert_legacy(str(DDP / "component.legacy.yaml")).to_yaml()
    assert (DDP / "component.yaml").read_text() == fresh, (
        "components/pytorch_ddp_trainer/component.yaml is stale: run "
        "`amldist convert component.legacy.yaml -o component.yaml --force` in that folder"
    )


@pytest.mark.parametrize("path", V2_SPECS, ids=lambda p: p.parent.name)
def test_loads_in_azure_ai_ml(path):
    ml = pytest.importorskip("azure.ai.ml")
    component = ml.load_component(source=str(path))
    result = component._validate()
    assert result.passed, result.error_messages
    assert component.distribution is not None
    # the legacy spec loads through internal components: tests/authoring/test_convert_interop.py
