"""``amldist job diagnose`` for Azure ML jobs: the real MLClient downloads every rank's log through the
recording transport (tests/backends/azureml/fake_logs.py); the logs are what Azure ML writes."""

from __future__ import annotations

import json

import pytest

import amldist.backends.azureml.backend as azureml
from tests.backends.azureml.conftest import configured_backend
from tests.backends.azureml.fake_azure import FakeCredential
from tests.backends.azureml.fake_logs import FakeLogsAzure

WS = ["-w", "ws", "-g", "rg", "--subscription", "00000000-0000-0000-0000-000000000000"]

# Four ranks on two nodes. Rank 3 (node 1) raises first, at 10:00:05.2; ranks 0-2 then lose it in the
# all-reduce a second later, rank 1's error written last. By number rank 0 or 1 would be "first".
PEER = ("[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
        "peer [10.0.0.5]:29500")
RAISED = """\
2024-05-02 10:00:01,100 INFO train: epoch 0 step 10 loss 2.31
2024-05-02 10:00:05,200 INFO train: epoch 0 step 20 loss 2.12
Traceback (most recent call last):
  File "/mnt/azureml/cr/j/abc/exe/wd/train.py", line 41, in <module>
    main()
  File "/mnt/azureml/cr/j/abc/exe/wd/train.py", line 33, in main
    batch = next(loader)
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 631, in __next__
    data = self._next_data()
KeyError: 'label'
"""


def waiting(rank: int, when: str) -> str:
    return (f"2024-05-02 10:00:01,0{rank}0 INFO train: epoch 0 step 10 loss 2.31\n"
            f"[rank{rank}]:[E502 {when} ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed\n"
            "Traceback (most recent call last):\n"
            '  File "/mnt/azureml/cr/j/abc/exe/wd/train.py", line 30, in main\n'
            "    dist.all_reduce(loss)\n" + PEER.format(r=rank) + "\n")


def command_job(per_node: int, size: str, env: dict | None = None, status: str = "Failed") -> dict:
    return {"properties": {
        "jobType": "Command", "command": "python train.py", "environmentId": "azureml:pytorch-env:1",
        "computeId": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"
                     "/computes/gpu-cluster",
        "distribution": {"distributionType": "PyTorch", "processCountPerInstance": per_node},
        "resources": {"instanceCount": 2, "instanceType": size}, "environmentVariables": env or {},
        "status": status, "properties": {}, "outputs": {}}}


@pytest.fixture
def azure(fake_azure, monkeypatch, clean_env):
    import azure.storage.blob._shared.base_client as blob_base

    fake = FakeLogsAzure()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=FakeCredential(), client_kwargs={"transport": fake}))
    yield fake
    assert fake.unexpected == [], [r.url for r in fake.unexpected]


def test_the_first_rank_by_time_is_named_with_its_node_exception_and_frame(cli, azure):
    azure.jobs["j1"] = command_job(2, "Standard_NC24rs_v3")
    azure.add_logs("j1", {
        "user_logs/std_log_process_00.txt": waiting(0, "10:00:06.100000"),
        "user_logs/std_log_process_01.txt": waiting(1, "10:00:06.900000"),
        "user_logs/std_log_process_02.txt": waiting(2, "10:00:06.300000"),
        "user_logs/std_log_process_03.txt": RAISED,
        "system_logs/lifecycler/execution-wrapper.log": "ignored\n",
    })
    code, out, err = cli("job", "diagnose", "j1", *WS, "--format", "json")
    assert code == 0, err
    first = json.loads(out)["first_failure"]
    assert (first["rank"], first["node"], first["signature"]) == (3, 1, "python-exception")
    assert first["line"] == "KeyError: 'label'"
    assert first["log"] == "artifacts/user_logs/std_log_process_03.txt"
    assert "train.py\", line 33, in main" in first["frame"]
    downloads = azure.find("GET", r"/azureml/ExperimentRun/dcid\.j1/user_logs/std_log_process_\d+\.txt$")
    assert len(downloads) == 4  # every rank's log came through MLClient.jobs.download


