"""The VM size catalog: facts from the size pages, guesses from names, the CLI."""

import json

import pytest

from amldist.rules import vm_sizes
from tests.authoring.cases import python_output

# name, GPUs, InfiniBand usable by NCCL, vcpus (facts.md and the Azure size pages)
KNOWN = [
    ("Standard_NC6s_v3", 1, False, 6),
    ("Standard_NC24s_v3", 4, False, 24),
    ("Standard_NC24rs_v3", 4, True, 24),
    ("Standard_NC24r", 4, False, 24),
    ("Standard_NC4as_T4_v3", 1, False, 4),
    ("Standard_NC64as_T4_v3", 4, False, 64),
    ("Standard_NC24ads_A100_v4", 1, False, 24),
    ("Standard_NC96ads_A100_v4", 4, False, 96),
    ("Standard_NC40ads_H100_v5", 1, False, 40),
    ("Standard_NC80adis_H100_v5", 2, False, 80),
    ("Standard_ND40rs_v2", 8, True, 40),
    ("Standard_ND96asr_v4", 8, True, 96),
    ("Standard_ND96amsr_A100_v4", 8, True, 96),
    ("Standard_ND96isr_H100_v5", 8, True, 96),
    ("Standard_ND96is_H100_v5", 8, False, 96),
    ("Standard_ND96isr_H200_v5", 8, True, 96),
    ("Standard_ND96isr_MI300X_v5", 8, True, 96),
    ("Standard_HC44rs", 0, True, 44),
    ("Standard_HB120rs_v2", 0, True, 120),
    ("Standard_HB120rs_v3", 0, True, 120),
    ("Standard_HB176rs_v4", 0, True, 176),
    ("Standard_HB176-96rs_v4", 0, True, 96),
    ("Standard_HX176rs", 0, True, 176),
]


@pytest.mark.parametrize("name,gpus,infiniband,vcpus", KNOWN)
def test_catalog_entries(name, gpus, infiniband, vcpus):
    size = vm_sizes.lookup(name)
    assert size is not None and not size.guess
    assert (size.name, size.gpus, size.infiniband, size.vcpus) == (name, gpus, infiniband, vcpus)


@pytest.mark.parametrize("name,model,memory", [
    ("Standard_NC24rs_v3", "V100", 16), ("Standard_ND40rs_v2", "V100", 32),
    ("Standard_ND96asr_v4", "A100", 40), ("Standard_ND96amsr_A100_v4", "A100", 80),
    ("Standard_ND96isr_H100_v5", "H100", 80), ("Standard_NC40ads_H100_v5", "H100", 94),
    ("Standard_ND96isr_H200_v5", "H200", 141), ("Standard_ND96isr_MI300X_v5", "MI300X", 192),
    ("Standard_NC4as_T4_v3", "T4", 16),
])
def test_gpu_model_and_memory(name, model, memory):
    size = vm_sizes.lookup(name)
    assert size.gpu_model.split()[0] == model and size.gpu_memory_gb == memory


def test_cpu_sizes_have_no_gpu_model():
    size = vm_sizes.lookup("HX176rs")
    assert size.gpus == 0 and size.gpu_model is None and size.gpu_memory_gb is None and size.is_gpu is False


@pytest.mark.parametrize("text", [
    "Standard_ND96isr_H100_v5", "standard_nd96isr_h100_v5", "ND96isr_H100_v5", "nd96ISR_h100_V5",
    "  Standard_ND96isr_H100_v5 ",
])
def test_lookup_ignores_case_and_prefix(text):
    assert vm_sizes.lookup(text) is vm_sizes.lookup("Standard_ND96isr_H100_v5")


@pytest.mark.parametrize("name,needle", [
    ("Standard_NC24r", "SR-IOV"), ("Standard_H16r", "SR-IOV"), ("Standard_H16mr", "SR-IOV"),
    ("Standard_ND96isr_MI300X_v5", "RCCL"), ("Standard_ND96is_H100_v5", "ND96isr_H100_v5"),
    ("Standard_HB176-96rs_v4", "96 of 176"), ("Standard_HC44-16rs", "16 of 44"),
])
def test_caveats(name, needle):
    size = vm_sizes.lookup(name)
    assert any(needle in caveat for caveat in size.caveats), size.caveats


def test_sizes_with_r_but_no_sriov_are_not_infiniband():
    for name in ("NC24r", "H16r", "H16mr"):
        assert vm_sizes.lookup(name).infiniband is False


