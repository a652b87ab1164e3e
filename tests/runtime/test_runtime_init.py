"""init_distributed() against a stand-in for torch, so that the CUDA/NCCL branch (which needs a
GPU to run for real) is exercised here too: device choice, device_id, backend, exported
variables, idempotence. The real gloo path runs in test_runtime_worlds.py."""

from __future__ import annotations

import datetime
import os
import sys
import types

import pytest

from amldist.runtime import DistEnvError, destroy, init_distributed
from amldist.runtime.process_group import choose_backend, cuda_device_index, init_kwargs

OMPI_RANK_2_OF_4 = dict(OMPI_COMM_WORLD_RANK="2", OMPI_COMM_WORLD_SIZE="4", OMPI_COMM_WORLD_LOCAL_RANK="2",
                        OMPI_COMM_WORLD_LOCAL_SIZE="4", AZ_BATCHAI_MPI_MASTER_NODE="10.0.0.7")


class FakeTorch:
    """Just the torch surface init_distributed uses, recording every call."""

    def __init__(self, gpus: int, device_id_supported: bool = True):
        self.calls: list[tuple] = []
        self.initialized = False
        self.cuda = types.SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus,
                                          set_device=lambda index: self.calls.append(("set_device", index)))
        self.device = lambda kind, index: f"{kind}:{index}"

        def init_process_group(backend=None, init_method=None, timeout=None, device_id=None):
            self.calls.append(("init", dict(backend=backend, init_method=init_method, timeout=timeout,
                                            device_id=device_id)))
            self.initialized = True

        def old_init_process_group(backend=None, init_method=None, timeout=None):
            init_process_group(backend, init_method, timeout)

        def destroy_process_group():
            self.calls.append(("destroy",))
            self.initialized = False

        self.distributed = types.SimpleNamespace(
            is_initialized=lambda: self.initialized, destroy_process_group=destroy_process_group,
            barrier=lambda: self.calls.append(("barrier",)),
            init_process_group=init_process_group if device_id_supported else old_init_process_group,
        )

    def init_calls(self) -> list[dict]:
        return [args[1] for args in self.calls if args[0] == "init"]


@pytest.fixture
def fake_torch(monkeypatch, clean_os_environ):
    def install(gpus: int = 0, device_id_supported: bool = True) -> FakeTorch:
        torch = FakeTorch(gpus, device_id_supported)
        monkeypatch.setitem(sys.modules, "torch", torch)
        monkeypatch.setitem(sys.modules, "torch.distributed", torch.distributed)
        return torch
    return install


def test_cuda_sets_device_from_local_rank_and_uses_nccl_with_device_id(fake_torch):
    torch = fake_torch(gpus=4)
    os.environ.update(OMPI_RANK_2_OF_4)
    env = init_distributed()
    assert ("set_device", 2) in torch.calls
    assert torch.init_calls() == [dict(backend="nccl", init_method="env://", timeout=None, device_id="cuda:2")]
    assert env.local_rank == 2


def test_torch_without_device_id_gets_no_device_id(fake_torch):
    torch = fake_torch(gpus=4, device_id_supported=False)
    os.environ.update(OMPI_RANK_2_OF_4)
    init_distributed()
    assert ("set_device", 2) in torch.calls
    assert torch.init_calls() == [dict(backend="nccl", init_method="env://", timeout=None, device_id=None)]


def test_no_cuda_means_gloo_and_no_device(fake_torch):
    torch = fake_torch(gpus=0)
    os.environ.update(OMPI_RANK_2_OF_4)
    init_distributed(timeout=30)
    assert not [call for call in torch.calls if call[0] == "set_device"]
    assert torch.init_calls() == [dict(backend="gloo", init_method="env://",
                                       timeout=datetime.timedelta(seconds=30), device_id=None)]