def test_duplicate_gpu_names_process_count_per_instance_against_the_sizes_gpus(cli, azure):
    azure.jobs["j2"] = command_job(8, "Standard_NC24rs_v3")
    nccl = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            "Last error:\nDuplicate GPU detected : rank 5 and rank 1 both on CUDA device 1d000\n")
    azure.add_logs("j2", {f"user_logs/std_log_process_{r:02d}.txt": "2024-05-02 10:00:0{r},000 start\n".format(r=r)
                          + (nccl if r == 5 else "") for r in range(16)})
    code, out, err = cli("job", "diagnose", "j2", *WS)
    assert code == 0, err
    assert "first failure: rank 5 on node 0" in out
    assert "duplicate-gpu" in out and "8 processes per node on Standard_NC24rs_v3, which has 4 GPUs" in out
    assert "[spec: distribution.process_count_per_instance]" in out
    code, out, err = cli("job", "diagnose", "j2", *WS, "--vm-size", "Standard_NC12s_v3")  # a cluster's size
    assert code == 0, err
    assert "8 processes per node on Standard_NC12s_v3, which has 2 GPUs" in out


def test_nccl_ib_disabled_on_an_infiniband_size_is_a_note_beside_the_cause(cli, azure):
    azure.jobs["j3"] = command_job(1, "Standard_ND96asr_v4", env={"NCCL_IB_DISABLE": "1"})
    azure.add_logs("j3", {
        "user_logs/std_log_process_0.txt": "node-0:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
                                           "node-0:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>\n"
                                           "Killed\n",
        "user_logs/mpi_log.txt": "",
    })
    code, out, err = cli("job", "diagnose", "j3", *WS, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["notes"][0]["signature"] == "nccl-ib-disabled"
    assert data["notes"][0]["field"] == "environment_variables.NCCL_IB_DISABLE"


def test_a_pipeline_names_its_failed_step_then_the_rank_inside_it(cli, azure):
    azure.jobs["p1"] = {"properties": {"jobType": "Pipeline", "status": "Failed", "jobs": {}, "properties": {},
                                       "outputs": {}, "inputs": {}, "settings": {}}}
    ok = command_job(2, "Standard_NC24rs_v3", status="Completed")
    bad = command_job(2, "Standard_NC24rs_v3")
    ok["parent"], bad["parent"] = "p1", "p1"
    bad["properties"]["displayName"] = "train"
    azure.jobs["p1-prep"], azure.jobs["p1-train"] = ok, bad
    azure.add_logs("p1-train", {"user_logs/std_log_process_00.txt": "ok\n",
                                "user_logs/std_log_process_01.txt": "OSError: [Errno 98] Address already in use\n"})
    code, out, err = cli("job", "diagnose", "p1", *WS)
    assert code == 0, err
    assert "job p1, step train" in out and "first failure: rank 1 on node 0" in out
    assert "address-in-use" in out and "[spec: environment_variables.MASTER_PORT]" in out


def test_an_unknown_cause_exits_1_with_the_first_failing_ranks_tail(cli, azure):
    azure.jobs["j4"] = command_job(1, "Standard_NC24rs_v3")
    azure.add_logs("j4", {"user_logs/std_log_process_0.txt": "step 1\nsomething odd happened\n",
                          "user_logs/mpi_log.txt": "mpirun noticed that process rank 0 with PID 0 on node n0 "
                                                   "exited on signal 6 (Aborted).\n"})
    code, out, err = cli("job", "diagnose", "j4", *WS)
    assert code == 0, err  # SIGABRT: a crash in native code is a cause amldist names
    assert "rank 0" in out and "signal" in out
    azure.add_logs("j4", {"user_logs/std_log_process_0.txt": "step 1\nsomething odd happened\n",
                          "user_logs/mpi_log.txt": "Process name: [[4315,1],0]\nExit code:    7\n"})
    code, out, err = cli("job", "diagnose", "j4", *WS)
    assert code == 1
    assert "something odd happened" in out and "exit code 7" in out


def test_a_job_that_does_not_exist_is_a_usage_error(cli, azure):
    code, out, err = cli("job", "diagnose", "nope", *WS)
    assert code == 2 and "no job named 'nope'" in err
