"""The README's builder example runs as written, and means what the README says of it."""

import os
import re
import warnings

import pytest

import amldist
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore:The `context` parameter is deprecated"),
    pytest.mark.filterwarnings("ignore:The `ordered` `class Meta` option is deprecated"),
]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Builders and the VM size catalog", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return code


def test_the_builder_example_runs_and_its_yaml_is_what_az_ml_loads(tmp_path, monkeypatch):
    ml = pytest.importorskip("azure.ai.ml")
    from azure.ai.ml.entities import Command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    names: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no builder warning: the example is a good job
        exec(compile(readme_example(), "README.md", "exec"), names)
    job = names["job"]
    # defaults from the size: 8 GPUs per node, InfiniBand settings for 2 nodes
    assert job.distribution.process_count_per_instance == 8
    assert job.environment_variables["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    # "the same YAML `az ml job create -f` takes", and to_azure() is what azure-ai-ml makes of it
    loaded = ml.load_job(source=str(tmp_path / "job.yaml"))
    result = loaded._validate()
    assert result.passed, result.error_messages
    entity = amldist.to_azure(job)
    ours, theirs = entity._to_dict(), loaded._to_dict()
    # the one difference: to_azure() uploads a snapshot of ./src with amldist/runtime/ added
    assert os.path.isfile(os.path.join(entity.code, "amldist", "runtime", "__init__.py"))
    for side in (ours, theirs):
        side.pop("code", None), side.get("component", {}).pop("code", None)
    assert isinstance(entity, Command) and ours == theirs


def test_without_src_the_example_ends_in_one_line(tmp_path):
    """Run where ./src does not exist: one ``error:`` line naming it, no traceback and no azure-ai-ml notice."""
    pytest.importorskip("azure.ai.ml")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", readme_example()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and str(tmp_path / "src") in line


def test_without_azure_ai_ml_the_example_prints_the_install_to_run(tmp_path):
    """The hint is the part that says what to do: the example prints it, not only the message."""
    import subprocess
    import sys

    from amldist.errors import INSTALL_AZURE

    (tmp_path / "src").mkdir()
    no_azure = "import sys; sys.modules['azure.ai.ml'] = None  # as if azure-ai-ml were not installed\n"
    done = subprocess.run([sys.executable, "-c", no_azure + readme_example()], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and done.stdout == ""
    error, hint = done.stderr.splitlines()
    assert error.startswith("error: ") and "azure-ai-ml" in error
    assert hint == f"hint: {INSTALL_AZURE}"
