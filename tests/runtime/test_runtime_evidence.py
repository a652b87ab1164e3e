"""amldist.runtime.evidence: where a rank's evidence goes and what its error file says.

A real process (not this one: the hooks are process-wide) raises after forming a world of one with gloo; its
evidence folder then holds the Flight Recorder's dump of the collectives it ran and the error file. The 2 x 2
runs where every rank dumps are tests/e2e/test_fault_matrix.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from amldist.runtime import evidence
from tests.conftest import skip_module_without

SCRIPT = textwrap.dedent('''\
    import torch
    import torch.distributed as dist
    from amldist.runtime import init_distributed

    init_distributed(backend="gloo")
    t = torch.ones(3)
    dist.all_reduce(t)
    dist.broadcast(t, 0)


    def load(batch):
        raise KeyError(f"no column {batch!r}")


    load("label")
''')


def test_the_folder_is_the_variable_else_azure_mls_logs_folder_else_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert evidence.folder_for({"AMLDIST_EVIDENCE_DIR": "/x/user_logs/amldist"}) == "/x/user_logs/amldist"
    assert evidence.folder_for({"AZUREML_RUN_ID": "job-1"}) == str(tmp_path / "logs" / "amldist")
    assert evidence.folder_for({}) is None  # a plain run writes nothing anywhere


def test_a_rank_that_raises_leaves_its_error_file_and_flight_recorder_dump(tmp_path):
    skip_module_without("torch", reason="the rank forms a gloo group")  # torch runs in the rank, not here
    (tmp_path / "train.py").write_text(SCRIPT)
    folder = tmp_path / "evidence"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_FR_", "AZUREML_", "RANK", "WORLD_"))}
    env.update({"AMLDIST_EVIDENCE_DIR": str(folder), "PYTHONPATH": os.pathsep.join(sys.path)})
    done = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "KeyError: \"no column 'label'\"" in done.stderr  # the traceback as before
    error = json.loads((folder / "rank_00.error.json").read_text())
    assert (error["rank"], error["reason"], error["exception"]) == (0, "exception", "KeyError")
    assert error["frame"] == {"file": str(tmp_path / "train.py"), "line": 12, "function": "load"}
    trace = json.loads((folder / "rank_00.fr.json").read_text())
    calls = [(e["collective_seq_id"], e["profiling_name"]) for e in trace["entries"]]
    assert calls == [(1, "gloo:all_reduce"), (2, "gloo:broadcast")]
