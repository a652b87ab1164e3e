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


@pytest.mark.parametrize("text", ["~", "~/src", "file:~"])
def test_no_layer_reads_a_tilde_as_the_home_folder(tmp_path, monkeypatch, text):
    """azure-ai-ml joins ``code: ~`` to the spec's folder (pathlib, no expanduser): a folder named ``~``, never
    the whole home copied into the snapshot."""
    home = tmp_path / "home"
    (home / "src").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    job = f"type: command\ncommand: python t.py\nenvironment: {ENV}\ncode: '{text}'\n"
    found = [d for d in validate_text(job, str(spec_dir / "job.yml"), base_dir=str(spec_dir))]
    assert [d.code for d in found] == ["missing-code"] and "not the home folder" in found[0].message
    with pytest.raises(UserError, match="not the home folder"):
        code_folder(text, str(spec_dir), "job.yml")
    (spec_dir / "~" / "src").mkdir(parents=True)
    assert code_folder(text, str(spec_dir), "job.yml") == str(spec_dir / text.removeprefix("file:"))
    assert not validate_text(job, str(spec_dir / "job.yml"), base_dir=str(spec_dir))
    assert cli_path(text, str(spec_dir)).startswith(str(spec_dir))


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


# ---- the command line's dry runs: `submit --local --dry-run` and `submit --dry-run` (Azure, nothing sent) ----

def dry_runs(cli, path, *options) -> dict:
    """(exit code, stdout + stderr) of the local and the Azure dry run of ``path``."""
    return {where: cli("submit", str(path), *extra, "--dry-run", *options)
            for where, extra in (("local", ("--local",)), ("azure", ()))}


def azure_body(out: str) -> dict:
    import json

    return json.loads(out)["request"]["body"]["properties"]


# ---- shm_size: a number above 0 and a unit (amldist.rules.shm_size) ---------------------------------

SHM_CASES = [("16g", True), ("3100m", True), ("1b", True), ("016G", True), ("0g", False), ("00m", False),
             ("lots", False), ("16gb", False), ("1.5g", False), ("g", False), ("-1g", False)]


def test_the_schema_holds_the_shm_size_rule():
    import json

    from amldist.rules import shm_size
    from tests.conftest import ROOT

    defs = json.loads((ROOT / "amldist" / "schemas" / "common.schema.json").read_text())["$defs"]
    assert defs["shmSize"]["pattern"] == shm_size.PATTERN
    assert defs["shmSize"]["x-amldist-hint"] == shm_size.HINT
    assert defs["shmSize"]["x-amldist-expected"] == shm_size.EXPECTED
    assert defs["shmSizeOrBinding"]["pattern"].startswith("^(" + shm_size.PATTERN[1:-1] + "|")


@pytest.mark.parametrize("value,valid", SHM_CASES)
def test_builders_convert_validate_and_both_dry_runs_agree_on_shm_size(cli, tmp_path, monkeypatch, value, valid):
    from amldist.rules import shm_size

    monkeypatch.chdir(tmp_path)
    assert shm_size.is_shm_size(value) == valid, "the rule"
    try:
        amldist.pytorch_job(command="python t.py", environment=ENV, process_count_per_instance=1, shm_size=value)
        built = True
    except BuilderError as exc:
        built = False
        assert exc.field == "shm_size" and exc.hint == shm_size.HINT
    assert built == valid, "builders"
    legacy = tmp_path / "legacy.yml"
    legacy.write_text("type: DistributedComponent\nname: c\nversion: 1\nlauncher:\n  type: mpi\n"
                      "  additional_arguments: python t.py\nenvironment:\n  docker:\n    image: ubuntu\n")
    try:
        amldist.convert_legacy(str(legacy), shm_size=value)
        converted = True
    except UserError as exc:
        converted = False
        assert exc.message == f"shm_size: {shm_size.message(value)}"
    assert converted == valid, "convert"
    text = f"type: command\ncommand: python t.py\nenvironment: {ENV}\nresources:\n  shm_size: '{value}'\n"
    errors = [d for d in validate_text(text) if d.severity == "error"]
    assert (not errors) == valid, "validate"
    assert all(d.field == "resources.shm_size" for d in errors)
    (tmp_path / "job.yml").write_text(text)
    runs = dry_runs(cli, tmp_path / "job.yml")
    for where, (code, out, err) in runs.items():
        assert code == (0 if valid else 1), (where, err)
        assert valid or "resources.shm_size" in err, where
    if valid:
        assert azure_body(runs["azure"][1])["resources"]["shmSize"] == value


