"""The launcher protocol: one small class per launcher, tried in the one order of
``detection.LAUNCHERS``; public module names, and no private name imported across modules."""

from __future__ import annotations

import ast
import inspect

import pytest

from amldist.runtime import RUNTIME_DIR, detect
from amldist.runtime.detection import LAUNCHERS
from amldist.runtime.launcher import Launcher

# One working environment per launcher, in the documented order.
SAMPLES = {
    "torchrun": dict(TORCHELASTIC_RUN_ID="r", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                     MASTER_ADDR="h"),
    "openmpi": dict(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1", OMPI_COMM_WORLD_LOCAL_RANK="0",
                    OMPI_COMM_WORLD_LOCAL_SIZE="1"),
    "mvapich": dict(MV2_COMM_WORLD_RANK="0", MV2_COMM_WORLD_SIZE="1", MV2_COMM_WORLD_LOCAL_RANK="0",
                    MV2_COMM_WORLD_LOCAL_SIZE="1"),
    "pmi": dict(PMI_RANK="0", PMI_SIZE="1", MPI_LOCALRANKID="0", MPI_LOCALNRANKS="1"),
    "slurm": dict(SLURM_PROCID="0", SLURM_NTASKS="1", SLURM_LOCALID="0", SLURM_NODEID="0", SLURM_NNODES="1",
                  SLURM_TASKS_PER_NODE="1"),
    "tf_config": dict(TF_CONFIG='{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'),
    "pytorch": dict(RANK="0", WORLD_SIZE="1"),
    "none": {},
}


def test_the_order_is_the_documented_one():
    assert [launcher.name for launcher in LAUNCHERS] == list(SAMPLES)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=lambda launcher: launcher.name)
def test_every_launcher_follows_the_protocol(launcher):
    assert issubclass(launcher, Launcher) and not inspect.isabstract(launcher)
    assert launcher.detect(SAMPLES[launcher.name]) is True
    assert detect(SAMPLES[launcher.name]).launcher == launcher.name


@pytest.mark.parametrize("position", range(len(LAUNCHERS) - 1), ids=lambda i: LAUNCHERS[i].name)
def test_each_launcher_wins_over_every_later_one(position):
    """With the variables of this launcher and of all later ones set at once, this one is picked
    (the torch variables are dropped from the later ones, since they must agree with it)."""
    names = list(SAMPLES)
    environ = {}
    for later in reversed(names[position:]):
        environ.update(SAMPLES[later])
    if names[position] != "torchrun":
        for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
            environ.pop(var, None)
    if names[position] == "pytorch":
        environ.update(SAMPLES["pytorch"])
    assert detect(environ).launcher == names[position]


def test_only_the_world_of_one_detects_an_empty_environment():
    assert [launcher.name for launcher in LAUNCHERS if launcher.detect({})] == ["none"]


MODULES = sorted(RUNTIME_DIR.glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_names_are_public_and_no_private_name_crosses_modules(path):
    assert path.name in ("__init__.py", "__main__.py") or not path.name.startswith("_")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:  # the package's own modules
            assert not (node.module or "").startswith("_"), f"{path.name} imports module {node.module}"
            private = [alias.name for alias in node.names if alias.name.startswith("_")]
            assert not private, f"{path.name} imports {private} from .{node.module or ''}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            assert owner in ("self", "cls", "sys", "os", ""), f"{path.name} uses {owner}.{node.attr}"