@pytest.mark.parametrize("name,canonical,infiniband,gpus,vcpus", [
    ("Standard_NC24rs_v2", "Standard_NC24rs_v2", True, None, 24),  # retired P100 size, not in the catalog
    ("nd96isr_h200_v6", "Standard_ND96isr_H200_v6", True, None, 96),
    ("Standard_NV36adms_A10_v5", "Standard_NV36adms_A10_v5", False, None, 36),
    ("Standard_D4s_v3", "Standard_D4s_v3", False, 0, 4),
    ("standard_hb176-24rs_v5", "Standard_HB176-24rs_v5", True, 0, 24),
    ("Standard_DS11-1_v2", "Standard_DS11-1_v2", False, 0, 1),
    ("Standard_DC4as_cc_v5", "Standard_DC4as_cc_v5", False, 0, 4),
    ("Standard_D2_v2_Promo", "Standard_D2_v2_Promo", False, 0, 2),
    ("Standard_E64is_v3", "Standard_E64is_v3", False, 0, 64),
    ("Standard_Foo8rs_v1", "Standard_FOO8rs_v1", True, 0, 8),  # any family once "Standard_" is there
])
def test_guesses_from_the_name(name, canonical, infiniband, gpus, vcpus):
    size = vm_sizes.lookup(name)
    assert size is not None and size.guess is True
    assert (size.name, size.infiniband, size.gpus, size.vcpus) == (canonical, infiniband, gpus, vcpus)
    assert any("guessed" in caveat for caveat in size.caveats)


def test_guess_takes_the_gpu_model_from_the_accelerator_part():
    assert vm_sizes.lookup("Standard_NV36adms_A10_v5").gpu_model == "A10"


@pytest.mark.parametrize("text", [
    "defaultinstancetype", "gpu-small", "cpu4", "gpu1", "", "Standard_", "Standard_NDx", "ND96isr H100",
    "azureml:gpu-cluster", "nd96isr_h100_v5; rm -rf", None, 42,
])
def test_not_a_vm_size_name(text):
    assert vm_sizes.lookup(text) is None


def test_all_sizes_are_unique_canonical_and_cover_the_series():
    sizes = vm_sizes.all_sizes()
    names = [s.name for s in sizes]
    assert len(names) == len(set(names))
    for size in sizes:
        assert size.name.startswith("Standard_") and not size.guess
        assert vm_sizes.canonical_name(size.name) == size.name
        assert size.infiniband == (size.interconnect is not None)
    series = {s.series for s in sizes}
    for wanted in ("NC v3", "NCasT4 v3", "NC A100 v4", "NC H100 v5", "ND v2", "ND A100 v4", "NDm A100 v4",
                   "ND H100 v5", "ND H200 v5", "ND MI300X v5", "HB v4", "HC", "HX"):
        assert wanted in series


def test_vmsize_is_frozen():
    with pytest.raises(AttributeError):
        vm_sizes.lookup("NC6s_v3").gpus = 2


def test_import_needs_only_the_spec_layer():
    # The catalog sits in amldist.model, whose loader needs PyYAML; nothing heavier may come along.
    code = (
        "import sys; before = set(sys.modules); import amldist.rules.vm_sizes\n"
        "new = sorted(m.split('.')[0] for m in set(sys.modules) - before)\n"
        "print(','.join(sorted(set(n for n in new if n not in sys.stdlib_module_names))))"
    )
    assert {n for n in python_output(code).split(",") if "cython" not in n} <= {"amldist", "yaml"}


# -- the CLI -----------------------------------------------------------------------------------------

def test_cli_table(cli):
    code, out, _ = cli("skus")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["name", "gpus"]
    row = next(line for line in lines if line.startswith("Standard_ND96isr_H100_v5 "))
    assert row.split()[1] == "8" and " yes " in row
    assert len(lines) == 1 + len(vm_sizes.all_sizes())


def test_cli_infiniband_json(cli):
    code, out, _ = cli("skus", "--infiniband", "--format", "json")
    assert code == 0
    data = json.loads(out)
    names = {d["name"] for d in data}
    assert "Standard_ND96isr_H100_v5" in names and "Standard_HB176-96rs_v4" in names
    assert "Standard_NC24s_v3" not in names and "Standard_NC24r" not in names
    assert all(d["infiniband"] is True for d in data)


def test_cli_lookup_names(cli):
    code, out, _ = cli("skus", "nc24rs_v3", "Standard_ND96isr_H200_v6", "--format", "json")
    assert code == 0
    first, second = json.loads(out)
    assert first["name"] == "Standard_NC24rs_v3" and first["guess"] is False and first["gpus"] == 4
    assert second["guess"] is True and second["infiniband"] is True and second["gpus"] is None


def test_cli_marks_guesses_in_the_table(cli):
    code, out, _ = cli("skus", "Standard_ND96isr_H200_v6")
    assert code == 0 and "Standard_ND96isr_H200_v6?" in out


def test_cli_rejects_a_non_size(cli):
    code, out, err = cli("skus", "gpu-small")
    assert code == 2 and out == ""
    assert err.startswith("error: 'gpu-small' is not an Azure VM size name") and "hint:" in err


def test_vm_sizes_is_the_command_and_skus_its_alias(cli):
    assert cli("vm-sizes", "nd96isr_h100_v5")[:2] == cli("skus", "nd96isr_h100_v5")[:2]
    assert "Standard_ND96isr_H100_v5" in cli("vm-sizes", "nd96isr_h100_v5")[1]
