"""The fault matrix: a real 2 x 2 gloo job through ``amldist submit --local`` for each way one rank can break the
job, and the rank named is the culprit everywhere a user looks: the run's ``error:`` line, ``amldist job show``,
and ``amldist job diagnose`` (whose ``where:`` is the user's own file, not the run folder's copy).

Each case is one run in the default suite (about 30 s each on 2 cores: startup, then the stall watchdog's 8 s for
the cases that hang); ``--attack-long`` (or AMLDIST_ATTACK_LONG=1) repeats each on other seeded ranks.
"""

from __future__ import annotations

import json
import os
import random
import re
import textwrap

import pytest

from tests.conftest import skip_module_without

skip_module_without("torch", reason="the ranks form a gloo group")

# Every rank runs six all-reduces; on step 3 the target rank breaks the job as MODE says.
TRAIN = textwrap.dedent('''\
    import os, sys, time
    import torch
    import torch.distributed as dist
    from amldist.runtime import destroy, init_distributed

    mode, target, rank = os.environ["MODE"], int(os.environ["TARGET"]), int(os.environ["RANK"])
    init_distributed(timeout=60)
    t = torch.ones(4)


    def step(i):
        if rank == target and i == 3:
            if mode == "mismatch":
                dist.broadcast(t, 0)  # the others all_reduce
                return
            if mode == "skip":
                return  # one all_reduce fewer: every later call is out of step
            if mode == "raise":
                raise ValueError("bad batch on purpose")
            if mode == "kill":
                os.kill(os.getpid(), 9)
            if mode == "hang":
                time.sleep(600)  # outside any collective
            if mode == "exit0":
                sys.exit(0)  # content, while the others wait
        dist.all_reduce(t)


    for i in range(6):
        step(i)
    destroy()
''')

# mode -> the causes the culprit may be given (skip: out of step at the barrier, or behind)
CASES = {
    "mismatch": {"collective-mismatch"},
    "skip": {"collective-mismatch", "collective-behind"},
    "raise": {"python-exception"},
    "kill": {"oom-killed"},
    "hang": {"stall"},
    "exit0": {"left-early"},
}
WITH_FRAME = {"mismatch", "skip", "raise", "hang"}  # where the culprit was is known (a traceback, a stack, a dump)


def long_tier() -> bool:
    return bool(os.environ.get("AMLDIST_ATTACK_LONG"))


def draws() -> list:
    """(mode, target rank, seed): once per mode by default, three seeds each in the long tier."""
    seeds = range(3) if long_tier() else range(1)
    return [(mode, random.Random(f"{mode}-{seed}").randint(1, 3), seed) for mode in CASES for seed in seeds]


def write_job(folder, mode: str, target: int) -> str:
    (folder / "src").mkdir(exist_ok=True)
    (folder / "src" / "train.py").write_text(TRAIN)
    path = folder / f"{mode}.yml"
    path.write_text(textwrap.dedent(f"""\
        type: command
        code: src
        command: python train.py
        environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
        environment_variables:
          MODE: {mode}
          TARGET: "{target}"
          AMLDIST_STALL_TIMEOUT: "8"
        distribution:
          type: pytorch
          process_count_per_instance: 2
        resources:
          instance_count: 2
        limits:
          timeout: 300
        """))
    return path.name


@pytest.fixture(autouse=True)
def _long_tier_from_option(pytestconfig, monkeypatch):
    if pytestconfig.getoption("--attack-long", default=False):
        monkeypatch.setenv("AMLDIST_ATTACK_LONG", "1")


@pytest.mark.parametrize("mode,target,seed", draws(), ids=lambda v: str(v))
def test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose(cli, tmp_path, monkeypatch, mode,
                                                                               target, seed):
    monkeypatch.chdir(tmp_path)
    name = f"{mode}-{seed}"
    code, out, err = cli("submit", write_job(tmp_path, mode, target), "--local", "--name", name)
    assert code == 1, err[-3000:]
    error_line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert error_line.startswith(f"error: rank {target} of job {name}: "), err[-3000:]
    assert any(error_line.startswith(f"error: rank {target} of job {name}: {cause}: ") for cause in CASES[mode])
    assert f"{os.sep}.amldist{os.sep}runs{os.sep}" not in error_line  # paths are the user's, not the run's copy

    code, shown, _ = cli("job", "show", name)
    assert f"error: rank {target}: " in shown  # job show agrees with the first screen
    assert error_line.split(": ", 2)[2].split("; the other processes")[0] in shown

    code, out, _ = cli("job", "diagnose", name, "--format", "json")
    data = json.loads(out)
    first = data["first_failure"]
    assert (first["rank"], code) == (target, 0)
    assert first["signature"] in CASES[mode]
    assert data["evidence"]
    if mode in WITH_FRAME:
        path = re.match(r'File "([^"]+)"', first["frame"]).group(1)
        assert path == str(tmp_path / "src" / "train.py")  # the user's file, not .amldist/runs/NAME/code/
    if mode != "kill":  # a rank killed by SIGKILL leaves no evidence of its own; the others do
        assert data["evidence"].startswith("flight recorder of 4 ranks")
    assert sorted(os.listdir(tmp_path / ".amldist" / "runs" / name / "user_logs" / "amldist"))  # the dumps


@pytest.mark.parametrize("explain, named", [
    (lambda run_dir: ("rank 0", "collective-behind: rank 0 never entered collective #4"), "rank 0"),
    (lambda run_dir: None, "rank 1"),  # no cause found: the first process that exited, as before
    (lambda run_dir: 1 / 0, "rank 1"),  # a diagnosis that fails never changes how the run ends
])
def test_the_error_line_and_status_json_follow_the_explainer_or_fall_back(tmp_path, explain, named):
    import io

    from amldist.backends.local.plan import plan
    from amldist.backends.local.records import read_record
    from amldist.backends.local.supervisor import launch
    from amldist.submit.prepare import prepare
    from amldist.submit.prepared import SubmitOptions

    (tmp_path / "job.yml").write_text(textwrap.dedent("""\
        type: command
        command: if [ "$RANK" = 1 ]; then exit 3; fi; sleep 30
        environment: azureml:AzureML-sklearn-1.5@latest
        distribution: {type: pytorch, process_count_per_instance: 2}
        """))
    options = SubmitOptions(run_root=str(tmp_path / "runs"), grace_seconds=0.5, status_line=False)
    p = plan(prepare(str(tmp_path / "job.yml")), options)
    p.explain = explain
    err = io.StringIO()
    assert launch(p, out=io.StringIO(), err=err) == 1
    error_line = next(line for line in err.getvalue().splitlines() if line.startswith("error:"))
    assert error_line.startswith(f"error: {named} of job {p.job_name}")
    assert read_record(p.run_dir).error.startswith(named)  # what `amldist job show` prints
