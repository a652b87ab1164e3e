"""The components' trainers really train: two ranks on CPU under each launcher's variables (Azure ML's
pytorch variables, mpirun, TF_CONFIG). Slow (15-25 s each), hence end to end."""

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from tests.conftest import ROOT

COMPONENTS = ROOT / "components"
DDP = COMPONENTS / "pytorch_ddp_trainer"
# variables of any launcher, removed so that only what a test sets describes the world
_LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MV2_", "SLURM_", "TORCHELASTIC_", "AZ_BATCH", "AZUREML_")
_LAUNCHER_VARS = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR",
                  "MASTER_IP", "MASTER_PORT", "TF_CONFIG", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}


def _runtime_or_skip():
    """amldist.runtime is part of the package; torch comes with the dev extra only."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install -e '.[dev]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in _LAUNCHER_VARS and not k.startswith(_LAUNCHER_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _run_all(commands, *, cwd, timeout=90):
    """Start every (argv, env) at once, wait for all; kill the rest when one hangs or the time is up."""
    procs = [subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for argv, env in commands]
    try:
        outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, f"rank exited {p.returncode}:\n{out[-3000:]}"
    return outputs


def _metrics(model_dir) -> dict:
    return json.loads((model_dir / "metrics.json").read_text())


def test_pytorch_trainer_with_two_ranks_under_azure_ml_pytorch_variables(tmp_path):
    _runtime_or_skip()
    port, model_dir = _free_port(), tmp_path / "model"
    argv = [sys.executable, str(DDP / "src" / "train.py"), "--epochs", "2", "--batch-size", "32",
            "--synthetic-rows", "512", "--model-dir", str(model_dir)]
    # what Azure ML's distribution: pytorch sets on one node with two processes
    commands = [(argv, _clean_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE=2, NODE_RANK=0,
                                  RANK=rank, LOCAL_RANK=rank)) for rank in (0, 1)]
    outputs = _run_all(commands, cwd=tmp_path)
    metrics = _metrics(model_dir)
    assert metrics["world_size"] == 2 and metrics["launcher"] == "pytorch"
    assert len(metrics["loss"]) == 2 and metrics["loss"][1] < metrics["loss"][0]
    assert (model_dir / "model.pt").stat().st_size > 0
    assert "epoch 2/2" in outputs[0] and "epoch" not in outputs[1]  # rank 0 reports


def test_mpi_trainer_under_mpirun(tmp_path):
    _runtime_or_skip()
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed")
    port, model_dir = _free_port(), tmp_path / "model"
    argv = [mpirun, "--oversubscribe", "-np", "2", "-x", "MASTER_PORT", "-x", "PYTHONPATH"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    argv += [sys.executable, str(COMPONENTS / "mpi_trainer" / "src" / "train.py"), "--steps", "20",
             "--model-dir", str(model_dir)]
    (output,) = _run_all([(argv, _clean_env(MASTER_PORT=port))], cwd=tmp_path)
    metrics = _metrics(model_dir)
    assert metrics["world_size"] == 2 and metrics["launcher"] == "openmpi"
    assert metrics["accuracy"] > 0.7, output


def test_tensorflow_trainer_torch_fallback_under_tf_config(tmp_path):
    _runtime_or_skip()
    ports, model_dir = [_free_port(), _free_port()], tmp_path / "model"
    framework = "auto" if importlib.util.find_spec("tensorflow") is None else "torch"
    argv = [sys.executable, str(COMPONENTS / "tensorflow_trainer" / "src" / "train.py"), "--framework", framework,
            "--epochs", "2", "--batch-size", "256", "--model-dir", str(model_dir)]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    commands = [(argv, _clean_env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i},
                                                        "environment": "cloud"}))) for i in (0, 1)]
    outputs = _run_all(commands, cwd=tmp_path)
    metrics = _metrics(model_dir)
    assert metrics["framework"] == "torch" and metrics["world_size"] == 2 and metrics["launcher"] == "tf_config"
    assert metrics["loss"][1] < metrics["loss"][0]
    if framework == "auto":
        assert "tensorflow is not installed" in outputs[0]
