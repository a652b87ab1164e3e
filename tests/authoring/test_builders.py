"""pytorch_job / mpi_job / tensorflow_job: defaults from the size, warnings, refusals."""

import datetime
import warnings

import pytest

import amldist
from amldist.authoring import BuilderError, BuilderWarning, NoInfiniBandWarning, UnknownGpuCountWarning
from amldist.errors import UserError
from amldist.model import CommandJob, loads
from tests.authoring.cases import CASES, ENV, build, python_output

IB_GPU_VARS = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
    "NCCL_SOCKET_IFNAME": "eth0",
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}


# -- shape of what comes back ---------------------------------------------------------------------

def test_returns_a_command_job_that_round_trips(tmp_path):
    job = build(
        command="python train.py --data ${{inputs.data}} --lr ${{inputs.lr}} --out ${{outputs.model}}",
        code="./src", compute="gpu-cluster",
        inputs={"data": {"type": "uri_folder", "path": "azureml://datastores/blob/paths/d/"}, "lr": 0.01},
        outputs={"model": {"type": "uri_folder"}},
        instance_type="Standard_NC24s_v3", shm_size="16g", timeout=3600,
        name="run-1", display_name="Run 1", experiment_name="exp", description="d", tags={"team": "x"},
    )
    assert isinstance(job, CommandJob)
    data = job.to_dict()
    assert data["type"] == "command" and data["$schema"].endswith("commandJob.schema.json")
    assert data["distribution"] == {"type": "pytorch", "process_count_per_instance": 4}
    assert data["resources"] == {"instance_count": 1, "instance_type": "Standard_NC24s_v3", "shm_size": "16g"}
    assert data["limits"] == {"timeout": 3600}
    assert data["inputs"]["lr"] == 0.01 and data["inputs"]["data"]["type"] == "uri_folder"
    assert (data["name"], data["display_name"], data["experiment_name"]) == ("run-1", "Run 1", "exp")
    assert loads(job.to_yaml()).to_dict() == data
    path = job.save(tmp_path / "job.yaml")
    assert loads(open(path).read()).to_dict() == data
    with pytest.raises(UserError, match="already exists"):
        job.save(tmp_path / "job.yaml")


def test_top_level_api_is_the_builders_module():
    from amldist import authoring as builders

    assert amldist.pytorch_job is builders.pytorch_job
    assert amldist.mpi_job is builders.mpi_job and amldist.tensorflow_job is builders.tensorflow_job
    assert callable(amldist.distributed_component)


def test_builders_do_not_import_azure():
    code = (
        "import sys, amldist, amldist.azure_sdk.entities, amldist.rules.vm_sizes, amldist.cli.vm_sizes\n"
        "amldist.pytorch_job(command='python t.py', environment='azureml:e@latest',"
        " instance_type='Standard_ND96isr_H100_v5', instance_count=2)\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('azure', 'torch', 'jsonschema')])"
    )
    assert python_output(code) == "[]"


# -- process counts -------------------------------------------------------------------------------

@pytest.mark.parametrize("size,expected", [
    ("Standard_ND96isr_H100_v5", 8), ("Standard_NC24rs_v3", 4), ("Standard_NC12s_v3", 2),
    ("Standard_NC6s_v3", 1), ("nd96amsr_a100_v4", 8), ("Standard_ND96isr_MI300X_v5", 8),
    ("Standard_HB176rs_v4", 1),  # CPU size
    ("Standard_D16s_v3", 1),  # CPU size, guessed
    ("Standard_NC24rs_v2", 1),  # N-series guess: GPU count unknown
    ("defaultinstancetype", 1),  # Kubernetes instance type
    (None, 1),
])
@pytest.mark.parametrize("builder", [amldist.pytorch_job, amldist.mpi_job])
def test_default_processes_per_node(builder, size, expected):
    job = build(builder, instance_type=size)
    assert job.distribution.process_count_per_instance == expected


@pytest.mark.parametrize("kwargs,needle", [
    ({}, "no VM size was given"),
    ({"compute": "gpu-cluster"}, "no VM size was given"),
    ({"instance_type": "Standard_NC24rs_v2"}, "GPU count of 'Standard_NC24rs_v2' is unknown"),
    ({"instance_type": "gpu-large"}, "GPU count of 'gpu-large' is unknown"),
])
@pytest.mark.parametrize("builder", [amldist.pytorch_job, amldist.mpi_job])
def test_a_guessed_default_of_one_process_warns(builder, kwargs, needle):
    with pytest.warns(UnknownGpuCountWarning, match=needle) as record:
        job = builder(command="python t.py", environment=ENV, **kwargs)
    assert job.distribution.process_count_per_instance == 1
    assert record[0].filename == __file__


