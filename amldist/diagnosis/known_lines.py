"""The failures a log says in one line: each entry is the line's pattern (as the real tool prints it), what
it means, and the spec field or action that fixes it. Data only; :mod:`amldist.diagnosis.signatures`
turns each entry into a signature function and tries them in the order of its table.

A pattern is written in the part of the syntax that RE2 and POSIX ERE share (``[0-9]``, ``( | )``, ``.*``,
no ``\\d``, ``\\b`` or ``(?:``): RE2 runs them in linear time whatever a line holds (one RE2 set scans a log
once for all of them), and ``grep -E`` runs the very same patterns in the benchmark (bench/bench_diagnose_logs.py).
The line each pattern is written for is cited in tests/diagnosis/test_signatures.py, with its source.

``scope`` says where the fix is: ``node`` for a hardware or fabric fault of the machine the rank ran on (the
answer names the node and its host, and the fix is to keep the job off it), ``rank`` for the rank's own code,
settings or image. ``consequence`` marks a line a rank writes because *another* rank or node failed.
"""

from __future__ import annotations

from dataclasses import dataclass

# Said for every node-level fault; the analysis puts the node and its host in front of it.
NODE_FIX = ("a fault of the node, not of your code: resubmit so the job lands on other nodes (on a compute cluster, "
            "let the node scale down first or pick another compute), and report the host to Azure support if it "
            "fails again")


@dataclass(frozen=True)
class KnownLine:
    name: str
    pattern: str  # RE2 and POSIX ERE; searched line by line (after torch's "[rankN]:" prefix)
    says: str  # what the line says, for the README's table
    hint: str
    field: str | None = None  # the spec field to change; None: the hint says the action
    scope: str = "rank"  # "node": the machine is at fault (hardware, fabric)
    consequence: bool = False  # written because another rank or node failed
    icase: bool = False  # match regardless of case


def node_fault(name: str, pattern: str, says: str, what: str) -> KnownLine:
    return KnownLine(name, pattern, says, f"{what}: {NODE_FIX}", field="compute", scope="node")


# Node faults first: a rank that saw one also logs the NCCL error and traceback it caused.
NODE_FAULTS = (
    node_fault("ib-completion-error", r"NET/IB ?: Got completion (from peer [^ ]+ )?with (status|error)",
               "NCCL's `NET/IB : Got completion from peer ... with status=12` (older: `with error 12, ... vendor "
               "err 129`)", "an InfiniBand transfer failed on the link between this node and its peer (status 12: "
               "the transport's retries ran out: a bad cable, port or HCA on one of the two nodes)"),
    node_fault("ib-port-error", r"NET/IB ?: .*(Got async event ?: (port error|local catastrophic error|"
               r"device fatal)|async fatal event)", "NCCL's `NET/IB : mlx5_0:1 Got async event : port error`",
               "the node's InfiniBand port went down (or its HCA reported a fatal error)"),
    node_fault("gpu-ecc-error", r"uncorrectable ECC error encountered|ECC error detected|Xid.*: (48|63|64|94|95),",
               "`CUDA error: uncorrectable ECC error encountered`, or Xid 48/63/64/94/95",
               "the GPU's memory has an uncorrectable (double-bit) ECC error"),
    node_fault("gpu-lost", r"GPU has fallen off the bus|GPU is lost|Xid.*: (79|74|119|120),",
               "`GPU has fallen off the bus` / `GPU is lost`, or Xid 79/74/119/120",
               "a GPU of the node stopped answering (fell off the bus, NVLink or GSP failure)"),
    node_fault("gpu-xid", r"NVRM: Xid \(", "the kernel's `NVRM: Xid (PCI:...): N` line (another Xid)",
               "the GPU driver reported a hardware or driver fault (Xid); the number says which, see NVIDIA's "
               "Xid table"),
    node_fault("nvlink-error", r"uncorrectable NVLink error", "`CUDA error: uncorrectable NVLink error detected "
               "during the execution`", "an NVLink between the node's GPUs failed"),
    node_fault("cuda-launch-failure", r"unspecified launch failure", "`CUDA error: unspecified launch failure`",
               "a GPU kernel died without a reason (most often a GPU fault, Xid 13/31/43 in the node's kernel "
               "log; when it follows the code to every node, a kernel bug)"),
    node_fault("gpu-busy", r"CUDA-capable device\(s\) is/are busy or unavailable|all CUDA-capable devices are busy",
               "`CUDA error: CUDA-capable device(s) is/are busy or unavailable`",
               "the node's GPU is held by another process or set to exclusive mode"),
    node_fault("ib-reg-mr", r"Call to ibv_reg_mr failed|ibv_reg_mr(_iova2)? failed",
               "NCCL's `Call to ibv_reg_mr failed`", "the node could not register memory with its InfiniBand HCA "
               "(memlock limit, or GPUDirect RDMA's kernel module missing on the node)"),
)

