"""The signature table and the first-failure rule on logs as the frameworks write them (pure)."""

from __future__ import annotations

import pytest

from amldist.diagnosis.analysis import diagnose, stack_frame
from amldist.diagnosis.logs import job_context, last_timestamp, mpi_failure
from amldist.diagnosis.signatures import Context, RankLog, classify
from amldist.rules import vm_sizes
from amldist.rules.fabric import expected_busbw_gbs, size_variables

ND_A100 = vm_sizes.lookup("Standard_ND96asr_v4")


def log(text: str, code: int | None = 1, rank: int = 0, ended: float | None = None) -> RankLog:
    return RankLog(rank, f"rank {rank}", rank // 2, f"std_log_process_{rank:02d}.txt", text, code, ended)


@pytest.mark.parametrize("text, code, signature, field", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
     "39.39 GiB of which 1.2 GiB is free.", 1, "cuda-oom", "resources.instance_type"),
    ("RuntimeError: DataLoader worker (pid 4121) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", 1, "bus-error",
     "resources.shm_size"),
    ("", 135, "bus-error", "resources.shm_size"),  # 128 + SIGBUS, as a shell or Azure ML reports it
    ("", 137, "oom-killed", "resources.instance_type"),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
     "port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use", 1,
     "address-in-use", "environment_variables.MASTER_PORT"),
    ("[rank0]:[E502 10:12:01.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds "
     "before timing out.", -6, "collective-timeout", "command"),
    ("Fatal Python error: Segmentation fault\n", -11, "signal", "environment_variables.PYTHONFAULTHANDLER"),
    ("amldist.runtime: check: FAILED: node 1: 60.00 GB/s within the node, under half of the other nodes'", 1,
     "fabric-check", "compute"),
])
def test_each_signature_names_its_spec_field(text, code, signature, field):
    found = classify(log(text, code), Context(vm_size=ND_A100))
    assert (found.signature, found.field) == (signature, field)


def test_duplicate_gpu_compares_processes_per_node_with_the_sizes_gpus():
    text = "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nDuplicate GPU detected : rank 9 " \
           "and rank 1 both on CUDA device 1d000"
    found = classify(log(text), Context(vm_size=ND_A100, process_count_per_instance=16))
    assert found.field == "distribution.process_count_per_instance"
    assert "16 processes per node on Standard_ND96asr_v4, which has 8 GPUs" in found.hint


def test_the_first_failure_is_the_earliest_cause_not_the_lowest_rank():
    peer = "RuntimeError: [pair.cc:534] Connection closed by peer [10.0.0.5]:29500"
    logs = [log(peer, 1, 0, ended=10.0), log("Traceback (most recent call last):\n  File \"t.py\", line 3, in f\n"
                                                  "ZeroDivisionError: division by zero", 1, 2, ended=12.0),
            log("Traceback (most recent call last):\n  File \"t.py\", line 9, in g\nKeyError: 'x'", 1, 3, ended=11.0)]
    result = diagnose(logs, Context(), job="j", status="Failed", backend="local")
    assert (result.rank.rank, result.finding.line) == (3, "KeyError: 'x'")  # rank 0 only lost its peer


def test_ranks_that_never_joined_are_named_after_a_collective_timeout():
    timeout = "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)"
    logs = [log(timeout.format(r=r), -6, r, ended=100.0 + r) for r in (0, 1, 3)] + [log("epoch 3 step 40", -15, 2)]
    result = diagnose(sorted(logs, key=lambda l: l.rank), Context(), job="j", status="Failed", backend="azureml")
    assert (result.rank.rank, result.finding.signature, result.finding.ranks) == (2, "never-joined", [2])


def test_nccl_on_sockets_on_an_infiniband_size_is_a_note():
    text = "NCCL INFO NET/IB : No device found.\nNCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>\n"
    result = diagnose([log(text + "ValueError: x\n", 1)], Context(vm_size=ND_A100), job="j", status="Failed",
                      backend="local")
    assert [n.signature for n in result.notes] == ["nccl-sockets"]


def test_the_main_threads_frame_is_read_from_a_faulthandler_dump():
    dump = ("Thread 0x00007f01 (most recent call first):\n  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
            "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n\n"
            "Current thread 0x00007f02 (most recent call first):\n  File \"/code/lib/io.py\", line 8 in read\n"
            "  File \"/code/train.py\", line 41 in step\n  File \"/code/train.py\", line 60 in <module>\n")
    assert stack_frame(dump) == 'File "/code/lib/io.py", line 8 in read'


