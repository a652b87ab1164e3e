"""The pre-commit hook definition, and the validate path's import footprint."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from tests.validate.helpers import FIXTURES, ROOT


def test_pre_commit_hook_names_a_working_entry(tmp_path):
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    [hook] = [h for h in hooks if h["id"] == "amldist-validate"]
    assert hook["language"] == "python" and hook["entry"].split() == ["amldist", "validate"]
    pattern = re.compile(hook["files"])
    assert pattern.search("jobs/train.yml") and pattern.search("c/x.yaml") and not pattern.search("README.md")
    # run the entry as pre-commit would (entry + args + file names), via the module for a clean PATH
    other = tmp_path / "ci.yml"
    other.write_text("on: push\njobs: {}\n")
    argv = [sys.executable, "-m", "amldist", *hook["entry"].split()[1:], *hook.get("args", []),
            str(FIXTURES / "valid" / "job_pytorch.yml"), str(other)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""  # the workflow file is skipped silently
    bad = subprocess.run(argv + [str(FIXTURES / "invalid" / "negative_counts.yml")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "out-of-range" in bad.stdout


def test_console_script_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^amldist\s*=\s*"amldist\.cli\.main:run"', text, re.M)


def test_validate_never_imports_heavy_modules():
    code = (
        "import sys\n"
        "from amldist.cli.main import main\n"
        f"rc = main(['validate', '-q', {str(FIXTURES / 'valid')!r}, {str(FIXTURES / 'invalid')!r}])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'azure', 'torch', 'mpi4py', 'jsonschema', "
        "'numpy', 'referencing'})\n"
        "print('rc=%d heavy=%s' % (rc, ','.join(heavy)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "rc=1 heavy=", proc.stdout + proc.stderr


def test_validate_api_import_is_light():
    code = ("import sys, amldist.validate as v\n"
            "v.validate_text('type: command\\ncommand: x\\nenvironment: azureml:e:1\\n')\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'azure', 'torch', 'mpi4py', 'jsonschema'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
