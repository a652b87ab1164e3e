"""A backend from outside amldist, registered by entry point, driven through the real CLI.

The backend is the README's own example (the ``python`` block of "Writing a backend"), installed as pip
would install a package: its module and a ``*.dist-info`` folder holding ``entry_points.txt`` in a
temporary folder on ``PYTHONPATH`` (never the shared site-packages). Every command is a real ``amldist``
process, so the entry point is found by ``importlib.metadata`` as in a user's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOB = """\
command: echo hello from tiny; exit 3
environment: azureml:x@latest
"""


def readme_backend() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Writing a backend"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def install(site: Path, dist: str, entry_points: str, modules: dict[str, str]) -> None:
    """What ``pip install`` leaves: the modules, and the distribution's metadata with its entry points."""
    for name, code in modules.items():
        (site / name).write_text(code)
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[amldist.backends]\n{entry_points}\n")


@pytest.fixture
def amldist(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "tiny_backend", "tiny = tiny_backend:TinyBackend", {"tiny_backend.py": readme_backend()})
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.yml").write_text(JOB)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        env.pop(name, None)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "amldist", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    run.site, run.work = site, work
    return run


def ended(amldist, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        shown = amldist("job", "show", name, "--backend", "tiny", "--format", "json")
        assert shown.returncode == 0, shown.stderr
        record = json.loads(shown.stdout)
        if record["status"] != "Running":
            return record
        assert time.monotonic() < deadline, f"{name} still running"
        time.sleep(0.2)


def test_an_installed_backend_is_listed_and_driven_through_every_verb(amldist):
    helped = amldist("submit", "--help")
    assert helped.returncode == 0 and "tiny backend:" in helped.stdout and "--shell PATH" in helped.stdout
    dry = amldist("submit", "job.yml", "--backend", "tiny", "-n", "t1", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("job t1: /bin/sh -c 'echo hello from tiny; exit 3'")
    assert not (amldist.work / ".tiny").exists()  # plan() is pure
    done = amldist("submit", "job.yml", "--backend", "tiny", "-n", "t1", "--shell", "/bin/sh")
    # 0: submitted and still running; 1: it already failed when submit looked (a loaded machine), diagnosed
    assert done.returncode == 0 or (done.returncode == 1 and "first failure: rank 0 on node 0, exit code 3"
                                    in done.stderr), done.stderr
    record = ended(amldist, "t1")
    assert (record["backend"], record["status"], record["ranks"][0]["exit_code"]) == ("tiny", "Failed", 3)
    listed = amldist("job", "list", "--backend", "tiny")
    assert listed.returncode == 0 and re.search(r"^t1\s+job\s+Failed", listed.stdout, re.M), listed.stdout
    logs = amldist("job", "logs", "t1")  # no flag: the backend that has a job called t1 (Backend.has)
    assert logs.returncode == 0 and logs.stdout == "hello from tiny\n"
    got = amldist("job", "download", "t1", "--backend", "tiny", "-o", "dl")
    assert got.returncode == 0, got.stderr
    assert (amldist.work / "dl/artifacts/user_logs/std_log_process_00.txt").read_text() == "hello from tiny\n"
    diagnosed = amldist("job", "diagnose", "t1", "--backend", "tiny", "--format", "json")
    first = json.loads(diagnosed.stdout)["first_failure"]  # the contract's run_logs: its download, its record
    assert (first["rank"], first["exit_code"]) == (0, 3) and "hello from tiny" in json.dumps(first)


def test_an_installed_backend_cancels_and_refuses_another_backends_flags(amldist):
    (amldist.work / "sleep.yml").write_text("command: sleep 60\nenvironment: azureml:x@latest\n")
    started = amldist("submit", "sleep.yml", "--backend", "tiny", "-n", "t2")
    assert started.returncode == 0, started.stderr
    canceled = amldist("job", "cancel", "t2", "--backend", "tiny")
    assert canceled.returncode == 0 and canceled.stdout.strip() == "job t2: Canceled"
    refused = amldist("submit", "sleep.yml", "--backend", "tiny", "--partition", "gpu", "--python", "/py")
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[0] == ("error: --python (a flag of the local and slurm backends) and --partition "
                                              "(a flag of the slurm backend) given, but this goes to the tiny backend "
                                              "(--backend tiny)")
    local = amldist("submit", "sleep.yml", "--local", "--shell", "/bin/bash", "--dry-run")
    assert local.returncode == 2 and "--shell (a flag of the tiny backend) given" in local.stderr


def test_a_broken_entry_point_is_one_line_and_the_others_still_work(amldist):
    install(amldist.site, "broken_one", "broken = no_such_module:Backend\nnotone = json:JSONDecoder", {})
    helped = amldist("submit", "--help")
    assert helped.returncode == 0 and "tiny backend:" in helped.stdout
    warnings = [line for line in helped.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: backend 'broken' (no_such_module:Backend, entry point of broken_one) cannot be loaded: "
        "ModuleNotFoundError: No module named 'no_such_module'; left out",
        "warning: backend 'notone' (json:JSONDecoder, entry point of broken_one) is not a subclass of "
        "amldist.backends.base.Backend; left out"], helped.stderr
    chosen = amldist("job", "list", "--backend", "broken")
    assert chosen.returncode == 2 and "Traceback" not in chosen.stderr
    assert chosen.stderr.splitlines()[-2].startswith("error: backend 'broken' (no_such_module:Backend")
