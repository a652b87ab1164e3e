"""Known ways a distributed rank fails: one pure function per signature, in one ordered table.

Each function reads one rank's log tail and exit code (:class:`RankLog`) with what the job says
(:class:`Context`: the VM size, processes per node, the job's variables) and returns a
:class:`Finding` or None. The finding names the spec field to change (``field``) and says how.
``consequence`` marks what a rank suffers because *another* rank failed (a peer that left, a
collective that timed out waiting, a stop by the launcher): such ranks are never the first
failure while a rank with a cause of its own exists.

:data:`SIGNATURES` is the order they are tried in: specific messages first, then a Python
exception, then what the exit code alone says (a signal).
"""

from __future__ import annotations

import re
import signal
import dataclasses
from dataclasses import dataclass

from amldist.backends.base import signal_name
from amldist.diagnosis import known_lines
from amldist.diagnosis.known_lines import KnownLine
from amldist.diagnosis.scan import MAX_LINE_CHARS, RANK_PREFIX, last_line
from amldist.rules.vm_sizes import VmSize

STALL_RE = re.compile(r"amldist\.runtime: stall: rank (\d+) (made no progress for [\d.]+ s|never reached the "
                      r"collective the other ranks waited [\d.]+ s in)(?:; it is at ([^;]*))?")
TRACEBACK = "Traceback (most recent call last):"


@dataclass
class RankLog:
    """One rank as a failure is judged: its log's tail, exit code and the time it ended."""

    rank: int | None
    label: str  # "rank 3", "worker 1"
    node: int | None
    log: str  # where the log is (a path)
    text: str  # the last part of the log
    exit_code: int | None = None  # negative: killed by that signal; None: unknown or still running
    ended: float | None = None  # seconds since the epoch; None when unknown
    signature: str | None = None  # what classify() found in it (set by the analysis)
    host: str | None = None  # the machine it ran on, when its log says (NCCL's "host:pid:tid [dev]" prefix)


@dataclass
class Context:
    vm_size: VmSize | None = None
    process_count_per_instance: int | None = None
    environment: dict = dataclasses.field(default_factory=dict)  # the job's environment_variables
    world: int = 0


@dataclass
class Finding:
    signature: str
    line: str  # the log line that says it (or what was observed)
    hint: str
    field: str | None = None  # the spec field to change
    consequence: bool = False
    frame: str | None = None  # the user's frame, for an exception or a stall
    ranks: list = dataclasses.field(default_factory=list)  # ranks it names (stuck, never joined, left early)
    scope: str = "rank"  # "node": the node's hardware or fabric failed (the fix keeps the job off that node)


def lines_of(text: str) -> list[str]:
    return [RANK_PREFIX.sub("", line).rstrip() for line in text.splitlines()]


def signal_of(code: int | None) -> int | None:
    """The signal that ended a process: -N from Python's returncode, 128+N from a shell or Azure ML."""
    if code is None or code == 0:
        return None
    if code < 0:
        return -code
    return code - 128 if 128 < code < 160 else None


def signal_text(code: int | None) -> str:
    signum = signal_of(code)
    return f"exit code {code}" if signum is None else f"exit code {code} ({signal_name(signum)})"


def stall(log: RankLog, ctx: Context) -> Finding | None:
    """amldist's stall watchdog stopped the job (amldist.runtime.watchdog): it names the stuck rank."""
    line = last_line(log.text, STALL_RE.pattern, 0)
    if line is None:
        return None
    match = STALL_RE.search(line)
    stuck = int(match.group(1))
    return Finding("stall", line, f"rank {stuck} {match.group(2)}; every rank's Python stack is in its log (the "
                   "stuck rank's shows where it waits). Fix the code there, or raise the limit if a step "
                   "legitimately takes that long",
                   field="environment_variables.AMLDIST_STALL_TIMEOUT", consequence=log.rank != stuck,
                   ranks=[stuck])


