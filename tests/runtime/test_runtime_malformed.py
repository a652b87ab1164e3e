"""Malformed values, whatever they are, end in one DistEnvError line (exit 2 from ``python -m
amldist.runtime``): never another exception, never a hang, never unbounded memory.

The named cases are the ones that once gave tracebacks or hung; the hypothesis properties fuzz
every variable the runtime reads (the list is checked against the package's source)."""

from __future__ import annotations

import ast
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from amldist.runtime import RUNTIME_DIR, DistEnvError, detect
from amldist.runtime.__main__ import main
from amldist.runtime.env_reader import MAX_INT, is_host
from tests.conftest import budget

OMPI = dict(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="4", OMPI_COMM_WORLD_LOCAL_RANK="1",
            OMPI_COMM_WORLD_LOCAL_SIZE="2", AZ_BATCH_MASTER_NODE="10.0.0.4:6000")
SLURM = dict(SLURM_PROCID="0", SLURM_NTASKS="1", SLURM_LOCALID="0", SLURM_NODEID="0", SLURM_NNODES="1",
             SLURM_TASKS_PER_NODE="1", SLURM_NODELIST="n1")
PYTORCH = dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", MASTER_ADDR="h", MASTER_PORT="5000")
TORCHRUN = dict(PYTORCH, TORCHELASTIC_RUN_ID="r", LOCAL_WORLD_SIZE="2")
TF = dict(TF_CONFIG=json.dumps({"cluster": {"worker": ["a:2222", "b:2222"]}, "task": {"type": "worker", "index": 1}}))
MVAPICH = dict(MV2_COMM_WORLD_RANK="0", MV2_COMM_WORLD_SIZE="1", MV2_COMM_WORLD_LOCAL_RANK="0",
               MV2_COMM_WORLD_LOCAL_SIZE="1")
PMI = dict(PMI_RANK="0", PMI_SIZE="1", MPI_LOCALRANKID="0", MPI_LOCALNRANKS="1")
VALID = [OMPI, SLURM, PYTORCH, TORCHRUN, TF, MVAPICH, PMI, {}]

HUGE = "1" * 5000  # past Python's 4,300-digit int conversion limit
NESTED = "[" * 50_000 + "]" * 50_000  # deeper than json's recursion allows; under Linux's 128 KiB per variable


def one_line_error(environ: dict) -> str:
    """detect()'s DistEnvError message, checked to be one short line; within a time bound."""
    started = time.monotonic()
    with pytest.raises(DistEnvError) as caught:
        detect(environ)
    assert time.monotonic() - started < 5, "took too long: something is expanded"
    message = str(caught.value)
    assert "\n" not in message and len(message) < 600, message
    return message