CUDA_LINES = (
    KnownLine("cuda-illegal-address", r"an illegal memory access was encountered|illegal address",
              "`CUDA error: an illegal memory access was encountered`",
              "a GPU kernel read or wrote outside its memory, most often an index out of range in the code: run "
              "once with CUDA_LAUNCH_BLOCKING=1 to see the line; if only one node ever hits it, treat it as that "
              "node's fault", field="environment_variables.CUDA_LAUNCH_BLOCKING"),
    KnownLine("cuda-device-assert", r"device-side assert triggered", "`CUDA error: device-side assert triggered`",
              "a check inside a GPU kernel failed (most often a class label or index out of range): run with "
              "CUDA_LAUNCH_BLOCKING=1 to see the line", field="command"),
    KnownLine("cuda-no-device", r"no CUDA-capable device is detected|Found no NVIDIA driver on your system|"
              r"ProcessGroupNCCL is only supported with GPUs, no GPUs found",
              "`no CUDA-capable device is detected` / `ProcessGroupNCCL is only supported with GPUs, no GPUs found`",
              "the rank saw no GPU: a CPU size, or an image without the GPU driver's libraries; pick a GPU size "
              "(or use the gloo backend on CPU)", field="resources.instance_type"),
    KnownLine("cuda-driver-too-old", r"CUDA driver version is insufficient for CUDA runtime version|"
              r"The NVIDIA driver on your system is too old",
              "`CUDA driver version is insufficient for CUDA runtime version`",
              "the image's CUDA is newer than the node's driver: use an image built for an older CUDA (Azure ML's "
              "curated ACPT images match the nodes)", field="environment"),
    KnownLine("torch-without-cuda", r"Torch not compiled with CUDA enabled", "`AssertionError: Torch not compiled "
              "with CUDA enabled`", "the image has a CPU-only torch: install a CUDA build in the environment",
              field="environment"),
)