def fabric_check(log: RankLog, ctx: Context) -> Finding | None:
    """amldist's fabric check failed (amldist.runtime.check): the line names the node or the transport."""
    line = last_line(log.text, r"amldist\.runtime: check: FAILED", 0)
    if line is None:
        return None
    sockets = "sockets" in line
    return Finding("fabric-check", line, "NCCL is kept off InfiniBand: remove NCCL_IB_DISABLE / NCCL_NET=Socket, or "
                   "use an image with the InfiniBand libraries" if sockets else "a node is far slower than the "
                   "others: take it out of the cluster (or restart the job on other nodes)",
                   field="environment_variables.NCCL_IB_DISABLE" if sockets else "compute")


def duplicate_gpu(log: RankLog, ctx: Context) -> Finding | None:
    line = last_line(log.text, r"Duplicate GPU detected")
    if line is None:
        return None
    gpus = ctx.vm_size.gpus if ctx.vm_size is not None else None
    per_node = ctx.process_count_per_instance
    known = (f" ({per_node} processes per node on {ctx.vm_size.name}, which has {gpus} GPUs)"
             if gpus is not None and per_node is not None else "")
    return Finding("duplicate-gpu", line, f"two ranks of a node use the same GPU{known}: set "
                   "distribution.process_count_per_instance to the size's GPU count, and set each rank's device "
                   "from LOCAL_RANK (amldist.runtime.init_distributed() does)",
                   field="distribution.process_count_per_instance")