def test_exports_mapped_variables_and_leaves_nccl_and_ucx_alone(fake_torch):
    fake_torch(gpus=4)
    os.environ.update(OMPI_RANK_2_OF_4, NCCL_SOCKET_IFNAME="eth0", NCCL_IB_DISABLE="0", UCX_TLS="tcp",
                      TORCHELASTIC_USE_AGENT_STORE="True")
    before = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "UCX_"))}
    init_distributed()
    assert {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
                                       "MASTER_ADDR", "MASTER_PORT")} == {
        "RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4", "NODE_RANK": "0",
        "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "54965"}
    assert {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "UCX_"))} == before
    assert "TORCHELASTIC_USE_AGENT_STORE" not in os.environ


def test_torchrun_world_keeps_its_agent_store_setting(fake_torch):
    fake_torch()
    os.environ.update(TORCHELASTIC_RUN_ID="r", TORCHELASTIC_USE_AGENT_STORE="True", RANK="0", LOCAL_RANK="0",
                      WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29400")
    init_distributed()
    assert os.environ["TORCHELASTIC_USE_AGENT_STORE"] == "True"


def test_second_call_returns_same_env_without_forming_again(fake_torch):
    torch = fake_torch()
    first = init_distributed()
    os.environ["RANK"] = "7"  # even if the environment changes meanwhile
    assert init_distributed() is first
    assert len(torch.init_calls()) == 1


def test_group_formed_by_the_script_is_reported_not_formed_again(fake_torch):
    torch = fake_torch()
    torch.initialized = True
    env = init_distributed()
    assert env.launcher == "none" and torch.init_calls() == []


def test_destroy_allows_forming_again(fake_torch):
    torch = fake_torch()
    init_distributed()
    destroy()
    assert torch.calls[-2:] == [("barrier",), ("destroy",)]  # every rank done before the group goes
    init_distributed(backend="gloo")
    assert len(torch.init_calls()) == 2


def test_destroy_without_torch_loaded_does_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)
    destroy()
    assert "torch.distributed" not in sys.modules


def test_bad_environment_raises_before_anything_is_exported(fake_torch):
    torch = fake_torch()
    os.environ.update(RANK="0", OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="1",
                      OMPI_COMM_WORLD_LOCAL_SIZE="2")
    with pytest.raises(DistEnvError, match="OMPI_COMM_WORLD_RANK=1"):
        init_distributed()
    assert "WORLD_SIZE" not in os.environ and torch.calls == []


def test_debug_diagnostics_printed_once_on_rank_zero(fake_torch, capsys):
    fake_torch()
    os.environ["AMLDIST_DEBUG"] = "1"
    init_distributed()
    destroy()
    init_distributed()
    err = capsys.readouterr().err
    assert err.count("amldist.runtime: launcher=none rank=0/1") == 1


def test_no_diagnostics_unless_asked(fake_torch, capsys):
    fake_torch()
    init_distributed()
    assert "amldist.runtime" not in capsys.readouterr().err


@pytest.mark.parametrize("requested, cuda, expected", [
    ("auto", True, "nccl"), ("auto", False, "gloo"), ("gloo", True, "gloo"), ("nccl", True, "nccl"),
    ("cpu:gloo,cuda:nccl", True, "cpu:gloo,cuda:nccl"),
])
def test_choose_backend(requested, cuda, expected):
    assert choose_backend(requested, cuda) == expected


@pytest.mark.parametrize("local_rank, gpus, expected", [(0, 4, 0), (3, 4, 3), (3, 1, 0), (0, 1, 0)])
def test_cuda_device_index(local_rank, gpus, expected):
    assert cuda_device_index(local_rank, gpus) == expected


def test_cuda_device_index_without_a_gpu_for_this_rank():
    with pytest.raises(DistEnvError, match="local rank 5 has no GPU: only 4 visible"):
        cuda_device_index(5, 4)


def test_init_kwargs_follow_the_signature():
    timeout = datetime.timedelta(minutes=2)
    assert init_kwargs({"backend", "device_id"}, "nccl", timeout, "cuda:1") == dict(
        backend="nccl", init_method="env://", timeout=timeout, device_id="cuda:1")
    assert init_kwargs({"backend"}, "nccl", None, "cuda:1") == dict(backend="nccl", init_method="env://")
    assert init_kwargs({"device_id"}, "gloo", 5.5, None) == dict(
        backend="gloo", init_method="env://", timeout=datetime.timedelta(seconds=5.5))