NAMED = {
    "5000-digit rank": (dict(PYTORCH, RANK=HUGE), "RANK='1111"),
    "5000-digit MPI size": (dict(OMPI, OMPI_COMM_WORLD_SIZE=HUGE), "OMPI_COMM_WORLD_SIZE="),
    "5000-digit MASTER_PORT": (dict(PYTORCH, MASTER_PORT=HUGE), "MASTER_PORT="),
    "rank past a C int": (dict(PYTORCH, RANK=str(2**31), WORLD_SIZE=str(2**31 + 1)), str(MAX_INT)),
    "5000-digit RANK beside MPI": (dict(OMPI, RANK=HUGE), "RANK="),
    "deeply nested TF_CONFIG": (dict(TF_CONFIG=NESTED), "nested too deep"),
    "TF_CONFIG number past the int limit": (dict(TF_CONFIG='{"cluster": {}, "task": {"index": ' + HUGE + "}}"),
                                            "TF_CONFIG is not valid JSON"),
    "TF_CONFIG index past a C int": (dict(TF_CONFIG=json.dumps({"cluster": {"worker": ["a:1"]},
                                                                "task": {"type": "worker", "index": 2**40}})),
                                     '"index"'),
    "TF_CONFIG port of 5000 digits": (dict(TF_CONFIG=json.dumps({"cluster": {"worker": ["a:" + HUGE]},
                                                                 "task": {"type": "worker", "index": 0}})),
                                      "not a TCP port"),
    "TF_CONFIG host with a NUL": (dict(TF_CONFIG=json.dumps({"cluster": {"worker": ["a\0b:1"]},
                                                             "task": {"type": "worker", "index": 0}})),
                                  "not a host name"),
    "TF_CONFIG host a lone surrogate": (dict(TF_CONFIG='{"cluster": {"worker": ["\\ud800:1"]}, '
                                                       '"task": {"type": "worker", "index": 0}}'), "not a host name"),
    "SLURM_TASKS_PER_NODE=4(x9999999999)": (dict(SLURM, SLURM_TASKS_PER_NODE="4(x9999999999)"),
                                            "SLURM_TASKS_PER_NODE='4(x9999999999)'"),
    "SLURM_TASKS_PER_NODE of a million nodes and one": (dict(SLURM, SLURM_TASKS_PER_NODE="1(x1000001)"),
                                                        "more than 1000000 nodes"),
    "4 GB host list": (dict(SLURM, SLURM_NODELIST="n[0-99][0-99][0-99][0-99]"), "more than 1000000 hosts"),
    "host list range of 10**18": (dict(SLURM, SLURM_NODELIST="n[0-999999999999999999]"), "more than"),
    "host list number of 5000 digits": (dict(SLURM, SLURM_NODELIST=f"n[0-{HUGE}]"), "more than 18 digits"),
    "host list of 10,000 bracket groups": (dict(SLURM, SLURM_NODELIST="n[1]" * 10_000, SLURM_NNODES=""),
                                           "SLURM_NODELIST="),
    "host list unicode digits": (dict(SLURM, SLURM_NODELIST="n[1-\u0663]"), "bad range"),
    "MASTER_ADDR with a blank": (dict(PYTORCH, MASTER_ADDR="a b"), "MASTER_ADDR='a b' is not a host"),
    "MASTER_ADDR with a control character": (dict(PYTORCH, MASTER_ADDR="a\x01b"), "MASTER_ADDR="),
    "MASTER_ADDR of 100,000 characters": (dict(PYTORCH, MASTER_ADDR="a" * 100_000), "(100000 characters)"),
    "AZ_BATCH_MASTER_NODE port of 5000 digits": (dict(OMPI, AZ_BATCH_MASTER_NODE="10.0.0.4:" + HUGE),
                                                 "AZ_BATCH_MASTER_NODE"),
    "more nodes than processes": (dict(SLURM, SLURM_NNODES="", SLURM_NODELIST="n[1-3]"), "must not exceed SLURM_NTASKS"),
}


@pytest.mark.parametrize("environ, expected", NAMED.values(), ids=NAMED.keys())
def test_named_malformed_values_give_one_line(environ, expected):
    message = one_line_error(environ)
    assert expected in message, message


def test_a_long_host_list_is_read_without_expanding_it():
    """A million hosts, each named by 100,000 characters of prefix, would be 100 GB expanded."""
    started = time.monotonic()
    env = detect(dict(SLURM, SLURM_NTASKS="1000000", SLURM_NNODES="", SLURM_TASKS_PER_NODE="1(x1000000)",
                      SLURM_NODELIST="p" * 100_000 + "[000000-999999]", MASTER_ADDR="m"))
    assert time.monotonic() - started < 5
    assert (env.num_nodes, env.world_size, env.local_world_size) == (1_000_000, 1_000_000, 1)


# --- through the real ``python -m amldist.runtime``, memory capped -------------------------------

MEMORY_CAP = 1 << 30  # address space: Python's start-up needs well under this; a 4 GB expansion does not fit


def run_module(args: list[str], environ: dict, **kwargs) -> subprocess.CompletedProcess:
    """``environ`` is ``base_env`` and more: amldist importable, no launcher variables of this machine."""
    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    streams = kwargs or dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "amldist.runtime", *args], env=environ, text=True, timeout=60,
                          preexec_fn=cap_memory, check=False, **streams)


@pytest.mark.parametrize("name", ["5000-digit rank", "deeply nested TF_CONFIG", "SLURM_TASKS_PER_NODE=4(x9999999999)",
                                  "4 GB host list", "host list of 10,000 bracket groups"])
