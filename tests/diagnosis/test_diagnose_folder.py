"""``amldist job diagnose --logs DIR`` on Azure ML log folders as ``az ml job download`` leaves them.

tests/fixtures/azureml_logs/ holds three recorded-format jobs (every line in the form torch 2.4+, NCCL 2.21 and
Azure ML's layout write it; the sources are cited in tests/diagnosis/test_signature_lines.py):

- ``infiniband``: 4 nodes x 2; node 2's HCA fails: both ends of its links log ``status=12``, a healthy node's
  rank first by time; the other ranks time out ten minutes later;
- ``desync``: 2 nodes x 4; rank 5's last enqueued collective is 1200 while every other rank waits in 1201;
- ``ecc``: 2 nodes x 4 with the job's YAML (``az ml job show -o yaml``); rank 6's GPU hits an uncorrectable ECC
  error; the job also wrote a ``user_logs/std_log_process_99.txt`` of its own under ./outputs.

The hostile cases run the CLI in a subprocess under an address-space limit and a timeout: no hang, no unbounded
memory, nothing shown raw.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys

import pytest

from amldist.diagnosis.logs import load_job_file
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "azureml_logs"
HOST = "4f0c2a9d81e34b7a9c5d3e2f1a0b6c7d00000{}"


def diagnose_json(cli, folder) -> dict:
    code, out, err = cli("job", "diagnose", "--logs", str(folder), "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_an_infiniband_error_names_the_node_both_ends_blame_not_the_first_line_by_time(cli):
    data = diagnose_json(cli, FIXTURES / "infiniband")
    first = data["first_failure"]
    assert (first["rank"], first["node"], first["host"]) == (4, 2, HOST.format(2))
    assert (first["signature"], first["field"]) == ("ib-completion-error", "compute")
    assert first["hint"].startswith(f"node 2 (host {HOST.format(2)}): ") and "resubmit" in first["hint"]
    ib = [r for r in data["ranks"] if r["signature"] == "ib-completion-error"]
    assert min(ib, key=lambda r: (r["ended"], r["rank"]))["node"] != 2  # by time alone, a healthy node came first


def test_an_ecc_error_names_its_rank_node_and_host_with_a_node_level_fix(cli):
    code, out, err = cli("job", "diagnose", "--logs", str(FIXTURES / "ecc"))
    assert code == 0, err
    assert f"first failure: rank 6 on node 1 (host {HOST.format(1)})" in out
    assert "cause: gpu-ecc-error: RuntimeError: CUDA error: uncorrectable ECC error encountered" in out
    assert f"fix: node 1 (host {HOST.format(1)}): " in out and "resubmit" in out and "[spec: compute]" in out
    assert out.startswith("job sleepy_pear_1k2c4w9z: Failed")  # the job's YAML beside the logs names it


def test_files_the_job_wrote_to_outputs_never_invent_ranks(cli):
    data = diagnose_json(cli, FIXTURES / "ecc")
    assert [r["rank"] for r in data["ranks"]] == list(range(8))
    assert all("/outputs/" not in r["log"] for r in data["ranks"])


def test_a_desync_by_sequence_number_names_the_rank_behind_and_its_node(cli):
    first = diagnose_json(cli, FIXTURES / "desync")["first_failure"]
    assert (first["rank"], first["node"], first["host"]) == (5, 1, HOST.format(1))
    assert first["ranks"] == [5]


def test_a_desync_names_the_sequence_numbers_as_its_evidence(cli):
    first = diagnose_json(cli, FIXTURES / "desync")["first_failure"]
    said = f"{first['line']} {first['hint']}"
    assert first["rank"] == 5 and "1200" in said and "1201" in said  # rank 5 enqueued 1200, the others 1201


def test_user_logs_at_any_depth_or_given_itself(cli, tmp_path):
    deep = tmp_path / "downloads" / "sleepy_pear" / "x"
    shutil.copytree(FIXTURES / "ecc", deep)
    assert diagnose_json(cli, tmp_path / "downloads")["first_failure"]["rank"] == 6
    assert diagnose_json(cli, deep / "artifacts" / "user_logs")["first_failure"]["rank"] == 6


def test_a_folder_without_logs_or_with_two_jobs_is_one_line(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _out, err = cli("job", "diagnose", "--logs", str(tmp_path / "empty"))
    assert code == 2 and "no user_logs/ folder" in err and "az ml job download" in err and "Traceback" not in err
    for job in ("a", "b"):
        shutil.copytree(FIXTURES / "desync" / "artifacts", tmp_path / "two" / job)
    code, _out, err = cli("job", "diagnose", "--logs", str(tmp_path / "two"))
    assert code == 2 and "more than one job" in err
    code, _out, err = cli("job", "diagnose", "--logs", "/dev/zero")
    assert code == 2 and "no such folder" in err


# --- hostile folders: run in a subprocess, bounded in memory and time -------------------------------------

MEMORY_LIMIT = 1 << 30  # address space: Python, RE2 and the CLI need ~300 MB; reading /dev/zero would not stop


def run_limited(folder, *extra: str) -> subprocess.CompletedProcess:
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "amldist", "job", "diagnose", "--logs", str(folder), *extra],
                          capture_output=True, text=True, timeout=120, preexec_fn=limit, env=env, check=False)


def hostile_folder(tmp_path):
    logs = tmp_path / "job" / "artifacts" / "user_logs"
    logs.mkdir(parents=True)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    (logs / "std_log_process_00.txt").write_text(
        "2024-05-02 10:00:01,000 INFO start\n" + "\x1b[2J\x1b]0;pwned\x07" * 200_000  # one line of 2.6 MB
        + " torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    os.mkfifo(logs / "std_log_process_01.txt")  # a reader that opens it blocks for ever
    os.symlink("/dev/zero", logs / "std_log_process_02.txt")  # never ends
    os.symlink(outside, logs / "std_log_process_03.txt")  # out of the folder
    os.symlink("/", tmp_path / "job" / "artifacts" / "root")  # a walk that followed it would see the machine
    (logs / "std_log_process_04.txt").write_text("step 1\n\x1b[31mred\x1b[0m ValueError: \x1b]8;;http://x\x07y\n")
    return tmp_path / "job"


def test_hostile_logs_are_bounded_and_shown_escaped(tmp_path):
    done = run_limited(hostile_folder(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "first failure: rank 0" in out and "cuda-oom" in out and "bytes cut" in out
    assert max(map(len, out.splitlines())) < 3000
    assert "note: skipped: 4 entries not read" in out  # the FIFO, both links, the link to /
    assert "rank 3" not in out and "rank 1 " not in out  # nothing read through a link or from a FIFO
    done = run_limited(tmp_path / "job", "--format", "json")
    data = json.loads(done.stdout)
    assert len(data["first_failure"]["line"]) < 2000 and "\x1b" not in done.stdout


def test_a_device_or_a_folder_named_as_a_log_is_skipped(tmp_path, cli):
    logs = tmp_path / "job" / "user_logs"
    (logs / "std_log_process_01.txt").mkdir(parents=True)
    (logs / "std_log_process_00.txt").write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    try:
        os.mknod(logs / "std_log_process_02.txt", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's own device
    except PermissionError:
        pytest.skip("creating a device file needs root")
    done = run_limited(tmp_path / "job", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["rank"] for r in data["ranks"]] == [0] and data["first_failure"]["signature"] == "cuda-illegal-address"
    assert "std_log_process_02.txt" in data["notes"][0]["line"]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9)) + \
    "environment_variables:\n  BOMB: *j\ndistribution:\n  process_count_per_instance: *j\n"


def test_an_alias_bomb_in_job_yml_stops_early(tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(FIXTURES / "desync", folder)
    (folder / "job.yml").write_text(BOMB)  # 9**10 strings once expanded
    done = run_limited(folder)
    assert done.returncode == 0, done.stderr
    assert "first failure: rank 5" in done.stdout
    assert load_job_file(str(folder / "job.yml")) == {}  # a local run folder's job.yml is read the same way


def test_torchs_glog_times_with_an_unpadded_month_are_read():
    from amldist.diagnosis.logs import last_timestamp, line_time

    assert line_time("[rank5]:[E502 10:22:42.112142364 ProcessGroupNCCL.cpp:1746] x", 2024) == 1714645362.112142
    assert line_time("[W1114 10:22:42.5 socket.cpp:1] x", 2024) == 1731579762.5
    # the year comes from the log's own dated lines
    assert last_timestamp("2023-05-02 10:00:01,000 INFO a\n[E502 10:00:03.25 x.cpp:1] b\n") == 1683021603.25