# ---- the letter case of `type:` (amldist.model.kinds.type_word) -------------------------------------

TYPE_CASES = [  # distribution type and data input type as written -> what every layer reads
    ("pytorch", "uri_folder", "pytorch"),
    ("PyTorch", "URI_FOLDER", "pytorch"),
    ("MPI", "Uri_Folder", "mpi"),
    ("Mpi", "uri_FOLDER", "mpi"),
]
AZURE_DISTRIBUTION = {"pytorch": "PyTorch", "mpi": "Mpi"}


@pytest.mark.parametrize("dist,input_type,folded", TYPE_CASES)
def test_every_layer_folds_the_case_of_types_the_same_way(cli, tmp_path, monkeypatch, dist, input_type, folded):
    from amldist.model.kinds import is_data_type, type_word

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    assert type_word(dist) == folded and is_data_type(input_type), "the rule"
    builder = {"pytorch": amldist.pytorch_job, "mpi": amldist.mpi_job}[folded]
    job = builder(command="python t.py ${{inputs.d}} ${{outputs.m}}", environment=ENV, process_count_per_instance=2,
                  inputs={"d": {"type": input_type, "path": "./data"}}, outputs={"m": input_type})
    assert job.distribution.kind == folded and job.outputs["m"] == {"type": input_type}, "builders"
    text = (f"type: command\ncommand: python t.py ${{{{inputs.d}}}}\nenvironment: {ENV}\n"
            f"distribution:\n  type: {dist}\n  process_count_per_instance: 2\n"
            f"inputs:\n  d:\n    type: {input_type}\n    path: ./data\n")
    assert [d for d in validate_text(text, base_dir=str(tmp_path)) if d.severity != "note"] == [], "validate"
    (tmp_path / "job.yml").write_text(text)
    runs = dry_runs(cli, tmp_path / "job.yml")
    code, out, err = runs["local"]
    assert code == 0, err
    assert f": {folded}, 2 process(es)" in out.splitlines()[0], "--local"
    assert f"AMLDIST_IN_0_d={tmp_path / 'data'}" in out, "--local reads the input as data"
    code, out, err = runs["azure"]
    assert code == 0, err
    body = azure_body(out)
    assert body["distribution"]["distributionType"] == AZURE_DISTRIBUTION[folded], "Azure"
    assert body["inputs"]["d"]["jobInputType"] == "uri_folder", "Azure"


# ---- `--input NAME=...` with a name the spec does not declare: one did-you-mean ------------------------

INPUT_CASES = [  # the name given, the inputs declared, the guess every layer makes (None: no guess)
    ("lrr", ("lr", "epochs"), "lr"),
    ("LR", ("lr", "epochs"), "lr"),
    ("epoch", ("lr", "epochs"), "epochs"),
    ("training_data", ("train_data", "lr"), "train_data"),
    ("zzz", ("lr", "epochs"), None),
]


@pytest.mark.parametrize("given,declared,guess", INPUT_CASES)
def test_submit_and_component_to_job_suggest_the_same_input(cli, tmp_path, monkeypatch, given, declared, guess):
    from amldist.rules.suggestions import did_you_mean, suggest

    monkeypatch.chdir(tmp_path)
    assert suggest(given, declared) == guess, "the rule"
    wording = did_you_mean(given, declared)
    ports = "".join(f"  {name}: 1\n" for name in declared)
    (tmp_path / "job.yml").write_text(f"type: command\ncommand: python t.py\nenvironment: {ENV}\ninputs:\n{ports}")
    for where, (code, out, err) in dry_runs(cli, tmp_path / "job.yml", "--input", f"{given}=1").items():
        assert code == 2 and f"declares no input named {given!r}" in err, (where, err)
        assert (wording in err) if guess else ("did you mean" not in err), (where, err)
    component = amldist.model.loads(
        "type: command\nname: c\nversion: 1\ncommand: python t.py\nenvironment: azureml:e:1\ninputs:\n"
        + "".join(f"  {name}: {{type: integer, default: 1}}\n" for name in declared))
    with pytest.raises(UserError) as refused:
        amldist.component_to_job(component, inputs={given: 1})
    assert (wording in refused.value.message) if guess else ("did you mean" not in refused.value.message)