def cuda_oom(log: RankLog, ctx: Context) -> Finding | None:
    line = last_line(log.text, r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")
    if line is None:
        return None
    memory = f" ({ctx.vm_size.gpu_memory_gb} GB per GPU on {ctx.vm_size.name})" if (
        ctx.vm_size is not None and ctx.vm_size.gpu_memory_gb) else ""
    return Finding("cuda-oom", line, f"the GPU ran out of memory{memory}: lower the per-GPU batch size, or pick "
                   "a size with more GPU memory", field="resources.instance_type")


def nccl_sockets(log: RankLog, ctx: Context) -> Finding | None:
    """NCCL using TCP sockets where InfiniBand is there, or told not to use it."""
    disabled = str(ctx.environment.get("NCCL_IB_DISABLE", "")).strip() not in ("", "0")
    ib_size = ctx.vm_size is not None and ctx.vm_size.infiniband
    line = last_line(log.text, r"NET/IB : No device found|NCCL_IB_DISABLE set by environment to 1"
                     r"|Using network Socket|NET/Socket : Using")
    if disabled and (line or ib_size):
        return Finding("nccl-ib-disabled", line or "NCCL_IB_DISABLE is set in the job's environment_variables",
                       "NCCL_IB_DISABLE keeps NCCL off InfiniBand (TCP sockets instead): remove it",
                       field="environment_variables.NCCL_IB_DISABLE")
    if line and ib_size:
        return Finding("nccl-sockets", line, f"NCCL used TCP sockets on {ctx.vm_size.name}, an InfiniBand size: "
                       "the image or its variables hide the InfiniBand devices (NCCL_IB_DISABLE, NCCL_NET, "
                       "NCCL_SOCKET_IFNAME); run with AMLDIST_DEBUG=1 or 'python -m amldist.runtime --check'",
                       field="environment_variables")
    return None


def shared_memory(log: RankLog, ctx: Context) -> Finding | None:
    line = last_line(log.text, r"bus error|insufficient shared memory|unable to write to file </torch_"
                     r"|No space left on device.*shm|/dev/shm")
    if line is None and signal_of(log.exit_code) != signal.SIGBUS:
        return None
    return Finding("bus-error", line or f"{log.label} ended with {signal_text(log.exit_code)}",
                   "a bus error is most often /dev/shm too small for DataLoader workers or NCCL: raise "
                   "resources.shm_size (e.g. 16g), or use fewer DataLoader workers", field="resources.shm_size")


def address_in_use(log: RankLog, ctx: Context) -> Finding | None:
    line = last_line(log.text, r"address already in use|EADDRINUSE|errno: 98\b|\[Errno 98\]")
    if line is None:
        return None
    return Finding("address-in-use", line, "the rendezvous port (MASTER_PORT) is taken on this node: a second "
                   "launcher in the command (torchrun, mpirun, accelerate) or another process binds it. Start "
                   "the script directly, or set another MASTER_PORT", field="environment_variables.MASTER_PORT")


def collective_timeout(log: RankLog, ctx: Context) -> Finding | None:
    """A rank that timed out waiting in a collective (or the rendezvous): it waited for others."""
    line = last_line(log.text, r"Watchdog caught collective operation timeout|Timed out waiting \d+ ?ms for "
                     r"(recv|send) operation|waiting for clients\. \d+/\d+ clients joined|Socket Timeout"
                     r"|collective operation timeout")
    if line is None:
        return None
    return Finding("collective-timeout", line, "this rank timed out in a collective that another rank never "
                   "reached: every rank must call the same collectives in the same order",
                   field="command", consequence=True)


def peer_lost(log: RankLog, ctx: Context) -> Finding | None:
    line = last_line(log.text, r"Connection closed by peer|Connection reset by peer|remote process exited"
                     r"|NCCL communicator was aborted|ProcessGroupNCCL.*(aborted|terminated)|Broken pipe"
                     r"|recvBytes failed|connect\(\) timed out")
    if line is None:
        return None
    return Finding("peer-lost", line, "another rank left the job while this one was talking to it",
                   field=None, consequence=True)


def python_exception(log: RankLog, ctx: Context) -> Finding | None:
    """The last traceback in the log: its last line and the innermost frame of the user's code."""
    at = log.text.rfind(TRACEBACK)  # only the last traceback is read: no need to split the whole log
    if at < 0:
        return None
    lines = lines_of(log.text[log.text.rfind("\n", 0, at) + 1:])
    starts = [i for i, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return None
    frames, message = [], None
    for line in lines[starts[-1] + 1:]:
        if line.lstrip().startswith('File "'):
            frames.append(line.strip())
        elif frames and line and not line[0].isspace():
            message = line.strip()[:MAX_LINE_CHARS]  # a megabyte message is not kept whole, rank after rank
            break
    if message is None:
        return None
    if message.startswith(("KeyboardInterrupt", "SystemExit")) and signal_of(log.exit_code) is not None:
        return None  # a stop signal turned into an exception: the signal says more
    frame = user_frame(frames)
    return Finding("python-exception", message, "the training code raised this" + (" (where: above)" if frame else "")
                   + ": fix the code there, or the arguments the command passes it", field="command", frame=frame)


def user_frame(frames: list[str]) -> str | None:
    """The innermost frame that is the user's (not the standard library, site-packages or amldist)."""
    library = re.compile(r"site-packages|dist-packages|/lib/python\d|<frozen |amldist/runtime/|^File \"<")
    for frame in reversed(frames):
        if not library.search(frame):
            return frame
    return frames[-1] if frames else None


def killed(log: RankLog, ctx: Context) -> Finding | None:
    """SIGKILL (-9 or 137) with nothing else in the log: on a training node almost always the OOM killer."""
    if signal_of(log.exit_code) != signal.SIGKILL:
        return None
    line = last_line(log.text, r"^Killed\b|oom[-_ ]kill|Out of memory: Killed process") or (
        f"{log.label} ended with {signal_text(log.exit_code)}")
    memory = f" of {ctx.vm_size.name}" if ctx.vm_size is not None else ""
    return Finding("oom-killed", line, f"killed by SIGKILL, most often the kernel's OOM killer when the node's "
                   f"memory{memory} runs out (see dmesg on the node): use fewer DataLoader workers or processes "
                   "per node, load less data at once, or pick a size with more memory",
                   field="resources.instance_type")


def stopped(log: RankLog, ctx: Context) -> Finding | None:
    """SIGTERM: the launcher (amldist locally, Azure ML on a node) stops the other ranks after a failure."""
    if signal_of(log.exit_code) not in (signal.SIGTERM, signal.SIGINT):
        return None
    return Finding("stopped", f"{log.label} ended with {signal_text(log.exit_code)}",
                   "stopped by the launcher because another rank failed", consequence=True)


def other_signal(log: RankLog, ctx: Context) -> Finding | None:
    signum = signal_of(log.exit_code)
    if signum is None or signum in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGBUS):
        return None
    line = last_line(log.text, r"Segmentation fault|Fatal Python error|core dumped|Aborted") or (
        f"{log.label} ended with {signal_text(log.exit_code)}")
    return Finding("signal", line, "the process crashed in native code: the log's last lines (and "
                   "PYTHONFAULTHANDLER=1 in environment_variables for a Python stack) say where",
                   field="environment_variables.PYTHONFAULTHANDLER")


def known(entry: KnownLine):
    """The signature function for one line of :mod:`known_lines`."""
    def signature(log: RankLog, ctx: Context) -> Finding | None:
        line = last_line(log.text, entry.pattern, re.IGNORECASE if entry.icase else 0)
        if line is None:
            return None
        return Finding(entry.name, line, entry.hint, field=entry.field, consequence=entry.consequence,
                       scope=entry.scope)
    signature.__name__ = entry.name.replace("-", "_")
    signature.entry = entry
    return signature


# Tried in this order; the first that answers is the rank's finding. Node faults come before what they cause
# (an NCCL error, a traceback); what a rank suffers because of another (consequence) before a Python exception,
# whose traceback it often carries; the exit code alone last.
SIGNATURES = (
    stall, fabric_check, duplicate_gpu, *map(known, known_lines.NODE_FAULTS), cuda_oom,
    *map(known, known_lines.CUDA_LINES + known_lines.NCCL_LINES + known_lines.COLLECTIVE_LINES
         + known_lines.LAUNCH_LINES),
    shared_memory, *map(known, known_lines.HOST_LINES), address_in_use, collective_timeout, peer_lost,
    python_exception, nccl_sockets, killed, stopped, other_signal,
)


def classify(log: RankLog, ctx: Context) -> Finding | None:
    for signature in SIGNATURES:
        found = signature(log, ctx)
        if found is not None:
            return found
    return None


def _register_patterns() -> None:
    """Every signature asks for its patterns once, on empty logs (with the exit codes that make each look), so
    the scanner's RE2 set holds them all before the first real log and scans each log once."""
    for code in (None, -signal.SIGKILL, -signal.SIGSEGV):
        for signature in SIGNATURES:
            signature(RankLog(None, "", None, "", "", code), Context())


_register_patterns()


# The README's table of signatures (tests/diagnosis/test_signature_table.py holds the README to it): the
# functions above say here what they read and what to change; a known line says it in its entry.
FUNCTION_ROWS = {
    "stall": ("`stall`", "amldist's stall watchdog named the stuck rank; its stack says where",
              "`environment_variables.AMLDIST_STALL_TIMEOUT`"),
    "fabric_check": ("`fabric-check`", "amldist's fabric check failed (a slow node, NCCL on sockets)",
                     "`compute` / `environment_variables.NCCL_IB_DISABLE`"),
    "duplicate_gpu": ("`duplicate-gpu`", "NCCL's `Duplicate GPU detected`, with processes per node vs the size's GPUs",
                      "`distribution.process_count_per_instance`"),
    "cuda_oom": ("`cuda-oom`", "`CUDA out of memory` / `OutOfMemoryError`",
                 "`resources.instance_type` (or a smaller batch)"),
    "shared_memory": ("`bus-error`", "`Bus error`, DataLoader's shared-memory message, SIGBUS (`-7`, `135`)",
                      "`resources.shm_size`"),
    "address_in_use": ("`address-in-use`", "`Address already in use` / `EADDRINUSE` (a second launcher, a stray "
                       "server)", "`environment_variables.MASTER_PORT`"),
    "collective_timeout": ("`collective-timeout`", "ProcessGroupNCCL's `Watchdog caught collective operation "
                           "timeout`, gloo's `Timed out waiting ... for recv operation`, a rendezvous timeout",
                           "none here: it waited for another rank (see `never-joined`)"),
    "peer_lost": ("`peer-lost`", "`Connection closed by peer`, `NCCL communicator was aborted`, `Broken pipe`",
                  "none here: another rank left first"),
    "python_exception": ("`python-exception`", "the last traceback's last line, and the innermost frame of your code",
                         "`command` (your code)"),
    "nccl_sockets": ("`nccl-sockets` / `nccl-ib-disabled`", "`NET/Socket : Using` on an InfiniBand size, or "
                     "`NCCL_IB_DISABLE` set (a note beside any cause)", "`environment_variables.NCCL_IB_DISABLE`"),
    "killed": ("`oom-killed`", "SIGKILL (`-9`, `137`), `Killed`: the kernel's OOM killer",
               "`resources.instance_type` (or fewer workers)"),
    "stopped": ("`stopped`", "SIGTERM/SIGINT from the launcher after another rank failed",
                "none here: another rank failed first"),
    "other_signal": ("`signal`", "another signal (SIGSEGV, SIGABRT...)", "`environment_variables.PYTHONFAULTHANDLER`"),
}
# What the analysis concludes across ranks (amldist/diagnosis/analysis.py) rather than from one log.
ANALYSIS_ROWS = (
    ("`collective-mismatch`", "(across ranks) the ranks' Flight Recorder dumps (or NCCL's `WorkNCCL(SeqNum=..., "
     "OpType=...)` lines) differ at one sequence number: the minority is named", "`command`"),
    ("`collective-behind` / `collective-ahead`", "a rank's last collective is before (it never entered) or after (an "
     "extra one) the others'", "`command`"),
    ("`injected-preempt` / `injected-kill` / `injected-hang`", "the fault drill (`--inject`) struck the run: the "
     "fault is the cause, never the script", "none: a drill (`--retry N` resubmits)"),
    ("`never-joined`", "ranks timed out in a collective: the ranks without the timeout never joined it", "`command`"),
    ("`left-early`", "a rank ended (even with 0) while the others still waited for it", "`command`"),
    ("`hung`", "every rank was stopped by the launcher (limits.timeout, a cancel) and none failed by itself",
     "`environment_variables.AMLDIST_STALL_TIMEOUT`"),
    ("`canceled`", "every rank was stopped and the job was canceled", "none: it was stopped by its user"),
)


def known_row(entry: KnownLine) -> tuple[str, str, str]:
    if entry.scope == "node":
        fix = "`compute`: resubmit off the node (named with its host)"
    elif entry.field is not None:
        fix = f"`{entry.field}`" + (" (after the cause)" if entry.consequence else "")
    else:
        fix = "none here: " + entry.hint.split(":")[0]
    return f"`{entry.name}`", entry.says, fix


def table_rows() -> list[tuple[str, str, str]]:
    """Every signature, in the order they are tried, then the analysis's own conclusions."""
    rows = [known_row(s.entry) if hasattr(s, "entry") else FUNCTION_ROWS[s.__name__] for s in SIGNATURES]
    return rows + list(ANALYSIS_ROWS)


def markdown_table() -> str:
    lines = ["| signature | what the log or exit code says | spec field to change, or what to do |",
             "| --- | --- | --- |"]
    lines += [f"| {name} | {says} | {fix} |" for name, says, fix in table_rows()]
    return "\n".join(lines)
