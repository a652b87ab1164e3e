"""One rule, one answer: the builders, ``amldist validate`` and ``amldist submit`` agree on the same input.

Each table row is one input; the test asks every layer that has an opinion and checks that
they give the same answer (and the answer the rule's module documents).
"""

from __future__ import annotations

import warnings

import pytest

import amldist
from amldist.authoring import BuilderError, BuilderWarning
from amldist.authoring.arguments import count
from amldist.azure_sdk.code_snapshot import plan_snapshot
from amldist.backends.local.plan import code_folder
from amldist.cli.arguments import count_option
from amldist.errors import UserError
from amldist.rules import counts, paths
from amldist.submit.overrides import cli_path
from amldist.submit.prepare import SpecInvalid, prepare
from amldist.validate import validate_text

ENV = "azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest"
SIZE_CODES = {"too-many-processes", "no-infiniband", "infiniband-disabled"}


# ---- VM sizes: what the size says about the counts ---------------------------------------------

def builder_codes(dist: str, size: str, nodes: int, processes: int | None, env: dict | None) -> set[str]:
    builder = {"pytorch": amldist.pytorch_job, "mpi": amldist.mpi_job}[dist]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            builder(command="python t.py", environment=ENV, instance_type=size, instance_count=nodes,
                    process_count_per_instance=processes, environment_variables=env, infiniband_env=False)
        except BuilderError as exc:
            assert exc.field == "process_count_per_instance"
            return {"too-many-processes"}
    found = set()
    for w in caught:
        if issubclass(w.category, BuilderWarning):
            text = str(w.message)
            found.add("no-infiniband" if "InfiniBand" in text and "NCCL_IB_DISABLE" not in text
                      else "infiniband-disabled" if "NCCL_IB_DISABLE" in text else "other")
    return found


def job_yaml(dist: str, size: str, nodes: int, processes: int | None, env: dict | None) -> str:
    text = f"type: command\ncommand: python t.py\nenvironment: {ENV}\ndistribution:\n  type: {dist}\n"
    if processes is not None:
        text += f"  process_count_per_instance: {processes}\n"
    text += f"resources:\n  instance_count: {nodes}\n  instance_type: {size}\n"
    if env:
        text += "environment_variables:\n" + "".join(f"  {k}: '{v}'\n" for k, v in env.items())
    return text


def submit_codes(tmp_path, text: str) -> set[str]:
    path = tmp_path / "job.yml"
    path.write_text(text)
    try:
        prepared = prepare(str(path))
    except SpecInvalid as exc:
        return {d.code for d in exc.diagnostics} & SIZE_CODES
    return {d.code for d in prepared.warnings} & SIZE_CODES


SIZE_CASES = [
    # (distribution, size, nodes, processes per node, environment variables, what every layer says)
    ("pytorch", "Standard_ND96isr_H100_v5", 2, 8, None, set()),
    ("pytorch", "Standard_ND96isr_H100_v5", 1, 9, None, {"too-many-processes"}),
    ("mpi", "Standard_NC24s_v3", 1, 8, None, {"too-many-processes"}),
    ("pytorch", "Standard_NC24s_v3", 2, 4, None, {"no-infiniband"}),
    ("pytorch", "Standard_NC24rs_v3", 2, 4, None, set()),
    # the cases the builders warned about and the validator did not
    ("pytorch", "Standard_D4s_v3", 2, 1, None, {"no-infiniband"}),
    ("pytorch", "Standard_NV36ads_A10_v5", 2, 1, None, {"no-infiniband"}),
    ("mpi", "Standard_HB120rs_v3", 4, 64, None, set()),  # many MPI ranks on a CPU size are normal
    ("pytorch", "Standard_ND96asr_v4", 2, 8, {"NCCL_IB_DISABLE": "1"}, {"infiniband-disabled"}),
    ("pytorch", "Standard_ND96asr_v4", 2, 8, {"NCCL_IB_DISABLE": "0"}, set()),
    ("pytorch", "Standard_NC24r", 2, 4, None, {"no-infiniband"}),  # 'r' without SR-IOV: no NCCL InfiniBand
]