def test_log_timestamps_and_open_mpis_report():
    assert last_timestamp("2024-05-02 10:00:01,500 INFO a\n[W502 10:00:03.250000 x.cpp:1] b\n", 2024) == \
        pytest.approx(1714644003.25)
    assert mpi_failure("prterun noticed that process rank 5 with PID 0 on node n1 exited on\nsignal 9 (Killed).") \
        == (5, -9)


def test_the_job_names_its_size_by_variable_or_instance_type():
    ctx = job_context({"resources": {"instance_type": "Standard_NC24rs_v3"},
                       "distribution": {"process_count_per_instance": 4}}, 8)
    assert (ctx.vm_size.name, ctx.process_count_per_instance) == ("Standard_NC24rs_v3", 4)
    assert job_context({"environment_variables": {"AMLDIST_VM_SIZE": "ND96asr_v4"}}, 8).vm_size.gpus == 8


def test_size_variables_carry_the_expected_bus_bandwidth():
    assert size_variables("Standard_ND96isr_H100_v5") == {
        "AMLDIST_VM_SIZE": "Standard_ND96isr_H100_v5", "AMLDIST_VM_INFINIBAND": "1",
        "AMLDIST_EXPECTED_BUSBW_GBS": "360"}  # 8 GPUs x 400 Gb/s x 90 %
    assert size_variables("Standard_NC24s_v3") == {"AMLDIST_VM_SIZE": "Standard_NC24s_v3",
                                                   "AMLDIST_VM_INFINIBAND": "0"}
    assert size_variables("defaultinstancetype") == {} and expected_busbw_gbs(None) is None


def test_a_local_run_passes_its_size_to_the_ranks(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yml").write_text("type: command\ncommand: echo hi\nenvironment: azureml:e@latest\n"
                                      "resources:\n  instance_type: Standard_ND96asr_v4\n"
                                      "environment_variables:\n  AMLDIST_EXPECTED_BUSBW_GBS: '150'\n")
    code, out, err = cli("submit", "job.yml", "--local", "--dry-run")
    assert code == 0, err
    assert "AMLDIST_VM_SIZE=Standard_ND96asr_v4" in out and "AMLDIST_VM_INFINIBAND=1" in out
    assert "AMLDIST_EXPECTED_BUSBW_GBS=150" in out  # the job's own value wins


def test_an_azure_body_carries_the_size_for_a_distributed_job(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.py").write_text("print(1)\n")
    (tmp_path / "job.yml").write_text("type: command\ncode: src\ncommand: python t.py\nenvironment: azureml:e@latest\n"
                                      "compute: azureml:gpu\ndistribution:\n  type: pytorch\n"
                                      "  process_count_per_instance: 8\nresources:\n  instance_count: 2\n"
                                      "  instance_type: Standard_ND96asr_v4\n")
    code, out, err = cli("submit", "job.yml", "--dry-run", "-w", "ws", "-g", "rg", "--subscription",
                         "00000000-0000-0000-0000-000000000000")
    assert code == 0, err
    assert '"AMLDIST_VM_SIZE": "Standard_ND96asr_v4"' in out and '"AMLDIST_EXPECTED_BUSBW_GBS": "180"' in out


def test_a_job_stopped_everywhere_by_the_launcher_hung():
    logs = [log("step 10", -15, r, ended=50.0) for r in range(4)]
    result = diagnose(logs, Context(), job="j", status="Failed", backend="local")
    assert (result.finding.signature, result.finding.field) == ("hung", "environment_variables.AMLDIST_STALL_TIMEOUT")


def test_a_failed_azure_job_without_exit_codes_or_known_lines_shows_the_first_quiet_log():
    logs = [log("2024-05-02 10:00:09,000 step 9", None, 0, ended=9.0), log("2024-05-02 10:00:04,000 step 4", None, 1,
                                                                            ended=4.0)]
    result = diagnose(logs, Context(), job="j", status="Failed", backend="azureml")
    assert result.rank.rank == 1 and result.finding is None and result.exit_code == 1
    assert "step 4" in result.tail()


def test_a_canceled_job_is_not_a_hang():
    logs = [log("step 10", -15, r, ended=50.0) for r in range(2)]
    result = diagnose(logs, Context(), job="j", status="Canceled", backend="local")
    assert (result.finding.signature, result.finding.field) == ("canceled", None)


def test_diagnose_of_a_slurm_job_that_does_not_exist_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a failed Slurm job's diagnosis: tests/backends/slurm/test_slurm_cluster.py
    code, _out, err = cli("job", "diagnose", "some-run", "--slurm")
    assert code == 2 and err.startswith("error: no Slurm job named 'some-run'") and "Traceback" not in err
