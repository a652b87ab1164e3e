"""Slurm's compressed host and task-count lists."""

from __future__ import annotations

import pytest

from amldist.runtime import DistEnvError
from amldist.runtime.slurm_lists import expand_counts, expand_hostlist


@pytest.mark.parametrize("text, hosts", [
    ("node1", ["node1"]),
    ("a,b,c", ["a", "b", "c"]),
    ("gpu[001-004,007],cpu05", ["gpu001", "gpu002", "gpu003", "gpu004", "gpu007", "cpu05"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("n[08-11]", ["n08", "n09", "n10", "n11"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
    ("rack[1-2]-node[01,03]", ["rack1-node01", "rack1-node03", "rack2-node01", "rack2-node03"]),
    ("x[5],y[1-2]z", ["x5", "y1z", "y2z"]),
    ("host-1.example.com,host-2.example.com", ["host-1.example.com", "host-2.example.com"]),
    ("10.0.0.[4-5]", ["10.0.0.4", "10.0.0.5"]),
    ("a, b", ["a", "b"]),
])
def test_expand_hostlist(text, hosts):
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[1-", "gpu]1[", "a[1-2", "a[[1]]", "a[x-3]", "a[3-1]", "a[1-b]", "a[]", "a]b"])
def test_malformed_hostlist(text):
    with pytest.raises(DistEnvError, match="SLURM_JOB_NODELIST"):
        expand_hostlist(text, "SLURM_JOB_NODELIST")


@pytest.mark.parametrize("text, counts", [
    ("4", [4]),
    ("4(x2)", [4, 4]),
    ("4(x2),2", [4, 4, 2]),
    ("2,1", [2, 1]),
    ("1(x3),8(x1)", [1, 1, 1, 8]),
])
def test_expand_counts(text, counts):
    assert expand_counts(text) == counts


@pytest.mark.parametrize("text", ["", "x", "4(2)", "4(x)", "-1", "4(x2)2", "4,,2"])
def test_malformed_counts(text):
    with pytest.raises(DistEnvError, match="SLURM_TASKS_PER_NODE"):
        expand_counts(text)
