"""The benchmarks' own correctness, in the default run: each measures a workload that is what it claims
(specs of the kinds it names, its planted mistakes found; the same job on both sides). Running the scripts end to end
(tiny ``--quick`` mode; no timing is asserted) is marked ``bench``: ``pytest --bench`` runs it."""

import importlib.util
import os
import subprocess
import sys

import pytest

from amldist.model.kinds import detect_kind
from amldist.model.yamlio import load_yaml
from amldist.validate import check
from tests.validate.helpers import ROOT


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_validate_generates_specs_of_the_kinds_it_names(tmp_path):
    files = bench_module("bench_validate").generate(tmp_path, 60)
    assert len(files) == 60
    assert {kind for _, kind in files} == {"command_job", "command_component", "pipeline_job",
                                           "distributed_component"}
    for path, kind in files:
        with open(path, encoding="utf-8") as fh:
            assert detect_kind(load_yaml(fh.read()).data) == kind, path
    # the bench times amldist over them: no file may end in an internal error, and the mistakes it plants
    # (instance_count: 0, as a real repository has some) are found
    result = check([tmp_path])
    assert "internal-error" not in {d.code for d in result.diagnostics}
    planted = {path for path, _ in files if "instance_count: 0\n" in open(path, encoding="utf-8").read()}
    found = {d.file for d in result.diagnostics if d.code == "out-of-range" and d.field == "resources.instance_count"}
    assert found == planted


@pytest.mark.bench  # a fresh azure-ai-ml process; the CLI's own quiet is tests/cli/test_cli_habits.py's
def test_bench_builders_azure_side_prints_no_experimental_notice():
    """In a fresh process (in this one azure-ai-ml's schemas may be built already, and would say nothing)."""
    pytest.importorskip("azure.ai.ml")
    code = "import sys; sys.path.insert(0, 'bench'); import bench_builders; bench_builders.azure_job()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "experimental class" not in done.stderr + done.stdout


def test_bench_builders_builds_the_same_job_on_both_sides():
    pytest.importorskip("azure.ai.ml")
    bench = bench_module("bench_builders")
    ours, theirs = bench.amldist_job(), bench.azure_job()
    assert ours.distribution.to_dict() == {"type": "pytorch", "process_count_per_instance": 8}
    assert theirs.distribution.process_count_per_instance == 8
    for key in ("instance_type", "instance_count", "shm_size"):
        assert getattr(ours.resources, key) == getattr(theirs.resources, key), key
    assert ours.command == theirs.command


@pytest.mark.bench
def test_bench_validate_quick():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_validate.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "12 specs" in out and "speed-up:" in out and "x of the import" in out
    assert "azure-ai-ml load + _validate():" in out and "files raised" in out
    assert out.count("target <= 0.08") == 2 and "target >= 50x" in out


@pytest.mark.bench
def test_bench_validate_revisions_times_each_revision_with_its_own_code():
    """Against HEAD (this checkout's last commit): both workloads and both sides run; the script itself stops when
    a side imports the other's amldist (as both did when started from the checkout)."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_validate_revisions.py"), "HEAD", "--runs", "1",
                           "--count", "12"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "same commands" in out and "distinct commands" in out and out.count("ratio:") == 2
    assert out.count("shell analysis") == 4


def test_bench_pipeline_local_runs_the_pipelines_own_steps(tmp_path):
    import yaml

    bench = bench_module("bench_pipeline_local")
    commands = bench.step_jobs(str(tmp_path))
    sample = ROOT / "samples" / "pipeline"
    pipeline = yaml.safe_load((sample / "pipeline.yml").read_text())
    assert [argv[argv.index("--name") + 1] for argv in commands] == list(pipeline["jobs"])
    files = [argv[argv.index("submit") + 1] for argv in commands]
    result = check(files)
    assert not result.count("error"), result.diagnostics  # the bench stops when a step fails
    train = yaml.safe_load(open(files[1], encoding="utf-8"))
    component = yaml.safe_load((sample / "train_component.yml").read_text())
    assert train["distribution"] == component["distribution"]
    assert train["resources"]["instance_count"] == component["resources"]["instance_count"]
