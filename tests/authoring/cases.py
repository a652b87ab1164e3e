"""Builder calls shared by the builder tests and the azure-ai-ml interop tests."""

import subprocess
import sys
import warnings

import pytest

import amldist
from amldist.authoring import UnknownGpuCountWarning

ENV = "azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest"


def build(builder=amldist.pytorch_job, **kwargs):
    """Call a builder with a command and environment filled in.

    Any warning is an error, except the "GPU count unknown" one, which tests about it check
    themselves (most cases here name no size on purpose).
    """
    kwargs.setdefault("command", "python train.py")
    kwargs.setdefault("environment", ENV)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", UnknownGpuCountWarning)
        return builder(**kwargs)


def python_output(code: str) -> str:
    """Stdout of ``python -c code`` in a fresh interpreter (what an import pulls in), stripped."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


# (builder, keyword arguments): one case per shape of job the builders emit
CASES = [
    pytest.param(amldist.pytorch_job, {
        "command": "python train.py --data ${{inputs.data}} --lr ${{inputs.lr}} --fp16 ${{inputs.fp16}} "
                   "--tag ${{inputs.tag}} --out ${{outputs.model}}",
        "code": "./src", "compute": "azureml:gpu-cluster",
        "inputs": {"data": {"type": "uri_folder", "path": "azureml://datastores/blob/paths/data/", "mode": "ro_mount"},
                   "lr": 0.01, "fp16": True, "tag": "baseline"},
        "outputs": {"model": {"type": "uri_folder", "mode": "rw_mount"}},
        "instance_type": "Standard_ND96isr_H100_v5", "instance_count": 4, "shm_size": "64g", "timeout": 7200,
        "environment_variables": {"NCCL_DEBUG": "WARN"}, "name": "ddp-h100-run", "display_name": "DDP on H100",
        "experiment_name": "amldist-tests", "description": "all arguments", "tags": {"team": "ml", "nodes": 4},
    }, id="pytorch-everything"),
    pytest.param(amldist.pytorch_job, {"compute": "gpu-cluster", "vm_size": "Standard_NC24s_v3", "timeout": 600},
                 id="pytorch-cluster-vm-size"),
    pytest.param(amldist.pytorch_job, {"instance_type": "Standard_ND96isr_MI300X_v5", "instance_count": 2,
                                       "environment": {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04"}},
                 id="pytorch-mi300x-inline-env"),
    pytest.param(amldist.pytorch_job, {"compute": "azureml:k8s", "instance_type": "gpu-large"}, id="pytorch-k8s"),
    pytest.param(amldist.mpi_job, {"instance_type": "Standard_HB176-96rs_v4", "instance_count": 2,
                                   "process_count_per_instance": 96}, id="mpi-hpc-cpu"),
    pytest.param(amldist.mpi_job, {
        "instance_type": "Standard_NC24rs_v3", "instance_count": 3, "code": "./src",
        "command": "python train.py --data ${{inputs.data}} --epochs ${{inputs.epochs}}",
        "inputs": {"data": {"type": "uri_file", "path": "azureml://datastores/b/paths/x.csv"}, "epochs": 3},
    }, id="mpi-nc24rs"),
    pytest.param(amldist.tensorflow_job, {
        "instance_count": 2, "worker_count": 2, "parameter_server_count": 1,
        "outputs": {"model": {"type": "uri_folder"}}, "command": "python main.py --model-dir ${{outputs.model}}",
    }, id="tensorflow-ps"),
    pytest.param(amldist.tensorflow_job, {"instance_type": "Standard_ND96asr_v4", "instance_count": 2},
                 id="tensorflow-a100"),
]
