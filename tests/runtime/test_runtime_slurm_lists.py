"""Slurm's compressed host and task-count lists, read without expanding them."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amldist.runtime import DistEnvError
from amldist.runtime.env_reader import MAX_INT
from amldist.runtime.slurm_lists import MAX_HOSTS, HostList, TaskCounts, expand_counts, expand_hostlist


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


@pytest.mark.parametrize("text", ["gpu[1-", "gpu]1[", "a[1-2", "a[[1]]", "a[x-3]", "a[3-1]", "a[1-b]", "a[]", "a]b",
                                  "a[1-\u0663]", "a[\u00b2]", "a[0-" + "9" * 19 + "]"])
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


@pytest.mark.parametrize("text", ["", "x", "4(2)", "4(x)", "-1", "4(x2)2", "4,,2", "\uff14", "4(x" + "9" * 5000 + ")"])
def test_malformed_counts(text):
    with pytest.raises(DistEnvError, match="SLURM_TASKS_PER_NODE"):
        expand_counts(text)


# --- read without expanding: count and first host agree with the expansion --------------------

ranges = st.lists(st.tuples(st.integers(0, 120), st.integers(0, 4), st.integers(1, 3)), min_size=1, max_size=3)
patterns = st.lists(st.tuples(st.sampled_from(["n", "gpu-", "r", "10.0.0."]), st.lists(ranges, max_size=2),
                              st.sampled_from(["", "-ib", "x"])), min_size=1, max_size=3)


def as_text(structure) -> tuple[str, list[str]]:
    """The host list text for ``structure`` and, computed independently, the hosts it names."""
    texts, hosts = [], []
    for prefix, groups, suffix in structure:
        bodies = [",".join(f"{str(low).zfill(width)}-{str(low + span).zfill(width)}" for low, span, width in group)
                  for group in groups]
        texts.append(prefix + "".join(f"[{body}]" for body in bodies) + suffix)
        choices = [[str(n).zfill(width) for low, span, width in group for n in range(low, low + span + 1)]
                   for group in groups]
        hosts += [prefix + "".join(combination) + suffix for combination in itertools.product(*choices)]
    return ",".join(texts), hosts


@settings(max_examples=200, deadline=None)
@given(patterns)
def test_count_first_and_expansion_agree(structure):
    text, hosts = as_text(structure)
    parsed = HostList(text)
    assert (parsed.count, parsed.first) == (len(hosts), hosts[0])
    assert expand_hostlist(text) == hosts


def test_a_list_longer_than_the_limit_is_refused_before_expanding():
    with pytest.raises(DistEnvError, match=r"more than 10 hosts"):
        HostList("n[1-6],m[1-5]", limit=10)
    assert HostList("n[1-6],m[1-4]", limit=10).count == 10
    with pytest.raises(DistEnvError, match=rf"more than {MAX_HOSTS} hosts"):
        HostList("n[0-99][0-99][0-99][0-99]")


def test_task_counts_are_found_without_expanding():
    counts = TaskCounts("4(x2000000000),2", limit=MAX_INT)
    assert (counts.for_node(0), counts.for_node(1_999_999_999), counts.for_node(2_000_000_000)) == (4, 4, 2)
    assert counts.for_node(2_000_000_001) is None
    with pytest.raises(DistEnvError, match=rf"more than {MAX_HOSTS} nodes"):
        TaskCounts("4(x2000000000),2")
