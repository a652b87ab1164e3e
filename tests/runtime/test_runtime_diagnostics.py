"""AMLDIST_DEBUG diagnostics: what they show, the traps they warn about, who prints them."""

from __future__ import annotations

import io
import sys

import pytest

from amldist.runtime import DistEnv
from amldist.runtime.diagnostics import diagnose, report, visible_gpu_count, wanted

RANK0_OF_8 = DistEnv("openmpi", 0, 0, 8, 4, 0, 2, "10.0.0.4", 6105)


def warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("WARNING")]


def test_shows_launcher_ranks_gpus_infiniband_and_nccl_variables():
    lines = diagnose(RANK0_OF_8, {"NCCL_SOCKET_IFNAME": "eth0", "UCX_TLS": "tcp", "CUDA_VISIBLE_DEVICES": "0,1,2,3"},
                     gpu_count=4, infiniband=True)
    text = "\n".join(lines)
    assert "launcher=openmpi rank=0/8 local_rank=0/4 node=0/2 master=10.0.0.4:6105" in text
    assert "visible GPUs: 4 (CUDA_VISIBLE_DEVICES=0,1,2,3)" in text
    assert "/dev/infiniband: present" in text
    for expected in ("NCCL_IB_DISABLE=<unset>", "NCCL_SOCKET_IFNAME=eth0", "NCCL_TOPO_FILE=<unset>",
                     "NCCL_GRAPH_FILE=<unset>", "UCX_TLS=tcp"):
        assert expected in lines
    assert warnings(lines) == []


def test_warns_when_infiniband_is_disabled_where_present():
    assert any("NCCL_IB_DISABLE" in w for w in warnings(diagnose(RANK0_OF_8, {"NCCL_IB_DISABLE": "1"}, 4, True)))
    assert warnings(diagnose(RANK0_OF_8, {"NCCL_IB_DISABLE": "1"}, 4, False)) == []
    assert warnings(diagnose(RANK0_OF_8, {"NCCL_IB_DISABLE": "0"}, 4, True)) == []


@pytest.mark.parametrize("gpus, warned", [(1, True), (2, True), (4, False), (8, False)])
def test_warns_about_graph_file_below_four_gpus(gpus, warned):
    env = DistEnv("pytorch", 0, 0, gpus, gpus, 0, 1, "h", 1)
    lines = diagnose(env, {"NCCL_GRAPH_FILE": "/opt/topo.xml"}, gpus, False)
    found = [w for w in warnings(lines) if "NCCL_GRAPH_FILE" in w]
    assert bool(found) == warned


def test_warns_about_one_process_on_a_multi_gpu_node():
    env = DistEnv("openmpi", 0, 0, 2, 1, 0, 2, "h", 1)
    assert any("one process on a node with 4 GPUs" in w for w in warnings(diagnose(env, {}, 4, False)))


def test_warns_about_more_processes_than_gpus():
    env = DistEnv("pytorch", 0, 0, 8, 8, 0, 1, "h", 1)
    assert any("Duplicate GPU" in w for w in warnings(diagnose(env, {}, 4, False)))


@pytest.mark.parametrize("environ, flag, expected", [
    ({}, None, False), ({"AMLDIST_DEBUG": "1"}, None, True), ({"AMLDIST_DEBUG": "true"}, None, True),
    ({"AMLDIST_DEBUG": "0"}, None, False), ({"AMLDIST_DEBUG": "1"}, False, False), ({}, True, True),
])
def test_wanted(environ, flag, expected):
    assert wanted(environ, flag) is expected


def test_report_prints_once_and_only_on_rank_zero():
    stream = io.StringIO()
    rank1 = DistEnv("openmpi", 1, 1, 8, 4, 0, 2, "h", 1)
    assert report(rank1, {"AMLDIST_DEBUG": "1"}, stream=stream) is False
    assert report(RANK0_OF_8, {"AMLDIST_DEBUG": "1"}, stream=stream) is True
    assert report(RANK0_OF_8, {"AMLDIST_DEBUG": "1"}, stream=stream) is False
    assert stream.getvalue().count("launcher=openmpi") == 1
    assert all(line.startswith("amldist.runtime: ") for line in stream.getvalue().splitlines())


@pytest.mark.parametrize("visible, count", [("0,1,2", 3), ("3", 1), ("", 0), ("-1", 0), ("NoDevFiles", 0)])
def test_visible_gpu_count_from_cuda_visible_devices(monkeypatch, visible, count):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert visible_gpu_count({"CUDA_VISIBLE_DEVICES": visible}) == count


def test_visible_gpu_count_from_device_files(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (tmp_path / name).touch()
    assert visible_gpu_count({}, dev=str(tmp_path)) == 2


def test_odd_values_are_shown_on_one_line_and_cut():
    lines = diagnose(RANK0_OF_8, {"NCCL_SOCKET_IFNAME": "eth0\nWARNING fake", "UCX_TLS": "x" * 10_000,
                                  "CUDA_VISIBLE_DEVICES": "0\x00"}, gpu_count=1, infiniband=False)
    assert "NCCL_SOCKET_IFNAME=eth0\\nWARNING fake" in lines
    assert "visible GPUs: 1 (CUDA_VISIBLE_DEVICES=0\\x00)" in lines
    assert [line for line in lines if line.startswith("UCX_TLS=")] == [f"UCX_TLS={'x' * 200}... (10000 characters)"]
    assert all("\n" not in line for line in lines)