@pytest.mark.parametrize("kwargs", [
    {"instance_type": "Standard_HB120rs_v3"},  # CPU size: 1 is the documented default
    {"instance_type": "Standard_D4s_v3"},  # guessed, but surely no GPUs
    {"process_count_per_instance": 1},  # said explicitly
    {"vm_size": "Standard_NC6s_v3"},
])
def test_no_warning_when_the_default_is_known(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        amldist.pytorch_job(command="python t.py", environment=ENV, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        amldist.tensorflow_job(command="python t.py", environment=ENV)  # no process count in tensorflow


def test_vm_size_gives_defaults_for_a_compute_cluster_without_writing_instance_type():
    job = build(compute="gpu-cluster", vm_size="Standard_ND96asr_v4")
    assert job.distribution.process_count_per_instance == 8
    assert job.resources.instance_type is None


def test_vm_size_with_a_kubernetes_instance_type():
    job = build(compute="k8s", instance_type="gpu-large", vm_size="Standard_NC24ads_A100_v4")
    assert job.resources.instance_type == "gpu-large" and job.distribution.process_count_per_instance == 1


def test_instance_type_is_written_in_azure_spelling():
    assert build(instance_type="nd96isr_h100_v5").resources.instance_type == "Standard_ND96isr_H100_v5"
    assert build(instance_type="gpu-small").resources.instance_type == "gpu-small"


def test_explicit_process_count_is_kept():
    job = build(amldist.mpi_job, instance_type="Standard_ND96isr_H100_v5", process_count_per_instance=2)
    assert job.distribution.process_count_per_instance == 2


@pytest.mark.parametrize("builder", [amldist.pytorch_job, amldist.mpi_job])
def test_more_processes_than_gpus_is_refused(builder):
    with pytest.raises(BuilderError) as info:
        build(builder, instance_type="Standard_NC24rs_v3", process_count_per_instance=8)
    err = info.value
    assert err.field == "process_count_per_instance"
    assert "8" in err.message and "4 GPUs" in err.message and "Standard_NC24rs_v3" in err.message
    assert "\n" not in str(err) and "at most 4" in err.hint


def test_cpu_sizes_take_any_process_count():
    job = build(amldist.mpi_job, instance_type="Standard_HB176rs_v4", process_count_per_instance=176)
    assert job.distribution.process_count_per_instance == 176


# -- InfiniBand settings and warnings ---------------------------------------------------------------

def test_infiniband_gpu_size_with_several_nodes_gets_the_settings():
    job = build(instance_type="Standard_ND96isr_H100_v5", instance_count=4)
    assert job.environment_variables == IB_GPU_VARS
    assert job.resources.instance_count == 4


def test_user_settings_win_and_are_kept_first():
    job = build(
        instance_type="Standard_ND96isr_H100_v5", instance_count=2,
        environment_variables={"NCCL_SOCKET_IFNAME": "ib0", "MY_FLAG": 3},
    )
    env = job.environment_variables
    assert env["NCCL_SOCKET_IFNAME"] == "ib0" and env["MY_FLAG"] == "3"
    assert list(env)[:2] == ["NCCL_SOCKET_IFNAME", "MY_FLAG"]
    assert {k: env[k] for k in IB_GPU_VARS if k != "NCCL_SOCKET_IFNAME"} == {
        k: v for k, v in IB_GPU_VARS.items() if k != "NCCL_SOCKET_IFNAME"}


@pytest.mark.parametrize("kwargs", [
    {"instance_type": "Standard_ND96isr_H100_v5", "instance_count": 1},  # one node: no inter-node traffic
    {"instance_type": "Standard_ND96isr_H100_v5", "instance_count": 2, "infiniband_env": False},
    {"instance_type": "gpu-large", "instance_count": 2},  # size unknown
])
def test_no_settings(kwargs):
    assert build(**kwargs).environment_variables is None


def test_cpu_infiniband_size_gets_only_the_ucx_setting():
    job = build(amldist.mpi_job, instance_type="Standard_HB120rs_v3", instance_count=2)
    assert job.environment_variables == {"UCX_IB_PCI_RELAXED_ORDERING": "on"}


def test_amd_size_gets_no_cuda_variable():
    job = build(instance_type="Standard_ND96isr_MI300X_v5", instance_count=2)
    assert "CUDA_DEVICE_ORDER" not in job.environment_variables
    assert job.environment_variables["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"


def test_tensorflow_gets_the_settings_too():
    job = build(amldist.tensorflow_job, instance_type="Standard_NC24rs_v3", instance_count=2)
    assert job.environment_variables == IB_GPU_VARS


@pytest.mark.parametrize("size", ["Standard_NC24s_v3", "Standard_NC24r", "Standard_ND96is_H100_v5", "Standard_D8s_v5"])
def test_several_nodes_without_infiniband_warn(size):
    with pytest.warns(NoInfiniBandWarning, match="4 nodes of Standard_") as record:
        job = amldist.pytorch_job(command="python t.py", environment=ENV, instance_type=size, instance_count=4)
    assert job.environment_variables is None
    assert record[0].filename == __file__  # points at the caller, not at amldist
    assert issubclass(NoInfiniBandWarning, BuilderWarning) and issubclass(BuilderWarning, UserWarning)


def test_nc24r_warning_says_why():
    with pytest.warns(NoInfiniBandWarning, match="SR-IOV"):
        amldist.mpi_job(command="python t.py", environment=ENV, instance_type="Standard_NC24r", instance_count=2)


def test_one_node_without_infiniband_does_not_warn():
    build(instance_type="Standard_NC24s_v3", instance_count=1)  # build() turns warnings into errors


def test_nccl_ib_disable_on_an_infiniband_size_warns():
    with pytest.warns(BuilderWarning, match="NCCL_IB_DISABLE=1"):
        amldist.pytorch_job(
            command="python t.py", environment=ENV, instance_type="Standard_ND96asr_v4", instance_count=2,
            environment_variables={"NCCL_IB_DISABLE": "1"},
        )


# -- tensorflow -----------------------------------------------------------------------------------

def test_tensorflow_counts():
    job = build(amldist.tensorflow_job, instance_count=3)
    assert job.distribution.to_dict() == {"type": "tensorflow", "worker_count": 3}
    job = build(amldist.tensorflow_job, instance_count=2, worker_count=2, parameter_server_count=1)
    assert job.distribution.to_dict() == {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}


def test_tensorflow_has_no_process_count():
    with pytest.raises(TypeError):
        amldist.tensorflow_job(command="x", environment=ENV, process_count_per_instance=2)


# -- refusals: one line each, naming the argument --------------------------------------------------

@pytest.mark.parametrize("kwargs,field,needle", [
    ({"instance_count": 0}, "instance_count", "at least 1"),
    ({"instance_count": -2}, "instance_count", "at least 1"),
    ({"instance_count": 2.5}, "instance_count", "whole number"),
    ({"instance_count": True}, "instance_count", "whole number"),
    ({"process_count_per_instance": 0}, "process_count_per_instance", "at least 1"),
    ({"process_count_per_instance": 4.5}, "process_count_per_instance", "whole number"),
    ({"shm_size": "lots"}, "shm_size", "16g"),
    ({"shm_size": "16gb"}, "shm_size", "16g"),
    ({"shm_size": "0g"}, "shm_size", "above 0"),
    ({"shm_size": 16}, "shm_size", "16g"),
    ({"timeout": -5}, "timeout", "above 0"),
    ({"timeout": 0}, "timeout", "above 0"),
    ({"timeout": "1h"}, "timeout", "seconds"),
    ({"timeout": datetime.timedelta(milliseconds=1500)}, "timeout", "whole seconds"),
    ({"environment": None}, "environment", "required"),
    ({"environment": 3}, "environment", "reference or a mapping"),
    ({"command": "  "}, "command", "non-empty"),
    ({"command": "python t.py --lr {inputs.lr}", "inputs": {"lr": 1}}, "command", "legacy placeholder"),
    ({"command": "python t.py --lr ${{inputs.lr}}"}, "command", "inputs declares no 'lr' (at offset 17"),
    ({"command": "python t.py --out ${{outputs.model}}"}, "command", "outputs declares no 'model'"),
    ({"inputs": {"bad name": 1}}, "inputs", "not a valid input name"),
    ({"inputs": {"data": {"path": "x"}}}, "inputs.data", "needs a 'type'"),
    ({"inputs": {"data": None}}, "inputs.data", "literal value"),
    ({"outputs": {"model": "folder"}}, "outputs.model", "'type'"),
    ({"environment_variables": {"A-B": "1"}}, "environment_variables", "not a valid variable name"),
    ({"environment_variables": {"A": True}}, "environment_variables.A", "must be a string"),
    ({"vm_size": "gpu-small"}, "vm_size", "not an Azure VM size name"),
    ({"vm_size": "Standard_NC6s_v3", "instance_type": "Standard_NC24s_v3"}, "vm_size", "differs"),
])
def test_refusals(kwargs, field, needle):
    with pytest.raises(BuilderError) as info:
        build(**kwargs)
    err = info.value
    assert isinstance(err, UserError) and err.field == field
    assert needle in str(err) and "\n" not in str(err)
    assert str(err).startswith(field + ": ")


@pytest.mark.parametrize("kwargs,field", [
    ({"worker_count": 0}, "worker_count"),
    ({"parameter_server_count": -1}, "parameter_server_count"),
    ({"instance_count": 0}, "instance_count"),
])
def test_tensorflow_refusals(kwargs, field):
    with pytest.raises(BuilderError) as info:
        build(amldist.tensorflow_job, **kwargs)
    assert info.value.field == field


def test_timedelta_timeout_and_inline_environment():
    job = build(timeout=datetime.timedelta(hours=2), environment={"image": "mcr.microsoft.com/azureml/x:1"})
    assert job.limits.timeout == 7200 and job.environment == {"image": "mcr.microsoft.com/azureml/x:1"}


def test_output_type_shorthand_and_bare_literals():
    job = build(
        command="python t.py ${{inputs.flag}} ${{inputs.name}} ${{outputs.m}}",
        inputs={"flag": True, "name": "abc"}, outputs={"m": "uri_folder"},
    )
    assert job.outputs == {"m": {"type": "uri_folder"}} and job.inputs == {"flag": True, "name": "abc"}


def test_azure_input_and_output_objects_are_converted():
    pytest.importorskip("azure.ai.ml")
    from azure.ai.ml import Input, Output

    job = build(
        command="python t.py ${{inputs.data}} ${{outputs.model}}",
        inputs={"data": Input(type="uri_folder", path="azureml://datastores/blob/paths/d/")},
        outputs={"model": Output(type="uri_folder")},
    )
    assert job.inputs["data"]["type"] == "uri_folder"
    assert job.inputs["data"]["path"] == "azureml://datastores/blob/paths/d/"
    assert job.outputs["model"]["type"] == "uri_folder"


def test_a_builder_error_is_a_one_line_user_error_with_a_hint():
    """A BuilderError is a UserError: the CLI's one place shows it as error + hint lines."""
    with pytest.raises(BuilderError) as info:
        build(instance_type="Standard_NC6s_v3", process_count_per_instance=2)
    err = info.value
    assert isinstance(err, UserError) and err.exit_code == 2
    assert err.message == "process_count_per_instance: 2 processes per node is more than the 1 GPU of Standard_NC6s_v3"
    assert "at most 1" in err.hint and "\n" not in err.message + err.hint


# -- every builder result passes amldist validate --------------------------------------------------



@pytest.mark.parametrize("builder,kwargs", CASES)
def test_builder_results_pass_validate(builder, kwargs):
    from amldist import validate

    job = build(builder, **kwargs)
    errors = [d for d in validate.validate_spec(job) if d.severity == "error"]
    assert errors == []
    errors = [d for d in validate.validate_text(job.to_yaml(), "job.yaml") if d.severity == "error"]
    assert errors == []


def test_a_saved_builder_job_passes_the_validate_command(cli, tmp_path):
    builder, kwargs = CASES[0].values
    path = build(builder, **kwargs).save(tmp_path / "job.yaml")
    (tmp_path / "src").mkdir()
    code, out, err = cli("validate", str(path))
    assert code == 0, out + err


# -- property: a builder either refuses with a BuilderError or returns what validate accepts ----------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from amldist.rules import vm_sizes  # noqa: E402

_SIZES = st.one_of(
    st.none(), st.sampled_from([s.name for s in vm_sizes.all_sizes()]),
    st.sampled_from(["Standard_D4s_v3", "Standard_NC24rs_v2", "defaultinstancetype", "nd96isr_h100_v5"]),
)
_COUNTS = st.one_of(st.none(), st.integers(-2, 300), st.sampled_from([1.5, True, "2"]))
_SHM = st.one_of(st.none(), st.sampled_from(["16g", "2G", "512m", "0g", "lots", "1.5g", "100"]),
                 st.from_regex(r"\A[0-9]{1,4}[bkmg]\Z"))
_TIMEOUT = st.one_of(st.none(), st.integers(-10, 10**6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    builder=st.sampled_from(["pytorch", "mpi", "tensorflow"]), size=_SIZES, nodes=_COUNTS, procs=_COUNTS,
    shm=_SHM, timeout=_TIMEOUT, ib=st.booleans(),
)
def test_builders_refuse_or_return_valid_jobs(builder, size, nodes, procs, shm, timeout, ib):
    from amldist import validate

    kwargs = dict(command="python t.py", environment=ENV, instance_type=size, instance_count=nodes,
                  shm_size=shm, timeout=timeout, infiniband_env=ib)
    if builder == "tensorflow":
        kwargs["worker_count"] = procs
    else:
        kwargs["process_count_per_instance"] = procs
    fn = {"pytorch": amldist.pytorch_job, "mpi": amldist.mpi_job, "tensorflow": amldist.tensorflow_job}[builder]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BuilderWarning)
            job = fn(**kwargs)
    except BuilderError as err:
        assert "\n" not in str(err)
        return
    assert [d.to_text() for d in validate.validate_spec(job) if d.severity == "error"] == []
    size_info = vm_sizes.lookup(size) if size else None
    count = job.distribution.process_count_per_instance
    if builder != "tensorflow" and size_info is not None and size_info.gpus:
        assert 1 <= count <= size_info.gpus
