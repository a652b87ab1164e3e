"""Benchmark: ``amldist validate`` against azure-ai-ml's own loading + validation.

Measures, in one run and on the same files:
1. 300 command jobs (the target: amldist >= 50x faster): each side imported and warmed up on one
   file first, then timed over the 300 files in its own process (``amldist.validate.validate_file``
   against azure-ai-ml's ``load_job`` + ``_validate()``). Start-up is left out here because it has
   its own target (3.); the whole-process time for the same 300 files is printed beside it;
2. whole processes over a few hundred generated specs of every kind (command jobs and components,
   pipeline jobs, legacy specs, plus the conformance corpus), and again without pipeline jobs
   (azure-ai-ml's slowest kind): one ``amldist validate`` process against one process that imports
   azure.ai.ml and loops ``load_job``/``load_component`` + ``_validate()`` (informative);
3. ``amldist --version`` and ``amldist validate one.yaml`` against
   ``python -c "import azure.ai.ml"`` (target: each <= 0.08x; jsonschema-rs is imported only
   when the first document is checked, and costs ~15-25 ms of that).
Each number is the median of several runs; runs of the two sides are
interleaved so that load from other processes hits both alike. amldist's modules are compiled to
bytecode first, as ``pip install`` leaves an installed package (azure-ai-ml's already are), so
that an environment with PYTHONDONTWRITEBYTECODE set does not time Python's compiler.

    python bench/bench_validate.py [--count 300] [--runs 5] [--quick] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = Path(os.environ.get("AMLDIST_CONFORMANCE", ROOT.parent / "shared" / "conformance"))
SIZES = ["Standard_ND96asr_v4", "Standard_NC24s_v3", "Standard_NC24rs_v3", "Standard_ND96isr_H100_v5",
         "Standard_NC6s_v3", "Standard_NC4as_T4_v3"]
AZURE_LOOP = r"""
import json, sys, time
t0 = time.perf_counter()
from azure.ai.ml import load_component, load_job
t1 = time.perf_counter()
ok = failed = 0
per_kind = {}
for path, kind in json.load(open(sys.argv[1])):
    start = time.perf_counter()
    try:
        entity = (load_component if kind.endswith("component") else load_job)(path)
        entity._validate()
        ok += 1
    except Exception:
        failed += 1
    seconds, count = per_kind.get(kind, (0.0, 0))
    per_kind[kind] = (seconds + time.perf_counter() - start, count + 1)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "loop_s": t2 - t1, "ok": ok, "failed": failed, "per_kind": per_kind}))
"""

# One process per side for the warm throughput (1.): import, one file to warm up, then the timed loop.
AMLDIST_WARM = r"""
import json, sys, time
from amldist.validate import validate_file
files = json.load(open(sys.argv[1]))
validate_file(files[0])
start = time.perf_counter()
for path in files:
    validate_file(path)
print(json.dumps({"loop_s": time.perf_counter() - start}))
"""
AZURE_WARM = r"""
import json, sys, time
from azure.ai.ml import load_job
files = json.load(open(sys.argv[1]))
def one(path):
    try:
        load_job(path)._validate()
    except Exception:
        pass
one(files[0])
start = time.perf_counter()
for path in files:
    one(path)