@pytest.mark.parametrize("dist,size,nodes,processes,env,expected", SIZE_CASES)
def test_builder_validator_and_submit_agree_on_vm_sizes(tmp_path, dist, size, nodes, processes, env, expected):
    text = job_yaml(dist, size, nodes, processes, env)
    assert builder_codes(dist, size, nodes, processes, env) == expected, "builder"
    assert {d.code for d in validate_text(text, "job.yml")} & SIZE_CODES == expected, "validate"
    assert submit_codes(tmp_path, text) == expected, "submit"


# ---- local path, remote URI or asset -------------------------------------------------------------

PATH_CASES = [
    ("src", paths.LOCAL),
    ("./src", paths.LOCAL),
    ("file:./src", paths.LOCAL),
    ("file:///abs/src", paths.LOCAL),
    ("C:\\code\\src", paths.LOCAL),
    ("git@github.com:o/r.git", paths.REMOTE),
    ("hdfs:/data", paths.REMOTE),
    ("https://github.com/o/r", paths.REMOTE),
    ("git+https://github.com/o/r", paths.REMOTE),
    ("wasbs://c@a.blob.core.windows.net/p", paths.REMOTE),
    ("azureml:my-code:1", paths.ASSET),
    ("azureml://registries/r/codes/c/versions/1", paths.ASSET),
]


@pytest.mark.parametrize("text,kind", PATH_CASES)
def test_every_layer_reads_a_code_path_the_same_way(tmp_path, text, kind):
    assert paths.kind_of(text) == kind
    local = kind == paths.LOCAL
    job = f"type: command\ncommand: python t.py\nenvironment: {ENV}\ncode: '{text}'\n"
    # validate: a missing local folder is a warning; anything remote or an asset is not checked
    codes = {d.code for d in validate_text(job, str(tmp_path / "job.yml"), base_dir=str(tmp_path))}
    assert ("missing-code" in codes) == local
    # the local backend: a remote or asset code is "not a local folder"; a missing local one "does not exist"
    with pytest.raises(UserError) as refused:
        code_folder(text, str(tmp_path), "job.yml")
    assert ("not a local folder" in refused.value.message) == (not local)
    # the Azure snapshot: a local path that does not exist is left to the SDK, anything else kept as written
    snapshot = plan_snapshot(text, str(tmp_path), None)
    assert snapshot.name is None and bool(snapshot.warnings) == (not local)
    # --input on the command line: local paths become absolute, URIs and assets stay as written
    assert (cli_path(text, str(tmp_path)) == text) == (not local)


# ---- counts ----------------------------------------------------------------------------------------

# 2.0 is a whole number to JSON Schema and to azure-ai-ml (which reads it as 2); 2.5 is not
COUNT_CASES = [(1, True), (8, True), (0, False), (-4, False), (True, False), (2.0, True), (2.5, False), ("4", False),
               (counts.MAX_COUNT, True), (counts.MAX_COUNT + 1, False),
               (10**100, False)]


def test_the_schemas_bound_counts_with_the_spec_rule():
    import json

    from tests.conftest import ROOT

    defs = json.loads((ROOT / "amldist" / "schemas" / "common.schema.json").read_text())["$defs"]
    for name in ("count", "countOrBinding", "zeroOrMore", "zeroOrMoreOrBinding"):
        assert defs[name]["maximum"] == counts.MAX_COUNT
        assert defs[name]["minimum"] == (0 if name.startswith("zero") else 1)


@pytest.mark.parametrize("value,valid", COUNT_CASES)
def test_builders_cli_validator_and_submit_agree_on_process_counts(tmp_path, value, valid):
    field = "process_count_per_instance"
    # the builders
    try:
        count(field, value)
        builder_ok = True
    except BuilderError:
        builder_ok = False
    assert builder_ok == valid
    # the command-line option (a text; only whole numbers can be typed)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            count_option(field)(str(value))
            cli_ok = True
        except Exception:
            cli_ok = False
        assert cli_ok == valid
    # validate and submit
    shown = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
    text = (f"type: command\ncommand: python t.py\nenvironment: {ENV}\n"
            f"distribution:\n  type: pytorch\n  {field}: {shown}\n")
    assert not any(d.severity == "error" for d in validate_text(text)) == valid
    (tmp_path / "job.yml").write_text(text)
    try:
        prepare(str(tmp_path / "job.yml"))
        submitted = True
    except UserError:  # SpecInvalid, or the loader's own refusal (a 101-digit integer is no count)
        submitted = False
    assert submitted == valid
