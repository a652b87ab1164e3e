"""Every command in the README's ```bash blocks runs as written from the repository root, or is skipped by a rule
that says why (an install, the test suite itself, a synopsis with placeholders, a workspace, a training run).

The commands run in a copy of the repository (with a git history of one commit, for ``git show HEAD:...``), so
one that writes a file (``> amldist.sarif``, ``convert -o``) leaves the checkout alone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

COPY_LEFT_OUT = shutil.ignore_patterns(".git", ".amldist", "__pycache__", ".hypothesis", ".pytest_cache",
                                       ".import_linter_cache", "*.egg-info", "amldist.sarif")
# [--opt], NAME, W; not $VAR, A=B or git's HEAD:path
PLACEHOLDER = re.compile(r"\[[^\]]*\]|(?<![\w.$/-])[A-Z][A-Z_]*(?![\w.=/:-])")


def is_install(command: str) -> bool:
    return command.startswith(("pip ", "python3 -m venv"))


def is_test_suite(command: str) -> bool:
    return "pytest" in command.split("  #")[0]


def is_synopsis(command: str) -> bool:
    return PLACEHOLDER.search(command) is not None


def needs_slurm(command: str) -> bool:
    words = command.split()
    return "--slurm" in words and "--dry-run" not in words


def reaches_azure(command: str) -> bool:
    words = command.split()
    return words[:2] in (["amldist", "submit"], ["amldist", "job"]) and "--local" not in words \
        and "--dry-run" not in words and not any(w.startswith(".amldist/") for w in words)


def trains(command: str) -> bool:
    words = command.split()
    return (words[:2] == ["amldist", "submit"] and "--local" in words and "--dry-run" not in words) \
        or words[:2] == ["python", "samples/pipeline/pipeline.py"]


# (rule, why): the first that matches skips the command
SKIP_RULES = (
    (is_install, "installs packages: .ci/run does that in a fresh virtual environment"),
    (is_test_suite, "the test suite itself (CI runs it)"),
    (is_synopsis, "a synopsis with placeholders (NAME, W, [--option]), not a command as it stands"),
    (needs_slurm, "needs a Slurm cluster (tests/slurm_cluster.py starts one for the Slurm backend's tests)"),
    (reaches_azure, "reaches an Azure ML workspace (a login)"),
    (trains, "trains: tests/e2e/test_local_faithful.py runs the README's local and pipeline runs"),
)


def readme_commands() -> list[str]:
    """Every command line of every ```bash block, comments cut off."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def skip_reason(command: str) -> str | None:
    return next((why for rule, why in SKIP_RULES if rule(command)), None)


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory):
    copy = tmp_path_factory.mktemp("readme") / "amldist"
    shutil.copytree(ROOT, copy, ignore=COPY_LEFT_OUT, symlinks=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "readme"]):
        subprocess.run(argv, cwd=copy, check=True, env=env, capture_output=True, timeout=120)
    return copy


def test_the_readme_has_commands_and_runs_most_of_them():
    commands = readme_commands()
    runnable = [c for c in commands if skip_reason(c) is None]
    assert len(commands) >= 20 and len(runnable) >= 10, runnable


PLAIN_WORDS = re.compile(r"[\w./=:,@%+ -]+")  # words bash splits as str.split does: no quote, expansion or operator
WORKSPACE_VARIABLES = ("AZUREML_ARM_WORKSPACE_NAME", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_SUBSCRIPTION")


def is_an_azure_dry_run(command: str) -> bool:
    """``amldist submit ... --dry-run`` to Azure ML, in plain words (no quote, expansion or operator: bash would
    split it as ``str.split`` does)."""
    words = command.split()
    return bool(PLAIN_WORDS.fullmatch(command)) and words[:2] == ["amldist", "submit"] and "--dry-run" in words \
        and "--local" not in words and "--slurm" not in words


@pytest.mark.parametrize("command", readme_commands())
def test_a_readme_command_runs_as_written(repo_copy, command, monkeypatch, cli):
    """Each command in bash, as a reader pastes it; an Azure dry run through the function the ``amldist`` console
    script calls (``amldist.cli.main.main``, the ``cli`` fixture), in this process: it imports azure-ai-ml, about
    3 CPU-seconds in a new process, which this one already holds (the console script itself is run by every other
    command)."""
    why = skip_reason(command)
    if why:
        pytest.skip(why)
    if is_an_azure_dry_run(command):
        monkeypatch.chdir(repo_copy)
        for name in WORKSPACE_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        code, out, err = cli(*command.split()[1:])
        assert code == 0, f"{command}\n{out[-2000:]}\n{err[-3000:]}"
        assert "Traceback" not in err
        return
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": str(ROOT)}  # this checkout's amldist, whatever is installed
    for name in WORKSPACE_VARIABLES:
        env.pop(name, None)
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=repo_copy, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


def test_the_quick_start_is_one_block_per_machine_each_complete():
    """Pasted whole, each block installs torch once (the CPU or the GPU build, never both), NumPy (else torch warns
    at the top of every rank's log), amldist, and runs the sample."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", quick_start, flags=re.S)
    torch_lines = []
    for block in blocks[:2]:
        commands = [re.split(r"\s+#\s", line, maxsplit=1)[0].strip() for line in block.splitlines()]
        torch_lines.append([c for c in commands if c.startswith("pip install torch")])
        assert len(torch_lines[-1]) == 1, block
        assert any(c.startswith("pip install") and "numpy" in c.split() for c in commands), block
        assert "amldist submit samples/pytorch_ddp/job.yml --local" in commands, block
    assert "download.pytorch.org/whl/cpu" in torch_lines[0][0] and torch_lines[1] == ["pip install torch"]
