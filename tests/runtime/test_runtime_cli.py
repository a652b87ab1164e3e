"""``python -m amldist.runtime``: --print, errors, exec mode, and the copied-into-a-snapshot case."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import amldist.runtime
from amldist.runtime import bundle_files
from amldist.runtime.__main__ import main

KEYS = ["launcher", "rank", "local_rank", "world_size", "local_world_size", "node_rank", "num_nodes",
        "master_addr", "master_port"]
OMPI = dict(OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_SIZE="8", OMPI_COMM_WORLD_LOCAL_RANK="1",
            OMPI_COMM_WORLD_LOCAL_SIZE="2", AZ_BATCH_MASTER_NODE="10.0.0.4:6000")


def test_print_shows_the_detected_env_as_one_json_object(clean_os_environ, capsys):
    clean_os_environ.update(OMPI)
    assert main(["--print"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == dict(zip(KEYS, ["openmpi", 3, 1, 8, 2, 1, 4, "10.0.0.4", 6105], strict=True))


def test_bad_environment_prints_one_line_and_exits_2(clean_os_environ, capsys):
    clean_os_environ.update(OMPI, LOCAL_RANK="0")
    assert main(["--print"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(r"amldist\.runtime: error: .*LOCAL_RANK=0.*OMPI_COMM_WORLD_LOCAL_RANK=1.*\n", captured.err)


def test_debug_flag_prints_diagnostics(clean_os_environ, capsys):
    assert main(["--debug", "--print"]) == 0
    assert "amldist.runtime: launcher=none rank=0/1" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--bogus"], ["--"], ["--debug"]])
def test_usage_errors_exit_2(argv, clean_os_environ, capsys):
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out


def run_module(args: list[str], env: dict[str, str], cwd: Path | None = None,
               python_flags=()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *python_flags, "-m", "amldist.runtime", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def test_exec_mode_runs_the_command_with_mapped_variables(base_env):
    env = dict(base_env, **OMPI, NCCL_SOCKET_IFNAME="ib0", UCX_TLS="rc", TORCHELASTIC_USE_AGENT_STORE="True")
    show = "import os, json; print(json.dumps(dict(os.environ)))"
    result = run_module(["--", sys.executable, "-c", show], env)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert {k: seen[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
                                 "MASTER_PORT")} == {
        "RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "NODE_RANK": "1",
        "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105"}
    assert (seen["NCCL_SOCKET_IFNAME"], seen["UCX_TLS"]) == ("ib0", "rc")
    assert "TORCHELASTIC_USE_AGENT_STORE" not in seen


def test_exec_mode_debug_report_is_not_repeated_by_the_script(base_env):
    script = "from amldist.runtime import diagnostics, detect; import os; diagnostics.report(detect(), os.environ)"
    result = run_module(["--", sys.executable, "-c", script], dict(base_env, AMLDIST_DEBUG="1"))
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("visible GPUs:") == 1


def test_exec_mode_passes_the_exit_code_through(base_env):
    result = run_module(["--", sys.executable, "-c", "raise SystemExit(7)"], base_env)
    assert result.returncode == 7


def test_exec_mode_with_a_missing_command(base_env):
    result = run_module(["--", "no-such-command-amldist"], base_env)
    assert result.returncode == 127
    assert "no-such-command-amldist" in result.stderr and "Traceback" not in result.stderr


def test_exec_mode_refuses_a_bad_environment_without_running(base_env, tmp_path):
    marker = tmp_path / "ran"
    env = dict(base_env, RANK="5")
    result = run_module(["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"], env)
    assert result.returncode == 2 and not marker.exists()
    assert result.stderr.count("\n") == 1 and "RANK" in result.stderr and "Traceback" not in result.stderr


def test_copied_into_an_empty_snapshot_it_imports_and_prints_without_amldist(base_env, tmp_path):
    for destination, source in bundle_files().items():
        target = tmp_path / destination
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    assert not (tmp_path / "amldist" / "__init__.py").exists()
    env = {k: v for k, v in base_env.items() if k != "PYTHONPATH"}
    env.update(SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_LOCALID="1", SLURM_NODEID="0", SLURM_NNODES="1",
               SLURM_TASKS_PER_NODE="2", SLURM_NODELIST="n[07-08]")
    # -S: no site-packages at all, so neither an installed amldist nor any third-party module
    for flags in ((), ("-S",)):
        result = run_module(["--print"], env, cwd=tmp_path, python_flags=flags)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["master_addr"] == "n07"
    probe = "import sys, amldist.runtime as r; print(r.__file__); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-S", "-c", probe], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    module_file, torch_loaded = result.stdout.split()
    assert Path(module_file).parent == tmp_path / "amldist" / "runtime"
    assert torch_loaded == "False"
    # The submit backends add a parent package that only names the version: that works too.
    (tmp_path / "amldist" / "__init__.py").write_text('__version__ = "0"\n')
    result = run_module(["--print"], env, cwd=tmp_path, python_flags=("-S",))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["master_addr"] == "n07"


def test_bundle_files_lists_every_module_of_the_package():
    files = bundle_files()
    runtime_dir = Path(amldist.runtime.__file__).parent
    assert set(files) == {f"amldist/runtime/{p.name}" for p in runtime_dir.glob("*.py")}
    assert {"amldist/runtime/__init__.py", "amldist/runtime/__main__.py"} <= set(files)
    assert all(source.is_file() and source.parent == amldist.runtime.RUNTIME_DIR for source in files.values())


# The pre-stop hook's rule, plus: every absolute import is standard library or torch.
FORBIDDEN = re.compile(r"^\s*(from|import)\s+(azure|yaml|jsonschema|amldist\.(spec|cli|backends|builders|validate))",
                       re.MULTILINE)


INTEGRATIONS = {"lightning", "lightning_fabric"}  # runtime/frameworks.py hands the world to them


@pytest.mark.parametrize("source", sorted(bundle_files().values()), ids=lambda p: p.name)
def test_runtime_imports_only_the_standard_library_and_torch(source):
    text = source.read_text()
    assert not FORBIDDEN.search(text)
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in INTEGRATIONS:  # the frameworks a user's script brings: imported only when asked for
                assert node not in tree.body, f"{source.name} imports {name} at module level"
                continue
            assert top in sys.stdlib_module_names or top == "torch", f"{source.name} imports {name}"
