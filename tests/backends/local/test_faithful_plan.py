"""What makes a local process see what it would see in its container: its python, its GPUs, a
job.yml that runs again (plans only: nothing is started)."""

from __future__ import annotations

import os
import sys

import pytest
import yaml

from amldist.engine import launchers
from amldist.backends.local.plan import describe, plan
from amldist.errors import UserError
from amldist.model import loads
from amldist.submit.prepared import Prepared, SubmitOptions

from tests.backends.local.helpers import write_job

DDP = """
    command: python worker.py
    distribution: {type: pytorch, process_count_per_instance: 2}
    resources: {instance_count: 2}
    """


def make_plan(tmp_path, body: str, *, environ=None, mpirun=None, **options):
    path = write_job(tmp_path, body)
    job = loads(path.read_text(), file=str(path))
    opts = SubmitOptions(run_root=str(tmp_path / "runs"), **options)
    environ = {"PATH": os.environ["PATH"], "CUDA_VISIBLE_DEVICES": ""} if environ is None else environ
    return plan(Prepared(job, str(path), str(tmp_path)), opts, environ=environ, mpirun=mpirun)


def test_each_emulated_node_gets_its_own_gpus(tmp_path):
    p = make_plan(tmp_path, DDP, environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert [r.env["CUDA_VISIBLE_DEVICES"] for r in p.ranks] == ["4,5", "4,5", "6,7", "6,7"]
    assert not any("GPU" in n for n in p.notes)


def test_one_node_under_mpirun_hands_its_gpus_to_mpirun(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: mpi, process_count_per_instance: 2}
        """, environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0,1"}, mpirun="/opt/bin/mpirun")
    assert p.processes[0].label == "mpirun"
    assert p.processes[0].env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_more_processes_than_gpus_is_named_in_a_note(tmp_path):
    p = make_plan(tmp_path, DDP, environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert [r.env["CUDA_VISIBLE_DEVICES"] for r in p.ranks] == ["0", "0", "1", "1"]
    note = next(n for n in p.notes if "GPU" in n)
    assert "2 node(s) x 2 process(es) on 2 GPU(s)" in note and "CUDA_VISIBLE_DEVICES= amldist submit" in note
    assert f"note: {note}" in describe(p)


def test_no_gpus_sets_nothing(tmp_path):
    p = make_plan(tmp_path, DDP, environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert all("CUDA_VISIBLE_DEVICES" not in r.added and r.env["CUDA_VISIBLE_DEVICES"] == "" for r in p.ranks)


def test_gpus_are_counted_without_torch_through_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n[ \"$1\" = -L ] || exit 9\n"
                    "echo 'GPU 0: NVIDIA H100 (UUID: GPU-a)'\necho 'GPU 1: NVIDIA H100 (UUID: GPU-b)'\n"
                    "echo 'GPU 2: NVIDIA H100 (UUID: GPU-c)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert launchers.gpu_count() == 3
    assert launchers.visible_gpus({}) == ["0", "1", "2"]
    assert launchers.visible_gpus({}, count=2) == ["0", "1"]  # an injected count
    assert launchers.visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 3"}) == ["2", "3"]  # the shell's choice wins
    assert launchers.visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []


def test_python_is_the_interpreter_amldist_runs_in_whatever_path_says(tmp_path):
    p = make_plan(tmp_path, DDP, environ={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert p.python == sys.executable
    shim = os.path.join(p.run_dir, "bin")
    expected = os.pathsep.join([shim] + ([] if os.path.dirname(sys.executable) in ("/usr/bin", "/bin")
                                         else [os.path.dirname(sys.executable)]) + ["/usr/bin", "/bin"])
    assert all(r.env["PATH"] == expected for r in p.ranks)
    assert f"python = {sys.executable}" in describe(p)


def test_python_path_keeps_an_entry_already_there_in_place():
    assert launchers.python_path("/a:/venv/bin:/b", "/venv/bin/python", "/run/bin") == "/run/bin:/a:/venv/bin:/b"
    assert launchers.python_path("/a", "/venv/bin/python", "/run/bin") == "/run/bin:/venv/bin:/a"
    assert launchers.python_path("", "/venv/bin/python", "/run/bin") == "/run/bin:/venv/bin"


def test_dash_dash_python_picks_another_interpreter(tmp_path):
    other = tmp_path / "py" / "python3.99"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    environ = {"PATH": f"{other.parent}:/usr/bin", "CUDA_VISIBLE_DEVICES": ""}
    assert make_plan(tmp_path, DDP, environ=environ, python="python3.99").python == str(other)
    assert make_plan(tmp_path, DDP, environ=environ, python=str(other)).python == str(other)
    with pytest.raises(UserError) as info:
        make_plan(tmp_path, DDP, environ=environ, python="no-such-python")
    assert "--python no-such-python" in info.value.message


def test_the_run_folders_job_yml_points_at_the_same_code_and_inputs(tmp_path):
    (tmp_path / "data").mkdir()
    p = make_plan(tmp_path, """
        command: python worker.py --data ${{inputs.data}}
        inputs:
          data: {type: uri_folder, path: ./data}
        """)
    saved = yaml.safe_load(p.job_yaml)
    assert os.path.normpath(os.path.join(p.run_dir, saved["code"])) == str(tmp_path / "src")
    assert os.path.normpath(os.path.join(p.run_dir, saved["inputs"]["data"]["path"])) == str(tmp_path / "data")
    assert saved["command"] == "python worker.py --data ${{inputs.data}}"


def test_code_slash_is_refused_before_anything_runs(tmp_path):
    path = write_job(tmp_path, "command: ls\n")
    path.write_text(path.read_text().replace("code: src", "code: /"))
    job = loads(path.read_text(), file=str(path))
    with pytest.raises(UserError) as info:
        plan(Prepared(job, str(path), str(tmp_path)), SubmitOptions(run_root=str(tmp_path / "runs")),
             environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert "filesystem root" in info.value.message and str(path) in info.value.message
    assert not (tmp_path / "runs").exists()
