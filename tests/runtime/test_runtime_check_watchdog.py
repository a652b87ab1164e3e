"""The fabric check (``python -m amldist.runtime --check``) and the stall watchdog: pure parts, then
real 2 x 2 local jobs (four processes, a gloo group) through the local backend."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from amldist.runtime.check import bus_bandwidth, judge, transport_from_log
from amldist.runtime.dist_env import DistEnvError
from amldist.runtime.watchdog import in_collective, stall_timeout
from tests.conftest import skip_module_without, wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_bus_bandwidth_is_nccl_tests_definition():
    busbw, algbw = bus_bandwidth(8 * 10**9, 1.0, 8)  # 8 GB in 1 s over 8 ranks
    assert algbw == pytest.approx(8.0)
    assert busbw == pytest.approx(8.0 * 2 * 7 / 8)
    assert bus_bandwidth(10**9, 1.0, 1)[0] == 0.0  # a world of one moves nothing


@pytest.mark.parametrize("text, expected", [
    ("n0:12:12 [0] NCCL INFO NET/IB : Using [0]mlx5_ib0:1/IB [1]mlx5_ib1:1/IB ; OOB eth0:10.0.0.4<0>", "IB"),
    ("n0:12:12 [0] NCCL INFO Using network IB", "IB"),
    ("n0:12:12 [0] NCCL INFO NET/IB : No device found.\nn0:12:12 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>\n"
     "n0:12:12 [0] NCCL INFO Using network Socket", "Socket"),
    ("nothing about the network", None),
])
def test_the_transport_is_read_from_nccls_info_log(text, expected):
    assert transport_from_log(text) == expected


def result(**kw) -> dict:
    base = {"backend": "nccl", "world": 16, "nodes": 2, "per_node": 8, "device": "cuda:0", "nbytes": 256 << 20,
            "seconds": 0.002, "busbw": 170.0, "algbw": 90.0, "node_busbw": {0: 220.0, 1: 225.0},
            "transports": {0: "IB", 1: "IB"}, "elapsed": 2.0}
    return {**base, **kw}


IB_SIZE = {"AMLDIST_VM_SIZE": "Standard_ND96asr_v4", "AMLDIST_VM_INFINIBAND": "1",
           "AMLDIST_EXPECTED_BUSBW_GBS": "180"}


def test_a_healthy_ib_job_passes_and_reports_the_expectation():
    lines, failures = judge(result(), IB_SIZE)
    assert failures == []
    assert any("expected across nodes on Standard_ND96asr_v4: about 180 GB/s" in line for line in lines)


def test_sockets_on_an_infiniband_size_fail_naming_the_variable():
    lines, failures = judge(result(transports={0: "IB", 1: "Socket"}), {**IB_SIZE, "NCCL_IB_DISABLE": "1"})
    assert "transport: node 0 IB, node 1 Socket" in lines
    assert any(f.startswith("node 1: NCCL used TCP sockets on Standard_ND96asr_v4") and "NCCL_IB_DISABLE=1" in f
               for f in failures)


def test_a_node_far_below_the_rest_fails_naming_it():
    _, failures = judge(result(nodes=3, node_busbw={0: 220.0, 1: 60.0, 2: 218.0}), IB_SIZE)
    assert len(failures) == 1 and failures[0].startswith("node 1: 60.00 GB/s")


def test_bandwidth_far_below_the_size_fails():
    _, failures = judge(result(busbw=40.0), IB_SIZE)
    assert any("under half of the 180 GB/s Standard_ND96asr_v4 should give" in f for f in failures)


def test_on_cpu_there_is_nothing_to_compare_against():
    lines, failures = judge(result(backend="gloo", device="cpu", transports={0: "TCP (gloo)", 1: "TCP (gloo)"},
                                   node_busbw={0: 1.5, 1: 0.2}), {})
    assert failures == []  # the "nodes" of a local run share one machine
    assert any("nothing to compare against" in line for line in lines)


def test_stall_timeout_comes_from_the_argument_or_the_variable():
    assert stall_timeout(None, {}) is None
    assert stall_timeout(None, {"AMLDIST_STALL_TIMEOUT": "0"}) is None
    assert stall_timeout(None, {"AMLDIST_STALL_TIMEOUT": " 90 "}) == 90.0
    assert stall_timeout(5, {"AMLDIST_STALL_TIMEOUT": "90"}) == 5.0
    with pytest.raises(DistEnvError, match="AMLDIST_STALL_TIMEOUT='soon' is not a number"):
        stall_timeout(None, {"AMLDIST_STALL_TIMEOUT": "soon"})
    with pytest.raises(DistEnvError, match="must be a positive number"):
        stall_timeout(-3, {})


def test_a_frame_inside_torch_distributed_is_waiting_in_a_collective():
    assert not in_collective(sys._getframe())
    namespace = {}
    code = compile("def all_reduce(f):\n    return f()\n", "/x/torch/distributed/distributed_c10d.py", "exec")
    exec(code, namespace)
    assert namespace["all_reduce"](lambda: in_collective(sys._getframe()))


def test_a_bare_import_loads_neither_check_watchdog_nor_frameworks():
    import os
    import subprocess

    code = ("import sys, amldist.runtime as r\n"
            "print([m for m in ('check', 'watchdog', 'frameworks') if 'amldist.runtime.' + m in sys.modules])\n"
            "from amldist.runtime import progress\nprogress()\nprint(progress is sys.modules['amldist.runtime.watchdog'].progress)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]


# --- real jobs ---------------------------------------------------------------------------------
skip_module_without("torch", reason="the ranks form a gloo group")

from amldist.backends.submit import run_local  # noqa: E402


def job(folder: Path, command: str, env: dict, *, timeout: int = 120, per_node: int = 2) -> Path:
    (folder / "src").mkdir(parents=True, exist_ok=True)
    variables = "".join(f"\n  {k}: {json.dumps(v)}" for k, v in env.items()) or " {}"
    path = folder / "job.yml"
    path.write_text(textwrap.dedent(f"""\
        type: command
        code: src
        command: {command}
        environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
        distribution:
          type: pytorch
          process_count_per_instance: {per_node}
        resources:
          instance_count: 2
        limits:
          timeout: {timeout}
        """) + f"environment_variables:{variables}\n")
    return path


def test_check_inside_a_2x2_local_job_prints_world_and_bandwidth(tmp_path):
    path = job(tmp_path, "python -m amldist.runtime --check", {})
    record = run_local(str(path), name="check", run_root=str(tmp_path / "runs"), status_line=False)
    assert record.status == "Completed"
    report = (tmp_path / "runs/check/user_logs/std_log_process_00.txt").read_text()
    assert "amldist.runtime: check: backend gloo, world 4 (2 node(s) x 2), device cpu" in report
    bandwidth = re.search(r"over the world: bus bandwidth ([\d.]+) GB/s", report)
    assert bandwidth and float(bandwidth.group(1)) > 0
    assert re.search(r"node 0 [\d.]+ GB/s, node 1 [\d.]+ GB/s", report)
    assert "nothing to compare against" in report
    seconds = float(re.search(r"ok \(measured in ([\d.]+) s\)", report).group(1))
    assert seconds < 10  # a few seconds (on a shared 2-core machine), not minutes
    others = (tmp_path / "runs/check/user_logs/std_log_process_01.txt").read_text()
    assert "amldist.runtime: check:" not in others  # rank 0 reports


HANG = textwrap.dedent("""\
    import os, time
    import torch
    import torch.distributed as dist
    from amldist.runtime import init_distributed

    init_distributed()  # AMLDIST_STALL_TIMEOUT comes from the job's environment_variables
    t = torch.ones(4)
    dist.all_reduce(t)
    if int(os.environ["RANK"]) == 1:
        time.sleep(600)  # stuck outside any collective
    dist.all_reduce(t)
