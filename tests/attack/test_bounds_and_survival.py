"""Issue 17 points 4, 5, 6 and 7 through the real ``amldist``: pathological ignore patterns, growing logs,
a full disk, a closed or full stdout, secrets under other names, and daemons that try to outlive the run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from amldist.engine.log_stream import MAX_LINE, LogFollower
from tests.attack.limits import amldist
from tests.conftest import ROOT

JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
type: command
command: {command}
environment: azureml:env:1
code: .
"""
PATHOLOGICAL = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


def _job(folder, command, extra=""):
    (folder / "job.yml").write_text(JOB.format(command=command) + extra, encoding="utf-8")
    return folder


# --- point 4: bounds ------------------------------------------------------------------------------
@pytest.mark.parametrize("ignore_file", [".gitignore", ".amlignore"])
def test_a_pathological_ignore_pattern_does_not_hang_validate_nor_the_code_copy(tmp_path, ignore_file):
    _job(tmp_path, "ls > /dev/null")
    (tmp_path / ignore_file).write_text(PATHOLOGICAL + "\n", encoding="utf-8")
    for i in range(20):  # names the pattern almost matches: exponential work for a backtracking matcher
        (tmp_path / ("a" * (40 + i))).write_text("x")
    started = time.monotonic()
    amldist("validate", tmp_path, timeout=60).assert_clean(codes=(0, 1))
    amldist("validate", tmp_path, "--exclude", PATHOLOGICAL, timeout=60).assert_clean(codes=(0, 1))
    amldist("submit", "job.yml", "--local", cwd=tmp_path, timeout=60).assert_clean(codes=(0,))
    # the Azure upload is decided by azure-ai-ml's own (backtracking) matcher: refused in one line instead
    azure = amldist("submit", "job.yml", "--dry-run", cwd=tmp_path, timeout=60)
    azure.assert_clean(codes=(1, 2))
    assert "wildcards" in azure.err and len(azure.err.strip().splitlines()) == 2
    assert time.monotonic() - started < 60


def test_the_stream_follower_prints_each_line_once_and_keeps_a_bounded_unfinished_line(tmp_path):
    log = tmp_path / "log.txt"
    printed: list[str] = []
    follower = LogFollower(printed.append)
    with open(log, "ab", buffering=0) as fh:
        fh.write(b"first\nsecond")
        follower.copy(str(log), "[r] ")
        for percent in range(0, 101, 10):  # a progress bar: \r and no newline
            fh.write(f"\r{percent}%".encode())
            follower.copy(str(log), "[r] ")
        fh.write(b"\n" + b"x" * (3 * MAX_LINE))  # a line that never ends
        follower.copy(str(log), "[r] ")
        assert len(follower.pending.get(str(log), b"")) <= MAX_LINE
        fh.write(b"\r\nlast")
        follower.copy(str(log), "[r] ", final=True)
    lines = "".join(printed).split("\n")[:-1]
    assert lines[:2] == ["[r] first", "[r] second"]
    assert [line for line in lines if line.endswith("%")] == [f"[r] {p}%" for p in range(0, 101, 10)]
    assert lines[-1] == "[r] last" and sum(len(line) - 4 for line in lines if "xxx" in line) == 3 * MAX_LINE


def test_stream_of_a_real_run_prints_each_progress_line_once(tmp_path):
    script = ("import sys, time\nfor i in range(5):\n"
              "    sys.stdout.write(f'\\rstep {i}'); sys.stdout.flush(); time.sleep(0.1)\nprint()\n")
    (tmp_path / "bar.py").write_text(script)
    _job(tmp_path, "python bar.py")
    result = amldist("submit", "job.yml", "--local", "--stream", cwd=tmp_path, timeout=60)
    result.assert_clean(codes=(0,))
    streamed = [line for line in result.out.splitlines() if line.startswith("[process]")]
    assert streamed == [f"[process] step {i}" for i in range(5)]