print(json.dumps({"loop_s": time.perf_counter() - start}))
"""


# ---- spec generation (our own templates; conformance files are copied when present) ----

def _job(rng, i):
    dist = rng.choice(["pytorch", "mpi", "tensorflow"])
    lines = [
        "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json",
        "type: command", f"display_name: bench-job-{i}", "experiment_name: amldist-bench",
        "command: >-", "  python train.py --epochs ${{inputs.epochs}} --data ${{inputs.data}}",
        "  --out ${{outputs.model}}",
        "inputs:", f"  epochs: {rng.randint(1, 50)}", "  data:", "    type: uri_folder",
        f"    path: azureml:dataset-{i}@latest", "outputs:", "  model:", "    type: uri_folder",
        f"environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1:{rng.randint(1, 9)}",
        "compute: azureml:gpu-cluster", "distribution:", f"  type: {dist}",
    ]
    if dist == "tensorflow":
        lines += [f"  worker_count: {rng.randint(1, 4)}"]
    else:
        lines += [f"  process_count_per_instance: {rng.choice([1, 2, 4, 8])}"]
    lines += ["resources:", f"  instance_count: {rng.randint(1, 4)}", f"  instance_type: {rng.choice(SIZES)}",
              f"  shm_size: {rng.choice([8, 16, 32])}g", "limits:", f"  timeout: {rng.randint(60, 36000)}",
              "environment_variables:", "  NCCL_DEBUG: INFO", "tags:", f"  run: '{i}'"]
    if rng.random() < 0.1:  # some mistakes, as a real repository has
        lines[lines.index("resources:") + 1] = "  instance_count: 0"
    return "\n".join(lines) + "\n"


def _component(rng, i):
    return "\n".join([
        "$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json",
        "type: command", f"name: bench_component_{i}", f"version: {rng.randint(1, 9)}",
        f"display_name: Bench component {i}", "inputs:", "  data:", "    type: uri_folder",
        "  lr:", "    type: number", "    default: 0.01", "  resume:", "    type: uri_file", "    optional: true",
        "outputs:", "  model:", "    type: uri_folder",
        "command: >-", "  python train.py --data ${{inputs.data}} --lr ${{inputs.lr}}",
        "  $[[--resume ${{inputs.resume}}]] --model ${{outputs.model}}",
        "environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1:1",
        "distribution:", "  type: pytorch", f"  process_count_per_instance: {rng.choice([1, 2, 4, 8])}",
        "resources:", f"  instance_count: {rng.randint(1, 2)}",
    ]) + "\n"


def _pipeline(rng, i, component_file):
    return "\n".join([
        "$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json",
        "type: pipeline", f"display_name: bench-pipeline-{i}", "settings:", "  default_compute: azureml:gpu-cluster",
        "inputs:", "  training_data:", "    type: uri_folder", f"    path: azureml:dataset-{i}@latest",
        "jobs:", "  train:", "    type: command", f"    component: ./{component_file}",
        "    inputs:", "      data: ${{parent.inputs.training_data}}", f"      lr: {rng.choice([0.1, 0.01])}",
        "    resources:", f"      instance_count: {rng.randint(1, 4)}",
        "    distribution:", "      type: pytorch", f"      process_count_per_instance: {rng.choice([1, 2, 4])}",
        "  report:", "    type: command", "    command: ls ${{inputs.model}}",
        "    environment: azureml:AzureML-sklearn-1.5:1", "    inputs:",
        "      model: ${{parent.jobs.train.outputs.model}}",
    ]) + "\n"


def _legacy(rng, i):
    return "\n".join([
        "$schema: https://componentsdk.azureedge.net/jsonschema/DistributedComponent.json",
        f"name: bench.legacy_{i}", "version: 0.0.1", "type: DistributedComponent",
        "inputs:", "  data:", "    type: path", "  flags:", "    type: String", "    optional: true",
        "outputs:", "  out:", "    type: path", "launcher:", f"  type: {rng.choice(['mpi', 'torch.distributed'])}",
        "  additional_arguments: >-", "    python train.py --data {inputs.data} [--flags {inputs.flags}]",
        "    --out {outputs.out}", "environment:", "  name: AzureML-Minimal",
    ]) + "\n"


def generate(folder: Path, count: int, seed: int = 2) -> list[tuple[str, str]]:
    """(path, kind) of every generated file; kinds are amldist's (for the azure loop's loader)."""
    rng = random.Random(seed)
    files = []
    for i in range(count):
        pick = i % 6
        if pick in (0, 1, 2):
            name, text, kind = f"job_{i}.yml", _job(rng, i), "command_job"
        elif pick == 3:
            name, text, kind = f"component_{i}.yml", _component(rng, i), "command_component"
        elif pick == 4:
            (folder / f"component_{i}.yml").write_text(_component(rng, i))
            files.append((str(folder / f"component_{i}.yml"), "command_component"))
            name, text, kind = f"pipeline_{i}.yml", _pipeline(rng, i, f"component_{i}.yml"), "pipeline_job"
        else:
            name, text, kind = f"legacy_{i}.yaml", _legacy(rng, i), "distributed_component"
        (folder / name).write_text(text)
        files.append((str(folder / name), kind))
    return files[:count]


def add_conformance(folder: Path) -> list[tuple[str, str]]:
    source = CONFORMANCE / "valid"
    if not source.is_dir():
        return []
    sys.path.insert(0, str(ROOT))
    from amldist.model.kinds import detect_kind
    from amldist.model.yamlio import load_yaml

    target = folder / "conformance"
    shutil.copytree(source, target)
    found = []
    for path in sorted(target.rglob("*.y*ml")):
        kind = detect_kind(load_yaml(path.read_text()).data)
        if kind:
            found.append((str(path), kind))
    return found


# ---- measuring ----

def amldist_cmd() -> list[str]:
    script = Path(sys.executable).with_name("amldist")
    return [str(script)] if script.exists() else [sys.executable, "-m", "amldist"]


def timed(argv, timeout=600, env=None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    return time.perf_counter() - start, proc


def median_of(runs: int, *commands):
    """Interleaved runs of several commands; the median wall time of each."""
    times = [[] for _ in commands]
    for _ in range(runs):
        for slot, argv in enumerate(commands):
            seconds, proc = timed(argv)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(argv[:4])}... exited {proc.returncode}: {proc.stderr[-400:]}")
            times[slot].append(seconds)
    return [statistics.median(t) for t in times]


def compare(amldist, files, listing: Path, runs: int, env, label: str) -> float:
    """Median wall time of one amldist process vs one azure-ai-ml loop over ``files``; prints the ratio."""
    listing.write_text(json.dumps(files))
    ours, theirs = [], []
    for _ in range(runs):
        seconds, proc = timed([*amldist, "validate", "-q", "--format", "json", *[f for f, _ in files]])
        if proc.returncode not in (0, 1):
            raise SystemExit(f"amldist validate exited {proc.returncode}: {proc.stderr[-400:]}")
        ours.append(seconds)
        report = json.loads(proc.stdout)["summary"]
        seconds, proc = timed([sys.executable, "-c", AZURE_LOOP, str(listing)], env=env)
        if proc.returncode != 0:
            raise SystemExit(f"azure loop failed: {proc.stderr[-800:]}")
        theirs.append(seconds)
        azure = json.loads(proc.stdout.strip().splitlines()[-1])
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    kinds = ", ".join(f"{kind} {1000 * s / n:.0f} ms" for kind, (s, n) in sorted(azure["per_kind"].items()))
    print(f"-- {len(files)} files, {label}")
    print(f"amldist validate, one process:   {ours_s:7.3f} s  ({report['errors']} errors, "
          f"{report['warnings']} warnings)")
    print(f"azure-ai-ml load + _validate():  {theirs_s:7.3f} s  (import {azure['import_s']:.2f} s, "
          f"loop {azure['loop_s']:.2f} s; per file: {kinds}; {azure['failed']} files raised)")
    speedup = theirs_s / ours_s
    print(f"speed-up: {speedup:.1f}x  (whole processes, start-up included; informative)")
    return speedup


def command_jobs(folder: Path, count: int, runs: int, env, amldist) -> float:
    """The target measurement (1. in the module docstring); prints and returns the speed-up."""
    rng = random.Random(5)
    paths = []
    for i in range(count):
        (folder / f"cj_{i}.yml").write_text(_job(rng, i))
        paths.append(str(folder / f"cj_{i}.yml"))
    listing = folder / "command-jobs.json"
    listing.write_text(json.dumps(paths))
    ours, theirs, whole_ours, whole_theirs = [], [], [], []
    for _ in range(runs):
        for script, samples, environ in ((AMLDIST_WARM, ours, None), (AZURE_WARM, theirs, env)):
            _, proc = timed([sys.executable, "-c", script, str(listing)], env=environ)
            if proc.returncode != 0:
                raise SystemExit(f"warm loop failed: {proc.stderr[-800:]}")
            samples.append(json.loads(proc.stdout.strip().splitlines()[-1])["loop_s"])
        whole_ours.append(timed([*amldist, "validate", "-q", *paths])[0])
        azure_listing = folder / "command-jobs-kinds.json"
        azure_listing.write_text(json.dumps([(p, "command_job") for p in paths]))
        whole_theirs.append(timed([sys.executable, "-c", AZURE_LOOP, str(azure_listing)], env=env)[0])
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    speedup = theirs_s / ours_s
    print(f"-- {count} command jobs, each side warm in its own process (start-up: see the last lines)")
    print(f"amldist validate_file:           {ours_s:7.3f} s  ({1000 * ours_s / count:.2f} ms a job)")
    print(f"azure-ai-ml load_job+_validate:  {theirs_s:7.3f} s  ({1000 * theirs_s / count:.2f} ms a job)")
    print(f"speed-up: {speedup:.1f}x  (target >= 50x: {'yes' if speedup >= 50 else 'NO'})")
    whole = statistics.median(whole_theirs) / statistics.median(whole_ours)
    print(f"the same {count} files as whole processes, start-up included: {whole:.1f}x")
    return speedup


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300, help="generated specs (default 300)")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median; default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny run to check the script works")
    parser.add_argument("--keep", help="generate into this folder and keep it")
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.runs = 12, 1
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="amldist-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        files = generate(folder, args.count)
        if not args.quick:
            files += add_conformance(folder)
        import compileall

        compileall.compile_dir(str(ROOT / "amldist"), quiet=1)
        env = {**os.environ, "AZURE_ML_INTERNAL_COMPONENTS_ENABLED": "true"}
        amldist = amldist_cmd()
        print(f"{len(files)} specs in {folder}; {args.runs} runs each; python {sys.version.split()[0]}")

        command_jobs(folder, 12 if args.quick else 300, args.runs, env, amldist)
        compare(amldist, files, folder / "files.json", args.runs, env, "all specs")
        no_pipelines = [(f, k) for f, k in files if k != "pipeline_job"]
        if not args.quick:
                compare(amldist, no_pipelines, folder / "files-no-pipelines.json", args.runs, env,
                    "without pipeline jobs (azure-ai-ml's slowest kind)")

        one = files[0][0]
        version_s, one_s, import_s = median_of(
            args.runs, [*amldist, "--version"], [*amldist, "validate", "-q", one],
            [sys.executable, "-c", "import azure.ai.ml"])
        print(f"python -c 'import azure.ai.ml':  {import_s:7.3f} s")
        for label, seconds in (("amldist --version", version_s), ("amldist validate one.yaml", one_s)):
            ratio = seconds / import_s
            print(f"{label + ':':32s} {seconds:7.3f} s  = {ratio:.3f}x of the import "
                  f"(target <= 0.08: {'yes' if ratio <= 0.08 else 'NO'})")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