# ---- process_count_per_instance: pytorch and mpi only (amldist.rules.process_counts) ------------------

PROCESS_CASES = [("pytorch", True), ("MPI", True), ("tensorflow", False), ("ray", False), (None, False)]


@pytest.mark.parametrize("dist,takes", PROCESS_CASES)
def test_every_layer_gives_processes_per_node_to_pytorch_and_mpi_only(cli, tmp_path, monkeypatch, dist, takes):
    import inspect

    from amldist.rules import process_counts

    monkeypatch.chdir(tmp_path)
    assert process_counts.takes_process_count(dist) == takes, "the rule"
    if dist is not None:  # the builders offer the argument exactly where the rule allows it
        builder = {"pytorch": amldist.pytorch_job, "mpi": amldist.mpi_job,
                   "tensorflow": amldist.tensorflow_job}.get(dist.lower())
        if builder is not None:
            assert ("process_count_per_instance" in inspect.signature(builder).parameters) == takes, "builders"
    distribution = f"distribution:\n  type: {dist}\n" if dist else ""
    base = f"command: python t.py\nenvironment: {ENV}\n{distribution}"
    written = base + ("  process_count_per_instance: 2\n" if dist else "")
    errors = [d for d in validate_text("type: command\n" + written) if d.severity == "error"]
    assert (not errors) == (takes or dist is None), "validate"
    (tmp_path / "job.yml").write_text("type: command\n" + base)
    for where, (code, out, err) in dry_runs(cli, tmp_path / "job.yml", "--process-count-per-instance", "2").items():
        assert (code == 0) == takes, (where, err)
        assert takes or "applies to pytorch and mpi" in err, (where, err)
    component = amldist.model.loads("type: command\nname: c\nversion: 1\n" + base)
    try:
        amldist.component_to_job(component, process_count_per_instance=2)
        ran = True
    except UserError as exc:
        ran = False
        assert exc.hint == process_counts.HINT
    assert ran == takes, "component_to_job"


# ---- one bad component in a pipeline: validate, --local and the Azure dry run (H2, issue 15) ----------

BAD_COMPONENT = f"""\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: train
version: 1
command: python -c "print(1)"
environment: {ENV}
distribution:
  type: pytorch
  process_count_per_instance: 0
"""


def test_a_bad_component_gets_the_same_diagnostic_from_validate_local_and_azure(tmp_path, monkeypatch, cli):
    (tmp_path / "comp.yml").write_text(BAD_COMPONENT)
    (tmp_path / "pipe.yml").write_text("type: pipeline\njobs:\n  train:\n    type: command\n"
                                       "    component: ./comp.yml\n")
    monkeypatch.chdir(tmp_path)
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    wanted = "comp.yml:9:3: error out-of-range: distribution.process_count_per_instance: must be >= 1, got 0"
    seen = {}
    for label, argv in (("validate", ("validate", "pipe.yml")),
                        ("local", ("submit", "pipe.yml", "--local", "--dry-run")),
                        ("azure", ("submit", "pipe.yml", "--dry-run"))):
        code, out, err = cli(*argv)
        seen[label] = (code, [line for line in (out + err).splitlines() if "comp.yml:" in line])
    assert all(code == 1 for code, _ in seen.values()), seen
    assert all(lines and lines[0].startswith(wanted) for _, lines in seen.values()), seen


# ---- a step's component of another (or an unknown) type: one line from validate, --local and Azure -----------

NESTED_STEP = "type: pipeline\njobs:\n  {name}:\n    type: {kind}\n    component: ./{file}\n"