# --- point 5: a full disk, a closed stdout --------------------------------------------------------
FILL = """\
import os, time
if int(os.environ.get("RANK", "0")) == 1:
    time.sleep(0.3)
    raise SystemExit(0)  # ends while the disk is full: status.json cannot be written then
fd = os.open("fill.bin", os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError:
    pass
os.close(fd)
time.sleep(1.5)
os.unlink("fill.bin")
"""


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MiB tmpfs (needs root and mount(2)); skipped where it cannot be mounted."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount)")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_rank_that_fills_the_disk_for_a_moment_does_not_stop_the_run(tiny_disk):
    (tiny_disk / "fill.py").write_text(FILL)
    _job(tiny_disk, "python fill.py", "distribution: {type: pytorch, process_count_per_instance: 2}\n")
    result = amldist("submit", "job.yml", "--local", "--name", "full", cwd=tiny_disk, timeout=90)
    result.assert_clean(codes=(0,))
    assert "status: Completed" in result.out and "Failed" not in result.out
    assert "cannot write" in result.err and "status.json is written again" in result.err
    status = (tiny_disk / ".amldist" / "runs" / "full" / "status.json").read_text()
    assert '"status": "Completed"' in status


def test_a_failing_status_write_is_retried_and_never_fatal(tmp_path, monkeypatch, capsys):
    from amldist.backends.local import run_state

    real, calls = run_state.write_state, {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if 2 <= calls["n"] <= 6:  # a few writes in a row fail, as on a disk full for a moment
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(run_state, "write_state", flaky)
    from tests.e2e.test_local_runs import run_local, write_job

    run = run_local(tmp_path, write_job(tmp_path, "command: sleep 0.3\n"))
    assert run.code == 0, run.err
    err = capsys.readouterr().err
    assert "No space left on device" in err and "written again" in err
    assert calls["n"] > 6


def test_a_closed_stdout_ends_quietly_with_the_commands_own_code(tmp_path):
    _job(tmp_path, "echo hi")
    for args, expected in ((["validate", "job.yml"], 0), (["submit", "job.yml", "--local", "--dry-run"], 0),
                           (["validate", "missing.yml"], 2), (["submit", "job.yml", "--local", "--name", "cut"], 0)):
        proc = subprocess.Popen([sys.executable, "-m", "amldist", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        proc.stdout.close()  # `| head` that already quit
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == expected, err
        assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err
    assert '"status": "Completed"' in (tmp_path / ".amldist" / "runs" / "cut" / "status.json").read_text()
    (tmp_path / "pipeline.yml").write_text(PIPELINE.replace("secretpipe", "cutpipe"))
    proc = subprocess.Popen([sys.executable, "-m", "amldist", "submit", "pipeline.yml", "--local"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    assert proc.wait(timeout=90) == 0, proc.stderr.read().decode()
    assert '"status": "Completed"' in (tmp_path / ".amldist" / "runs" / "cutpipe" / "status.json").read_text()


def test_a_full_stdout_is_one_line(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    _job(tmp_path, "echo hi")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "amldist", "submit", "job.yml", "--local", "--dry-run"],
                              cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == ["error: cannot write the output: No space left on device"]


# --- point 6: secrets ---------------------------------------------------------------------------
PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
name: secretpipe
inputs:
  db_pass: sk-LIVE-pipe-1234
jobs:
  step:
    type: command
    command: echo ${{inputs.setting}} > /dev/null
    environment: azureml:env:1
    inputs:
      setting: ${{parent.inputs.db_pass}}
"""
COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
name: trainer
version: 1
type: command
command: python train.py --k ${{inputs.api_key}} --c ${{inputs.hmac}}
environment: azureml:env:1
inputs:
  api_key: {type: integer}
  hmac: {type: string, enum: [a, b]}
"""


def _all_text(folder) -> str:
    chunks = []
    for here, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(here, name)
            if not os.path.islink(path):
                with open(path, "rb") as fh:
                    chunks.append(fh.read().decode("utf-8", "replace"))
    return "\n".join(chunks)


def test_a_secret_passed_under_another_name_stays_masked_in_messages_and_files(tmp_path):
    (tmp_path / "pipeline.yml").write_text(PIPELINE)
    for args in (("--local", "--dry-run"), ("--dry-run",), ("--local",)):
        result = amldist("submit", "pipeline.yml", *args, cwd=tmp_path, timeout=90)
        result.assert_clean(codes=(0,))
        assert "sk-LIVE" not in result.out + result.err, args
    assert "setting: '***'" in (tmp_path / ".amldist" / "runs" / "secretpipe" / "step" / "job.yml").read_text()
    assert "sk-LIVE" not in _all_text(tmp_path / ".amldist")


CREDENTIALS_JOB = """\
type: command
command: echo run > /dev/null
environment: azureml:env:1
name: creds
environment_variables:
  NETRC: sk-LIVE-netrc-path
  SMTP_PASS: sk-LIVE-smtp
  LDAP_PASSWD: sk-LIVE-ldap
  GCP_SA: '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nsk-LIVE-pem\\n-----END PRIVATE KEY-----\\n"}'
  DEPLOY_MATERIAL: "-----BEGIN OPENSSH PRIVATE KEY-----\\nsk-LIVE-ssh\\n-----END OPENSSH PRIVATE KEY-----"
"""


def test_secret_names_and_credential_shaped_values_are_masked_in_dry_runs_and_run_files(tmp_path):
    (tmp_path / "job.yml").write_text(CREDENTIALS_JOB)
    for args in (("--local", "--dry-run"), ("--dry-run",), ("--local",)):
        result = amldist("submit", "job.yml", *args, cwd=tmp_path, timeout=90)
        result.assert_clean(codes=(0,))
        assert "sk-LIVE" not in result.out + result.err, args
        assert "NETRC" in result.out + result.err or "--dry-run" not in args  # the dry runs show the names
    assert "sk-LIVE" not in _all_text(tmp_path / ".amldist")


@pytest.mark.parametrize("given", [("api_key=sk-LIVE-1234", "hmac=a"), ("api_key=3", "hmac=sk-LIVE-1234")])
def test_error_messages_never_print_a_secret_inputs_value(tmp_path, given):
    (tmp_path / "component.yml").write_text(COMPONENT)
    args = [part for value in given for part in ("--input", value)]
    for extra in (("--local", "--dry-run"), ("--dry-run",)):
        result = amldist("submit", "component.yml", *extra, *args, cwd=tmp_path)
        result.assert_clean(codes=(1, 2))
        assert "sk-LIVE" not in result.out + result.err and "***" in result.err


# --- point 7: no survivor -----------------------------------------------------------------------
DAEMON = ("setsid sh -c 'sleep {a} & sleep {b} & wait' > /dev/null 2>&1 < /dev/null & "
          "(setsid sh -c 'sleep {c}' > /dev/null 2>&1 < /dev/null &) ; {tail}")


def _alive(pattern: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return [pid for pid in found if pid != str(os.getpid())]


def _gone(pattern: str, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pattern):
            return True
        time.sleep(0.1)
    return False


def test_a_completed_job_leaves_no_daemon_nor_a_daemons_child(tmp_path):
    tag = f"{os.getpid() % 1000 + 3000}"  # sleep durations unique to this test run, to find them by name
    _job(tmp_path, DAEMON.format(a=f"{tag}.1", b=f"{tag}.2", c=f"{tag}.3", tail="sleep 0.5"))
    amldist("submit", "job.yml", "--local", cwd=tmp_path, timeout=60).assert_clean(codes=(0,))
    assert _gone(f"sleep {tag}\\."), _alive(f"sleep {tag}\\.")


def test_sigkill_to_amldist_leaves_no_daemon_of_the_run(tmp_path):
    tag = f"{os.getpid() % 1000 + 5000}"
    _job(tmp_path, DAEMON.format(a=f"{tag}.1", b=f"{tag}.2", c=f"{tag}.3", tail=f"sleep {tag}.4"))
    proc = subprocess.Popen([sys.executable, "-m", "amldist", "submit", "job.yml", "--local"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while len(_alive(f"^sleep {tag}\\.")) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_alive(f"^sleep {tag}\\.")) == 4
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert _gone(f"sleep {tag}\\.", 20), _alive(f"sleep {tag}\\.")
    finally:
        for pid in _alive(f"sleep {tag}\\."):
            os.kill(int(pid), signal.SIGKILL)


SCRUBBED_DAEMON = """\
import os, sys, time
# a daemon that hides from the run marker: a session of its own, no parent, and the marker overwritten in its
# environment's memory (what /proc/<pid>/environ shows), as setproctitle-style code does
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
stat = open("/proc/self/stat").read()
fields = stat[stat.rfind(")") + 2:].split()
start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50 and 51)
with open("/proc/self/mem", "r+b") as mem:
    mem.seek(start)
    text = mem.read(end - start)
    mem.seek(start)
    mem.write(text.replace(b"AMLDIST_RUN_MARKER", b"XXXXXXXXXXXXXXXXXX"))
time.sleep(float(sys.argv[1]))
"""


def _escapes(tag: str) -> str:
    """Daemons of every kind that slip past the run marker and the session (issue 24)."""
    parts = [f"(env -u AMLDIST_RUN_MARKER setsid sleep {tag}.1 > /dev/null 2>&1 < /dev/null &)",
             f"(env -i /bin/sh -c 'setsid sleep {tag}.2 > /dev/null 2>&1 < /dev/null &')",
             f"python scrub.py {tag}.3 > /dev/null 2>&1 < /dev/null"]
    if os.geteuid() == 0 and shutil.which("su"):  # `su -` resets the environment and starts a session of its own
        parts.append(f"(su - root -c 'setsid sleep {tag}.4 > /dev/null 2>&1 < /dev/null &')")
    return "; ".join(parts)


def test_sigkill_to_amldist_stops_daemons_that_drop_or_overwrite_the_marker(tmp_path):
    tag = f"{os.getpid() % 1000 + 7000}"
    (tmp_path / "scrub.py").write_text(SCRUBBED_DAEMON)
    _job(tmp_path, _escapes(tag) + f"; sleep {tag}.9")
    wanted = 5 if "su -" in _escapes(tag) else 4
    daemons = f"^(sleep {tag}\\.|[^ ]*python[^ ]* scrub\\.py {tag}\\.3$)"
    proc = subprocess.Popen([sys.executable, "-m", "amldist", "submit", "job.yml", "--local"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_alive(daemons)) < wanted and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_alive(daemons)) == wanted, _alive(str(tag))
        scrubbed = [pid for pid in _alive(daemons) if b"AMLDIST_RUN_MARKER" not in _environ(pid)]
        assert len(scrubbed) == wanted - 1, "every daemon but the rank's own sleep has no marker to be found by"
        time.sleep(1.0)  # the supervisor lists its descendants every TRACK_SECONDS
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert _gone(daemons, 30), _alive(daemons)
    finally:
        for pid in _alive(daemons):
            os.kill(int(pid), signal.SIGKILL)


def test_a_completed_job_stops_daemons_that_drop_or_overwrite_the_marker(tmp_path):
    tag = f"{os.getpid() % 1000 + 8000}"
    (tmp_path / "scrub.py").write_text(SCRUBBED_DAEMON)
    _job(tmp_path, _escapes(tag) + "; sleep 1")
    daemons = f"^(sleep {tag}\\.|[^ ]*python[^ ]* scrub\\.py {tag}\\.3$)"
    try:
        amldist("submit", "job.yml", "--local", cwd=tmp_path, timeout=90).assert_clean(codes=(0,))
        assert _gone(daemons), _alive(daemons)
    finally:
        for pid in _alive(daemons):
            os.kill(int(pid), signal.SIGKILL)


def _environ(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def test_job_logs_of_a_huge_log_stays_in_bounded_memory(tmp_path, attack_long):
    _job(tmp_path, "echo hi")
    amldist("submit", "job.yml", "--local", "--name", "big", cwd=tmp_path, timeout=60).assert_clean(codes=(0,))
    log = tmp_path / ".amldist" / "runs" / "big" / "user_logs" / "std_log.txt"
    lines = 3_000_000 if attack_long else 1_000_000  # 300 MB or 100 MB; a long "line" of 5 MB in the middle
    with open(log, "wb") as fh:
        fh.write(("x" * 99 + "\n").encode() * (lines // 2) + b"y" * 5_000_000 + b"\n"
                 + ("x" * 99 + "\n").encode() * (lines // 2))
    probe = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'amldist', 'job', 'logs', "
             "'big', '--local'], stdout=subprocess.DEVNULL, check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    started = time.monotonic()
    peak_kb = int(subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=120, check=True).stdout)
    assert peak_kb < 150_000, peak_kb  # a few chunks, not the log (100 MB or more)
    assert time.monotonic() - started < 60