""")


def test_a_rank_hanging_outside_any_collective_is_named_with_every_ranks_stack(cli, capsys, tmp_path):
    # 2 nodes of 1 (every rank's stack, across nodes): 2 torch processes, not 4, on a 2-core machine
    path = job(tmp_path, "python hang.py", {"AMLDIST_STALL_TIMEOUT": "3"}, timeout=120, per_node=1)
    (tmp_path / "src" / "hang.py").write_text(HANG)
    started = time.monotonic()
    record = run_local(str(path), name="hang", run_root=str(tmp_path / "runs"), grace_seconds=2.0,
                       status_line=False)
    assert record.status == "Failed"
    assert time.monotonic() - started < 60  # well before limits.timeout (120 s)
    logs = sorted((tmp_path / "runs/hang/user_logs").glob("std_log_process_*.txt"))
    for log in logs:
        text = log.read_text()
        assert "amldist.runtime: stall: rank 1 " in text, log.name
        assert re.search(r"(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\)", text), log.name
    assert len(logs) == 2 and 'hang.py", line 10 in <module>' in logs[1].read_text()  # the stuck rank's own stack
    capsys.readouterr()
    code, out, err = cli("job", "diagnose", "hang", "--run-root", str(tmp_path / "runs"), "--format", "json")
    first = json.loads(out)["first_failure"]
    assert code == 0
    assert (first["rank"], first["node"], first["signature"]) == (1, 1, "stall")
    assert first["exit_code"] == 124  # STALL_EXIT_CODE, as the README's example shows
    assert first["frame"].endswith('hang.py", line 10 in <module>')
    assert first["field"] == "environment_variables.AMLDIST_STALL_TIMEOUT"


def test_neither_runs_unless_asked(tmp_path):
    import os
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AMLDIST_", "OMPI_", "SLURM_", "PMI"))}
    env.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONPATH=str(ROOT))
    code = ("import sys, threading\nfrom amldist.runtime import destroy, init_distributed\ninit_distributed()\n"
            "print(sorted(m for m in sys.modules if m.startswith('amldist.runtime.check')),"
            " [t.name for t in threading.enumerate() if t.name.startswith('amldist')])\ndestroy()\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"


def test_check_takes_no_command(tmp_path):
    from amldist.runtime.__main__ import main

    assert main(["--check", "--", "python", "x.py"]) == 2
    assert main(["--check", "--print"]) == 2


def test_a_world_of_one_has_no_bandwidth_to_measure():
    lines, failures = judge(result(backend="gloo", world=1, nodes=1, per_node=1, busbw=0.0, node_busbw={}), {})
    assert failures == [] and "crosses no link" in lines[1]


def test_the_nccl_probe_respects_the_users_nccl_debug_and_is_forgotten_after():
    from amldist.runtime.check import forget_probe, probe_transport

    mine = {"NCCL_DEBUG": "WARN"}
    assert probe_transport(mine) is None and mine == {"NCCL_DEBUG": "WARN"}
    environ = {"PATH": "/bin"}
    pattern = probe_transport(environ)
    assert environ["NCCL_DEBUG"] == "INFO" and environ["NCCL_DEBUG_FILE"] == pattern and "%h.%p" in pattern
    forget_probe(environ)
    assert environ == {"PATH": "/bin"}


GIL_HELD = textwrap.dedent("""\
    import datetime, re, sys
    from torch.distributed import TCPStore
    from amldist.runtime.watchdog import Watchdog

    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=datetime.timedelta(seconds=30))
    Watchdog(0, 1, store, 1.0, interval=0.2).start()
    print("stuck", flush=True)
    re.match(r"(a+)+$", "a" * 64 + "b")  # catastrophic backtracking: C code that never releases the GIL
""")


STACK = re.compile(r"File \".*gil\.py\", line 8 in <module>")  # the main thread's frame, in the dump


def test_a_main_thread_holding_the_gil_still_gets_its_stack_written(tmp_path):
    import subprocess

    script = tmp_path / "gil.py"
    script.write_text(GIL_HELD)
    out_file, err_file = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out_file, "w") as out, open(err_file, "w") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=err,
                                text=True, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    try:
        # torch's import first (a minute on a machine busy with other ranks), then the 1 s timeout and
        # faulthandler's margin (1 + 5 x 0.2 s)
        assert wait_until(lambda: "stuck" in out_file.read_text(), 120, every=0.2)
        wait_until(lambda: STACK.search(err_file.read_text()), 60, every=0.2)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert STACK.search(err_file.read_text()), err_file.read_text()[-2000:]