def test_module_exits_2_with_one_line(name, base_env):
    environ, expected = NAMED[name]
    result = run_module(["--print"], {**base_env, **environ})
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    assert re.fullmatch(r"amldist\.runtime: error: [^\n]+\n", result.stderr), result.stderr[-2000:]
    assert expected in result.stderr


def test_exec_mode_refuses_a_malformed_value_without_running(base_env, tmp_path):
    marker = tmp_path / "ran"
    result = run_module(["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                        {**base_env, **SLURM, "SLURM_NODELIST": "n[0-99][0-99][0-99][0-99]"})
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert not marker.exists()


def test_print_into_a_closed_pipe_ends_quietly(base_env):
    """``--print | head -c0``: the reader is gone before the line is written. SIGPIPE ends the
    process as it ends ``cat``: no traceback, nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = run_module(["--print"], base_env, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert result.returncode == -signal.SIGPIPE
    assert result.stderr == ""


def test_print_into_a_closed_pipe_in_process_returns_1_without_a_traceback(clean_os_environ, monkeypatch):
    """Where SIGPIPE stays ignored (main() called from Python), the BrokenPipeError is caught."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    saved = os.dup(1)
    stream = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        assert main(["--print"]) == 1
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        stream.close()  # the write end now points at /dev/null: closing flushes nothing harmful


def test_print_into_a_full_device_is_one_line_and_exit_1(base_env):
    """``--print > /dev/full``: ENOSPC is one ``amldist.runtime: error:`` line, exit 1, no traceback."""
    with open("/dev/full", "w") as full:
        result = run_module(["--print"], base_env, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 1
    assert result.stderr == "amldist.runtime: error: cannot write to standard output: No space left on device\n"


# --- fuzzing every variable the runtime reads -----------------------------------------------------

NOT_VARIABLES = {"SIGPIPE", "SIGXFSZ"}  # names in the source that are not environment variables


def variables_in_source() -> set[str]:
    """Every string constant in the package that is an environment variable name."""
    names = set()
    for path in RUNTIME_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+",
                                                                                                  node.value):
                names.add(node.value)
    return names - NOT_VARIABLES


VARIABLES = sorted(variables_in_source())


def test_the_fuzzed_variables_are_the_ones_the_runtime_reads():
    """A guard for the fuzzing below: it draws from VARIABLES, so a variable added to the
    runtime is fuzzed too; and the list is not trivially small."""
    expected = {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_TASKS_PER_NODE", "SLURM_JOB_NODELIST",
                "TF_CONFIG", "MASTER_IP", "AZ_BATCH_MASTER_NODE", "AZ_BATCHAI_MPI_MASTER_NODE", "AZUREML_NODE_COUNT",
                "GROUP_RANK", "TORCHELASTIC_RUN_ID", "AMLDIST_DEBUG", "CUDA_VISIBLE_DEVICES"}
    assert expected <= set(VARIABLES), expected - set(VARIABLES)


any_text = st.text(st.characters(blacklist_categories=()), max_size=40)  # NULs, controls, lone surrogates
numbers = st.one_of(
    st.integers(-5, 70_000).map(str),
    st.sampled_from([10, 11, 4300, 4301, 6000]).map(lambda n: "9" * n),  # past 2**31, past the int conversion limit
    st.sampled_from(["", " ", "0", " 3 ", "-0", "+1", "1.0", "1e3", "0x10", "\u0663", "\u00b2", "\uff14",
                     "0" * 5000 + "1", str(MAX_INT), str(MAX_INT + 1)]),
)
hostlists = st.lists(
    st.tuples(st.sampled_from(["n", "gpu-", "10.0.0.", "", "a" * 300]),
              st.lists(st.tuples(st.integers(0, 10**20), st.integers(0, 10**6), st.integers(0, 4)), max_size=3)),
    max_size=4,
).map(lambda patterns: ",".join(
    prefix + "".join(f"[{str(low).zfill(width)}-{low + span}]" for low, span, width in groups)
    for prefix, groups in patterns))
task_counts = st.lists(st.tuples(numbers, st.one_of(st.none(), numbers)), min_size=1, max_size=4).map(
    lambda items: ",".join(t if r is None else f"{t}(x{r})" for t, r in items))
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | any_text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
                           max_leaves=10)
tf_configs = st.one_of(
    json_values.map(json.dumps),
    st.builds(lambda cluster, task: json.dumps({"cluster": cluster, "task": task}),
              st.dictionaries(st.sampled_from(["chief", "worker", "ps"]),
                              st.lists(st.one_of(any_text, st.builds("{}:{}".format, any_text, numbers)), max_size=4)),
              st.fixed_dictionaries({"type": st.sampled_from(["chief", "worker", "ps"]) | any_text,
                                     "index": st.integers(-2, 5) | st.integers() | any_text})),
    st.integers(1, 60_000).map(lambda depth: "[" * depth + "]" * depth),
)
values = st.one_of(numbers, any_text, hostlists, task_counts, tf_configs,
                   st.builds("{}:{}".format, st.sampled_from(["10.0.0.4", "h", ""]), numbers))
# A working environment of each launcher, with some of its own variables and some others changed:
# changing only unrelated variables would rarely reach the parsers.
environments = st.sampled_from(VALID).flatmap(lambda base: st.builds(
    lambda own, others: {**base, **own, **others},
    st.dictionaries(st.sampled_from(sorted(base) or VARIABLES), values, max_size=2),
    st.dictionaries(st.sampled_from(VARIABLES), values, max_size=4)))


def check_outcome(environ: dict) -> None:
    """detect() gives a DistEnv that can be exported as it is, or one short DistEnvError line."""
    try:
        env = detect(environ)
    except DistEnvError as err:
        assert "\n" not in str(err) and len(str(err)) < 600, str(err)
        return
    assert 0 <= env.rank < env.world_size <= MAX_INT
    assert 0 <= env.local_rank < env.local_world_size <= env.world_size
    assert 0 <= env.node_rank < env.num_nodes <= env.world_size
    assert 0 < env.master_port < 65536 and is_host(env.master_addr)
    for value in env.to_env().values():
        os.fsencode(value)  # exportable to a child process: no NUL, no lone surrogate
        assert "\0" not in value


@pytest.mark.budget
@settings(max_examples=budget(100, 400), deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(environments)
@example({**SLURM, "SLURM_NODELIST": "n[0-99][0-99][0-99][0-99]"})
@example({"TF_CONFIG": NESTED})
@example({**PYTORCH, "RANK": HUGE})
def test_any_environment_gives_a_dist_env_or_one_error_line(environ):
    check_outcome(environ)


def exportable(environ: dict) -> bool:
    try:
        for value in environ.values():
            os.fsencode(value)
    except UnicodeEncodeError:
        return False
    return not any("\0" in value for value in environ.values())


@settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(environments.filter(exportable))
def test_print_exits_0_with_json_or_2_with_one_line(clean_os_environ, capsys, environ):
    saved = dict(os.environ)
    os.environ.update(environ)
    try:
        code = main(["--print"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    out, err = capsys.readouterr()
    if code == 0:
        assert err == "" and out.count("\n") == 1 and json.loads(out)["world_size"] >= 1
    else:
        assert code == 2 and out == "", (code, out, err)
        assert re.fullmatch(r"amldist\.runtime: error: [^\n]+\n", err), err


def test_init_distributed_refuses_a_malformed_value_before_forming_a_group(clean_os_environ):
    torch_distributed = pytest.importorskip("torch.distributed")
    from amldist.runtime import init_distributed

    clean_os_environ.update(SLURM, SLURM_TASKS_PER_NODE="4(x9999999999)", RANK="1" * 5000)
    with pytest.raises(DistEnvError, match=r"SLURM_TASKS_PER_NODE='4\(x9999999999\)'") as caught:
        init_distributed()
    assert "\n" not in str(caught.value)
    assert not torch_distributed.is_initialized()
    assert "MASTER_ADDR" not in os.environ  # nothing exported


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the signal mask from /proc")
def test_exec_mode_starts_the_command_with_sigpipe_at_its_default(base_env):
    """Python ignores SIGPIPE and exec keeps ignored signals: restored, ``CMD | head`` ends CMD as a shell would."""
    result = run_module(["--", "cat", "/proc/self/status"], base_env)
    assert result.returncode == 0, result.stderr
    ignored = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", result.stdout, re.M)[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