NCCL_LINES = (
    KnownLine("nccl-version-mismatch", r"Mismatched NCCL version detected",
              "NCCL's `Mismatched NCCL version detected : rank 1 version 22705 rank 0 version 22703`",
              "the ranks load different NCCL builds (different images, or an NCCL on LD_LIBRARY_PATH on some "
              "nodes): run every rank from the same environment", field="environment"),
    KnownLine("shm-exhausted", r"failed to extend /dev/shm|Error while creating shared memory segment|"
              r"unable to allocate shared memory|No space left on device.*/dev/shm|/dev/shm.*No space left on device",
              "NCCL's `Error: failed to extend /dev/shm/nccl-... to N bytes`, torch's `unable to allocate shared "
              "memory(shm)`, `No space left on device: '/dev/shm/...'`",
              "/dev/shm is too small for NCCL's or DataLoader's shared memory: raise "
              "resources.shm_size (e.g. 16g), or use fewer DataLoader workers", field="resources.shm_size"),
    KnownLine("nccl-socket-interface", r"Bootstrap ?: no socket interface found|NET/Socket ?: no interface found|"
              r"no usable interface found", "NCCL's `Bootstrap : no socket interface found`",
              "NCCL_SOCKET_IFNAME names no interface of the node: remove it (NCCL skips docker0 and lo by itself) "
              "or name one the node has (eth0)", field="environment_variables.NCCL_SOCKET_IFNAME"),
    KnownLine("nccl-topology-file", r"XML Import Channel ?: dev [0-9]+ not found|NCCL_GRAPH_FILE|"
              r"Could not find an NCCL topology file|topo file .* not found",
              "NCCL's `XML Import Channel : dev 1 not found` (an image's NCCL_GRAPH_FILE / NCCL_TOPO_FILE)",
              "the image's NCCL topology or graph file is for another size (HPC images set it for 8 GPUs): unset "
              "NCCL_GRAPH_FILE/NCCL_TOPO_FILE, or use the file for this size",
              field="environment_variables.NCCL_GRAPH_FILE"),
    KnownLine("nccl-internal-error", r"ncclInternalError|internal error - please report this issue",
              "`ncclInternalError: Internal check failed`", "NCCL failed an internal check, most often an NCCL "
              "network plugin or build that does not match the image's NCCL: run with NCCL_DEBUG=INFO and use one "
              "NCCL from a curated image", field="environment_variables.NCCL_DEBUG"),
    KnownLine("nccl-system-error", r"ncclSystemError|unhandled system error",
              "`ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error`",
              "a system call NCCL made failed (shared memory, sockets, the InfiniBand device, a memlock limit): "
              "NCCL_DEBUG=WARN prints the call just above this line", field="environment_variables.NCCL_DEBUG"),
    KnownLine("nccl-cuda-error", r"ncclUnhandledCudaError|unhandled cuda error",
              "`ncclUnhandledCudaError: Call to CUDA function failed`",
              "a CUDA call inside NCCL failed: NCCL_DEBUG=WARN "
              "prints which (`Cuda failure '...'`); out of memory, a lost GPU or a driver mismatch",
              field="environment_variables.NCCL_DEBUG"),
    KnownLine("nccl-invalid-usage", r"ncclInvalidUsage", "`ncclInvalidUsage: This usually reflects invalid usage "
              "of NCCL library`", "the code called NCCL in a way it refuses (two ranks on one GPU, a tensor on the "
              "wrong device, mismatched counts): NCCL_DEBUG=WARN says which", field="command"),
    KnownLine("nccl-remote-error", r"ncclRemoteError|remote process exited or there was a network error",
              "`ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
              "prematurely`", "a peer rank exited or the network between nodes failed: the rank that failed first "
              "(or an InfiniBand error) is the cause", consequence=True),
)

COLLECTIVE_LINES = (
    KnownLine("collective-mismatch", r"Detected mismatch between collectives on ranks",
              "`Detected mismatch between collectives on ranks. Rank 0 is running collective: "
              "CollectiveFingerPrint(...)` (TORCH_DISTRIBUTED_DEBUG=DETAIL)",
              "two ranks called different collectives (or different shapes) at the same step: every rank must "
              "call the same collectives in the same order", field="command"),
    KnownLine("ddp-model-mismatch", r"DDP expects same model across all ranks",
              "`DDP expects same model across all ranks, but Rank 1 has 190 params, while rank 0 has inconsistent 0 "
              "params`", "the ranks built different models (a rank-dependent branch, a different checkpoint): build "
              "the same model on every rank", field="command"),
    KnownLine("ddp-unused-parameters", r"Expected to have finished reduction in the prior iteration",
              "`Expected to have finished reduction in the prior iteration before starting a new one`",
              "some parameters got no gradient in a step: pass find_unused_parameters=True to "
              "DistributedDataParallel, or use every output in the loss", field="command"),
    KnownLine("process-group-not-initialized", r"Default process group has not been initialized",
              "`Default process group has not been initialized, please make sure to call init_process_group`",
              "the code used torch.distributed before forming the group: call amldist.runtime.init_distributed() "
              "first", field="command"),
    KnownLine("dump-signal-from-peer", r"Received a dump signal due to a collective timeout from +rank",
              "ProcessGroupNCCL's `Received a dump signal due to a collective timeout from rank 0 ...`",
              "another rank timed out in a collective and told this one to dump its state", consequence=True),
    KnownLine("nccl-heartbeat", r"Heartbeat monitor timed out|watchdog thread .*(hang|stuck)|"
              r"ProcessGroupNCCL's watchdog got stuck", "ProcessGroupNCCL's `Heartbeat monitor timed out! Process "
              "will be terminated after dumping debug info`", "ProcessGroupNCCL's watchdog thread itself stopped "
              "answering, after a collective or a CUDA call hung: the rank that failed first is the cause; "
              "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC sets how long it waits",
              field="environment_variables.TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", consequence=True),
)