@pytest.mark.parametrize("kind, written, depth", [("pipeline", "flibber", 1), ("pipeline", "flibber", 2),
                                                   ("command", "flibber", 1), ("pipeline", "command", 1)])
def test_a_step_component_of_another_type_is_one_line_from_validate_local_and_azure(tmp_path, monkeypatch, cli,
                                                                                     kind, written, depth):
    body = ("jobs:\n  a:\n    type: command\n    command: echo hi\n    environment: azureml:env:1\n"
            if written != "command" else "command: echo hi\nenvironment: azureml:env:1\n")
    (tmp_path / "sub.yml").write_text(f"type: {written}\n{body}")
    (tmp_path / "mid.yml").write_text(NESTED_STEP.format(name="deeper", kind=kind, file="sub.yml"))
    (tmp_path / "pipe.yml").write_text(NESTED_STEP.format(name="inner", kind="pipeline" if depth == 2 else kind,
                                                          file="mid.yml" if depth == 2 else "sub.yml"))
    monkeypatch.chdir(tmp_path)
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    where = "mid.yml:5:5" if depth == 2 else "pipe.yml:5:5"
    step = "deeper" if depth == 2 else "inner"
    wanted = (f"{where}: error invalid-component: jobs.{step}.component: './sub.yml' cannot be used: it is of type "
              f"{written!r}, and a {kind} step runs only a {kind} component (type: {kind}), as azure-ai-ml requires")
    for argv in (("validate", "pipe.yml"), ("submit", "pipe.yml", "--local", "--dry-run"),
                 ("submit", "pipe.yml", "--dry-run")):
        code, out, err = cli(*argv)
        lines = [line for line in (out + err).splitlines() if "error" in line]
        assert code == 1 and lines[0].startswith(wanted), (argv, out + err)
        assert "order:" not in out + err and "Traceback" not in err


# ---- a legacy spec's pip requirements file: inside the code folder, read there by every layer ------------------

LEGACY_PIP = """\
$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json
name: c
version: 0.1.0
type: DistributedComponent
code: src
environment:
  conda:
    pip_requirements_file: {ref}
launcher:
  type: torch.distributed
  additional_arguments: python -c "print(1)"
"""


@pytest.mark.parametrize("ref", ["../requirements.txt", "../../requirements.txt", "deps/../../requirements.txt"])
def test_a_pip_requirements_file_outside_the_code_folder_is_one_line_everywhere(tmp_path, monkeypatch, cli, ref):
    """azure-ai-ml reads it from the code snapshot when it submits (a temporary copy of ``code``), where a path
    that climbs out names nothing; amldist read it from wherever it pointed (the spec's folder, or the current one)."""
    (tmp_path / "comp" / "src").mkdir(parents=True)
    (tmp_path / "comp" / "requirements.txt").write_text("numpy\n")
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "comp" / "spec.yaml").write_text(LEGACY_PIP.format(ref=ref))
    monkeypatch.chdir(tmp_path)
    wanted = (f"comp/spec.yaml:8:5: error outside-code: environment.conda.pip_requirements_file: {ref!r} is outside "
              "the code folder 'src'; Azure ML reads it from the component's code snapshot")
    for argv in (("validate", "comp/spec.yaml"), ("convert", "comp/spec.yaml"),
                 ("submit", "comp/spec.yaml", "--local", "--dry-run")):
        code, out, err = cli(*argv)
        assert code == 1 and (out + err).startswith(wanted) and "Traceback" not in err, (argv, out + err)


def test_a_pip_requirements_file_inside_the_code_folder_is_read_there_from_any_folder(tmp_path, monkeypatch, cli):
    (tmp_path / "comp" / "src").mkdir(parents=True)
    (tmp_path / "comp" / "src" / "requirements.txt").write_text("scipy==1.0\n")
    (tmp_path / "comp" / "spec.yaml").write_text(LEGACY_PIP.format(ref="requirements.txt"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert cli("validate", "../comp/spec.yaml")[0] == 0
    code, out, err = cli("convert", "../comp/spec.yaml")
    assert code == 0 and "scipy==1.0" in out, err
    code, out, err = cli("submit", "../comp/spec.yaml", "--local", "--dry-run")
    assert code == 0, err
