"""Every signature on a log line in the form the real tool prints it, with where that form comes from.

The lines are copied from the tools' sources (the format string filled in) or from users' reports of real
runs; the source is the comment beside each. ``grep -E`` must find each line with the entry's own pattern
too: the benchmark (bench/bench_diagnose_logs.py) times grep on the very same patterns.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from amldist.diagnosis import known_lines
from amldist.diagnosis.analysis import diagnose
from amldist.diagnosis.signatures import SIGNATURES, Context, RankLog, classify, table_rows
from amldist.rules import vm_sizes
from tests.conftest import ROOT

ND_A100 = vm_sizes.lookup("Standard_ND96asr_v4")

# (signature, exit code, the log's text as the tool prints it); the source of each form in the comment.
CASES = [
    # nccl src/transport/net_ib.cc (2.19+): "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d
    # vendor err %d (%s)%s%s%s%s hca %s"
    ("ib-completion-error", 1, "node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion "
     "from peer 10.2.0.5<33092> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.2.0.4"),
    # NVIDIA/nccl#902 (older NCCL): "NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129"
    ("ib-completion-error", 1, "gpu7:212:530 [3] NCCL INFO transport/net_ib.cc:1122 NCCL WARN NET/IB : Got "
     "completion with error 12, opcode 0, len 0, vendor err 129"),
    # nccl 2.27 transport/net_ib/p2p.cc: status and opcode printed with their names
    ("ib-completion-error", 1, "[2026-09-09 10:46:33] ubuntu2:319733:319761 [1] transport/net_ib/p2p.cc:648 NCCL "
     "WARN NET/IB: Got completion from peer 10.153.235.13<40554> with status=IBV_WC_RETRY_EXC_ERR(12) "
     "opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) vendor_err=129 hca mlx5_1"),
    # nccl net_ib.cc ncclIbAsyncThreadMain: WARN("NET/IB : %s:%d Got async event : %s", devName, portNum, str)
    ("ib-port-error", 1, "node-1:88:97 [0] transport/net_ib.cc:86 NCCL WARN NET/IB : mlx5_ib3:1 Got async event "
     ": port error"),
    # CUDA's cudaErrorECCUncorrectable, as torch raises it
    ("gpu-ecc-error", 1, "RuntimeError: CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might "
     "be asynchronously reported at some other API call, so the stacktrace below might be incorrect."),
    # the kernel log (dmesg) a job prints: NVRM: Xid (PCI:...): 48 is a double-bit ECC error
    ("gpu-ecc-error", None, "[ 8341.293511] NVRM: Xid (PCI:0000:c1:00): 48, pid=4121, DBE (double bit error) ECC "
     "error detected."),
    ("gpu-lost", None, "[ 9210.118201] NVRM: Xid (PCI:0000:3b:00): 79, pid=2911, GPU has fallen off the bus."),
    # nvidia-smi when a GPU is gone
    ("gpu-lost", 1, "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to "
     "recover this GPU"),
    ("gpu-xid", None, "[ 1204.551302] NVRM: Xid (PCI:0000:41:00): 31, pid=3301, name=python, Ch 00000010, intr "
     "00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000."),
    # CUDA's cudaErrorNvlinkUncorrectable
    ("nvlink-error", 1, "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution"),
    ("cuda-launch-failure", 1, "RuntimeError: CUDA error: unspecified launch failure\nCompile with "
     "`TORCH_USE_CUDA_DSA` to enable device-side assertions."),
    ("gpu-busy", 1, "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"),
    # nccl net_ib.cc: "Call to ibv_reg_mr failed with error %s"
    ("ib-reg-mr", 1, "node-0:41:70 [2] include/ibvwrap.h:97 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
     "allocate memory"),
    ("cuda-oom", 1, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
     "capacity of 39.39 GiB of which 1.2 GiB is free."),
    ("cuda-illegal-address", 1, "RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("cuda-device-assert", 1, "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
     "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\nRuntimeError: CUDA error: "
     "device-side assert triggered"),
    ("cuda-no-device", 1, "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"),
    ("cuda-no-device", 1, "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
     "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"),
    ("cuda-driver-too-old", 1, "RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."),
    ("cuda-driver-too-old", 1, "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime "
     "version"),
    ("torch-without-cuda", 1, "AssertionError: Torch not compiled with CUDA enabled"),
    # nccl init.cc: WARN("Mismatched NCCL version detected : rank %d version %d rank %d version %d", ...)
    ("nccl-version-mismatch", 1, "node-1:51:51 [0] init.cc:652 NCCL WARN Mismatched NCCL version detected : rank 1 "
     "version 22705 rank 0 version 22703"),
    # nccl misc/shmutils.cc, as NCCL's troubleshooting page shows it
    ("shm-exhausted", 1, "3d3e22c3066f:168:168 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend "
     "/dev/shm/nccl-UbzKZ9 to 9637892 bytes\n3d3e22c3066f:168:168 [0] misc/shmutils.cc:113 NCCL WARN Error while "
     "creating shared memory segment /dev/shm/nccl-UbzKZ9 (size 9637888)"),
    # torch c10/core/impl/alloc_cpu / MapAllocator.cpp: "unable to allocate shared memory(shm) for file <...>"
    ("shm-exhausted", 1, "RuntimeError: unable to allocate shared memory(shm) for file </torch_4121_3141592_0>: No "
     "space left on device (28)"),
    ("shm-exhausted", 1, "OSError: [Errno 28] No space left on device: '/dev/shm/psm_8c1f2a'"),
    # nccl bootstrap.cc / socket.cc
    ("nccl-socket-interface", 1, "node-0:30:30 [0] bootstrap.cc:58 NCCL WARN Bootstrap : no socket interface found"),
    # NVIDIA/nccl#1008, Azure/azhpc-images#327: an HPC image's NCCL_GRAPH_FILE on a smaller size
    ("nccl-topology-file", 1, "node-0:60:60 [1] graph/xml.cc:624 NCCL WARN XML Import Channel : dev 1 not found."),
    # torch DistBackendError, ncclGetErrorString's texts
    ("nccl-internal-error", 1, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "NCCLUtils.hpp:275, internal error - please report this issue to the NCCL developers, NCCL version 2.20.5\n"
     "ncclInternalError: Internal check failed."),
    ("nccl-system-error", 1, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"
     "\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."),
    ("nccl-cuda-error", 1, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
     "unhandled cuda error, NCCL version 2.14.3\nncclUnhandledCudaError: Call to CUDA function failed."),
    ("nccl-invalid-usage", 1, "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
     "Invalid config blocking attribute value -2147483648"),
    ("nccl-remote-error", 1, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3\n"
     "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."),
    # torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    ("collective-mismatch", 1, "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
     "collective: CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float, "
     "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)), but Rank 1 is running collective: "
     "CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST, TensorShape=[4])."),
    # torch/nn/parallel/distributed.py _verify_param_shape_across_processes
    ("ddp-model-mismatch", 1, "RuntimeError: DDP expects same model across all ranks, but Rank 1 has 190 params, "
     "while rank 0 has inconsistent 0 params."),
    ("ddp-unused-parameters", 1, "RuntimeError: Expected to have finished reduction in the prior iteration before "
     "starting a new one. This error indicates that your module has parameters that were not used in producing loss."),
    ("process-group-not-initialized", 1, "ValueError: Default process group has not been initialized, please make "
     "sure to call init_process_group."),
    # ProcessGroupNCCL.cpp getNCCLWatchdogTimeoutErrorMsg (torch 2.4+), on a rank that did not time out itself
    ("dump-signal-from-peer", -6, "[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0("
     "default_pg) Rank 6] Received a dump signal due to a collective timeout from  rank 7 and we will try our best "
     "to dump the debug info. Last enqueued NCCL work: 56116, last completed NCCL work: 56116."),
    ("nccl-heartbeat", -6, "[rank3]:[E1114 10:02:11.481 ProcessGroupNCCL.cpp:1316] [PG ID 0 PG GUID 0(default_pg) "
     "Rank 3] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_."
     "size()=2"),
    # torch/distributed/rendezvous.py _env_error
    ("rank-not-set", 1, "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
     "variable RANK expected, but not set"),
    # Open MPI's help-mpi-api.txt / ompi_mpi_abort
    ("mpi-abort", 1, "--------------------------------------------------------------------------\nMPI_ABORT was "
     "invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1."),
    ("mpi-rank-died", 1, "mpirun noticed that process rank 2 with PID 0 on node 10.0.0.5 exited on signal 9 (Killed)."),
    ("mpi-rank-died", 1, "Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per "
     "user-direction, the job has been aborted."),
    # Intel MPI (Hydra)'s block, as in many user reports
    ("intel-mpi-bad-termination", 9, "=====================================================================\n=   BAD "
     "TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 3 PID 5490 RUNNING AT node-1\n=   KILLED BY "
     "SIGNAL: 9 (Killed)\n====================================================================="),
    # torch TCPStore's message on a wrong MASTER_ADDR
    ("name-resolution", 1, "[W502 10:00:01.1 socket.cpp:697] [c10d] The IPv6 network addresses of (node-0, 29500) "
     "cannot be retrieved (gai error: -2 - Name or service not known)."),
    ("connection-refused", 1, "[W502 10:00:01.1 socket.cpp:663] [c10d] The client socket has failed to connect to "
     "[node-0]:29500 (errno: 111 - Connection refused)."),
    ("bus-error", 1, "RuntimeError: DataLoader worker (pid 4121) is killed by signal: Bus error. It is possible that "
     "dataloader's workers are out of shared memory. Please try to raise your shared memory limit."),
    ("bus-error", 135, ""),  # 128 + SIGBUS, as a shell or Azure ML reports it
    ("host-oom-killer", None, "[12345.678] Out of memory: Killed process 4121 (python) total-vm:88123456kB, "
     "anon-rss:77123456kB"),
    ("host-oom-killer", 1, "RuntimeError: DataLoader worker (pid 4121) is killed by signal: Killed."),
    ("disk-full", 1, "OSError: [Errno 28] No space left on device: '/mnt/azureml/cr/j/abc/exe/wd/ckpt/step_900.pt'"),
    ("module-not-found", 1, "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import "
     "deepspeed\nModuleNotFoundError: No module named 'deepspeed'"),
    ("address-in-use", 1, "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
     "network address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use"),
    ("collective-timeout", -6, "[rank0]:[E502 10:12:01.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
     "ran for 600034 milliseconds before timing out."),
    ("peer-lost", 1, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
     "[10.0.0.5]:29500"),
    ("python-exception", 1, "Traceback (most recent call last):\n  File \"/code/train.py\", line 9, in step\n    "
     "raise ValueError('bad batch')\nValueError: bad batch"),
    ("oom-killed", 137, ""),
    ("stopped", -15, ""),
    ("signal", -11, "Fatal Python error: Segmentation fault\n"),
    ("fabric-check", 1, "amldist.runtime: check: FAILED: node 1: 60.00 GB/s within the node, under half of the other "
     "nodes'"),
    ("duplicate-gpu", 1, "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nDuplicate GPU "
     "detected : rank 9 and rank 1 both on CUDA device 1d000"),
    ("stall", 124, "amldist.runtime: stall: rank 0 made no progress for 3.0 s; it is at /code/t.py:4 in <module>; "
     "every rank writes its Python stack to its log and stops"),
    ("nccl-sockets", 1, "NCCL INFO NET/IB : No device found.\nNCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>"),
]


def rank_log(text: str, code: int | None, rank: int = 0) -> RankLog:
    return RankLog(rank, f"rank {rank}", rank // 8, f"std_log_process_{rank:02d}.txt", text, code, None)


@pytest.mark.parametrize("signature, code, text", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_signature_on_the_line_the_tool_prints(signature, code, text):
    found = classify(rank_log(text, code), Context(vm_size=ND_A100))
    assert found is not None and found.signature == signature, (found, text)
    fix = found.field or found.hint
    assert fix  # every finding says what to change


def test_every_signature_of_the_table_has_a_case():
    tested = {name for name, _code, _text in CASES} | {"nccl-ib-disabled"}  # the note's other name, below
    named = {name.strip("`") for row in table_rows() for name in row[0].split(" / ")}
    # made across ranks: tests/diagnosis/test_signatures, test_collectives (the attribution), e2e/test_fault_drill
    analysis = {"never-joined", "left-early", "hung", "canceled", "collective-behind", "collective-ahead",
                "injected-preempt", "injected-kill", "injected-hang"}
    assert named - analysis - tested == set()
    assert len(named) >= 40


def test_node_faults_name_a_node_level_fix_not_a_peer_that_left():
    for entry in known_lines.NODE_FAULTS:
        case = next(text for name, _c, text in CASES if name == entry.name)
        found = classify(rank_log(case, 1), Context())
        assert (found.scope, found.field, found.consequence) == ("node", "compute", False)
        assert "resubmit" in found.hint


def test_an_ib_error_inside_nccls_remote_error_is_the_nodes_not_a_peer_that_left():
    text = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1970, remote process exited or there was a network error, NCCL version 2.19.3\nncclRemoteError: A call "
            "failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\nNET/IB : "
            "Got completion from peer 10.0.0.6<52442> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
    found = classify(rank_log(text, 1), Context())
    assert (found.signature, found.scope) == ("ib-completion-error", "node")


def test_rank_not_set_points_to_the_runtime_module():
    text = "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK " \
           "expected, but not set"
    found = classify(rank_log(text, 1), Context())
    assert "python -m amldist.runtime --" in found.hint


def test_consequences_never_outrank_a_cause():
    remote = "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."
    logs = [RankLog(0, "rank 0", 0, "a", remote, 1, 10.0),
            RankLog(1, "rank 1", 0, "b", "RuntimeError: CUDA error: uncorrectable ECC error encountered", 1, 12.0)]
    result = diagnose(logs, Context(), job="j", status="Failed", backend="azureml")
    assert (result.rank.rank, result.finding.signature) == (1, "gpu-ecc-error")


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs grep")
def test_grep_finds_each_line_with_the_same_pattern():
    entries = {s.entry.name: s.entry for s in SIGNATURES if hasattr(s, "entry")}
    for name, _code, text in CASES:
        entry = entries.get(name)
        if entry is None:
            continue
        args = ["grep", "-E", "-c"] + (["-i"] if entry.icase else []) + ["-e", entry.pattern]
        done = subprocess.run(args, input=re.sub(r"^\[rank\d+\]:", "", text, flags=re.M), capture_output=True,
                              text=True, check=False)
        assert done.stdout.strip() not in ("", "0"), (name, entry.pattern, done.stderr)


def test_the_readme_lists_every_signature_with_its_fix():
    from amldist.diagnosis.signatures import markdown_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "README.md's signature table differs: paste markdown_table()'s output"