LAUNCH_LINES = (
    KnownLine("rank-not-set", r"environment variable (RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) "
              r"expected, but not set", "`environment variable RANK expected, but not set`",
              "init_process_group(init_method='env://') found no RANK: under `distribution: type: mpi` Azure ML "
              "sets only Open MPI's variables. Start the script as `python -m amldist.runtime -- python train.py` "
              "(or call amldist.runtime.init_distributed())", field="command"),
    KnownLine("mpi-abort", r"MPI_ABORT was invoked on rank [0-9]+", "Open MPI's `MPI_ABORT was invoked on rank 3 in "
              "communicator MPI_COMM_WORLD with errorcode 1`", "the named rank called MPI_Abort (Horovod and mpi4py "
              "do on an uncaught exception): its own log says why", field="command"),
    KnownLine("mpi-rank-died", r"(mpirun|prterun) noticed that process rank [0-9]+|"
              r"(Primary job|prterun) +terminated normally, but [0-9]+ process(es)? returned",
              "Open MPI's `mpirun noticed that process rank 2 with PID 0 on node n1 exited on signal 9 (Killed)`",
              "mpirun reports the rank that ended first; that rank's own log says why", consequence=True),
    KnownLine("intel-mpi-bad-termination", r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
              "Intel MPI's `BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES` block",
              "Intel MPI's launcher reports a rank that ended badly (the block names its rank and signal); that "
              "rank's log says why", consequence=True),
    KnownLine("name-resolution", r"Name or service not known|Temporary failure in name resolution|gai error",
              "`The IPv6 network addresses of (node-0, 29500) cannot be retrieved (gai error: -2 - Name or service "
              "not known)`", "a rank could not resolve MASTER_ADDR: leave MASTER_ADDR to the launcher (Azure ML sets "
              "it), or set it to the first node's address", field="environment_variables.MASTER_ADDR"),
    KnownLine("connection-refused", r"Connection refused|errno: 111", "`The client socket has failed to connect to "
              "[node-0]:29500 (errno: 111 - Connection refused)`", "nothing listened at MASTER_ADDR:MASTER_PORT: "
              "rank 0 had not started, or had already failed (then its log is the cause)",
              field="environment_variables.MASTER_PORT", consequence=True),
)

HOST_LINES = (
    KnownLine("host-oom-killer", r"Out of memory: Killed process|oom-kill:|Memory cgroup out of memory|"
              r"DataLoader worker \(pid [0-9]+\) is killed by signal: Killed",
              "the kernel's `Out of memory: Killed process 4121 (python)`, DataLoader's `is killed by signal: "
              "Killed`", "the node's memory ran out and the kernel killed a process: use fewer DataLoader workers "
              "or processes per node, load less at once, or pick a size with more memory",
              field="resources.instance_type"),
    KnownLine("disk-full", r"No space left on device", "`OSError: [Errno 28] No space left on device` (not on "
              "/dev/shm)", "the node's disk filled up: write checkpoints and large files to ./outputs or a mounted "
              "output, and clean up what the job keeps", field="outputs"),
    KnownLine("module-not-found", r"ModuleNotFoundError: No module named", "`ModuleNotFoundError: No module named "
              "'x'`", "the environment lacks a package (or the code folder a module): add it to the environment's "
              "conda/pip file, or to code:", field="environment"),
)
