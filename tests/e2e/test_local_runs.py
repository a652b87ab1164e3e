"""Local runs with real processes: what ranks see, how failures and timeouts end a run."""

from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from amldist.submit.prepared import SubmitOptions
from amldist.azure_sdk.code_snapshot import build_snapshot
from amldist.backends.local.backend import LocalBackend
from amldist.backends.local.plan import plan
from amldist.backends.local.supervisor import launch
from amldist.submit.prepare import prepare

from tests.backends.local.helpers import recorded_pids, survivors, worker_job, write_job

SHELL_ONLY = {"PWD", "OLDPWD", "SHLVL", "_", "LC_CTYPE",  # bash and Python's locale coercion add these
              "AMLDIST_RUN_MARKER"}  # amldist's own: finds the run's daemons at the end (process_groups)


def options(tmp_path, **kw):
    return SubmitOptions(run_root=str(tmp_path / "runs"), grace_seconds=kw.pop("grace_seconds", 0.5),
                         status_line=kw.pop("status_line", False), **kw)


def run_local(tmp_path, path, **kw):
    """prepare -> plan -> launch the job at ``path`` in this process; ``code``, ``plan``, ``out``, ``err``."""
    prepared = prepare(str(path))
    opts = options(tmp_path, **kw)
    p = plan(prepared, opts)
    out, err = io.StringIO(), io.StringIO()
    code = launch(p, out=out, err=err)
    return SimpleNamespace(code=code, plan=p, out=out.getvalue(), err=err.getvalue())


def ports_as_seen(planned: dict, seen: dict) -> dict:
    """``planned`` with each port token (launchers.port_token: bound when the run starts) as the rank saw it,
    once the rank's value is checked to be the planned one with a port in each token's place."""
    from amldist.engine.launchers import PORT_VARIABLES

    expected = dict(planned)
    for key in PORT_VARIABLES:
        if key in expected and "<free port" in expected[key]:
            pattern = re.sub(r"<free port \d+>", r"\\d+", re.escape(expected[key]).replace(r"\ ", " "))
            assert re.fullmatch(pattern, seen.get(key, "")), (key, expected[key], seen.get(key))
            expected[key] = seen[key]
    return expected


@pytest.mark.parametrize("dist, nodes, per_node", [("pytorch", 2, 2), ("mpi", 1, 2), ("mpi", 2, 1)])
def test_ranks_see_the_shell_environment_plus_exactly_the_planned_variables(tmp_path, monkeypatch, dist, nodes,
                                                                            per_node):
    monkeypatch.setenv("RANK", "99")  # a leftover of an outer launcher
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("AMLDIST_TEST_KEPT", "yes")
    run = run_local(tmp_path, worker_job(tmp_path, mode="env", dist=dist, nodes=nodes, per_node=per_node))
    assert run.code == 0, run.err
    p = run.plan
    dumps = {int(f.name.split(".")[0]): json.loads(f.read_text()) for f in (tmp_path / "pids").glob("*.env.json")}
    assert sorted(dumps) == list(range(nodes * per_node))
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "SLURM_PROCID")}
    for rank, dump in dumps.items():
        env = {k: v for k, v in dump["env"].items() if k not in SHELL_ONLY}
        expected = ports_as_seen(p.ranks[rank].added, env)
        extra = {k: v for k, v in env.items() if k not in base or base[k] != v}
        if p.processes is not p.ranks:  # under the real mpirun: Open MPI adds its own plumbing
            # DYLD_LIBRARY_PATH: set by the daemon's command on every host but mpirun's own (ssh or the local agent)
            plumbing = ("OMPI_", "PMIX_", "PRTE_", "HWLOC_", "OPAL_", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")
            extra = {k: v for k, v in extra.items() if not k.startswith(plumbing) or k.startswith("OMPI_COMM_WORLD_")}
            extra.pop("OMPI_COMM_WORLD_NODE_RANK", None)  # mpirun's own value; not a variable Azure documents
            expected = {k: v for k, v in expected.items() if k != "OMPI_COMM_WORLD_NODE_RANK"}
        assert extra == expected
        assert "RANK" not in env or env["RANK"] == expected.get("RANK")
        assert "SLURM_PROCID" not in env
        assert env["AMLDIST_TEST_KEPT"] == "yes"
        assert dump["cwd"] == os.path.join(p.run_dir, "code")


def test_a_failing_rank_stops_the_others_and_reports_its_log(tmp_path):
    path = worker_job(tmp_path, mode="fail", nodes=2, per_node=2, fail_rank=2)
    started = time.monotonic()
    run = run_local(tmp_path, path)
    assert run.code == 1
    assert time.monotonic() - started < 30  # not the 120 s the others would sleep
    assert "rank 2 of job" in run.err and "exited with code 3" in run.err
    assert "boom: failing on purpose" in run.err  # the tail of its log
    pids = recorded_pids(tmp_path / "pids")
    assert len(pids) == 8  # 4 ranks and their 4 grandchildren
    assert survivors(pids) == []


def test_a_rank_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    pid_dir = tmp_path / "pids"
    path = write_job(tmp_path, f"""
        command: >-
          if [ "$RANK" = 1 ]; then while [ ! -f {pid_dir}/0.pids ]; do sleep 0.05; done; exit 3; fi;
          trap '' TERM; sleep 120 & echo "$$ $!" > {pid_dir}/0.tmp; mv {pid_dir}/0.tmp {pid_dir}/0.pids; wait
        distribution: {{type: pytorch, process_count_per_instance: 2}}
        limits: {{timeout: 60}}
        """)
    started = time.monotonic()
    run = run_local(tmp_path, path)
    assert run.code == 1
    assert "rank 1 of job" in run.err and "exited with code 3" in run.err
    assert time.monotonic() - started < 30  # SIGKILL after the grace period, not the job's timeout
    pids = recorded_pids(pid_dir)
    assert len(pids) == 2  # rank 0's shell and its sleep, both deaf to SIGTERM
    assert survivors(pids, timeout=0) == []


def test_a_failing_rank_under_mpirun_stops_every_rank(tmp_path):
    run = run_local(tmp_path, worker_job(tmp_path, mode="fail", dist="mpi", per_node=3, fail_rank=1))
    assert run.code == 1
    assert "rank 1 of job" in run.err, run.err
    pids = recorded_pids(tmp_path / "pids")
    assert len(pids) >= 2  # the failing rank at least; others may be stopped before they wrote theirs
    assert survivors(pids) == []


def test_a_hanging_job_ends_at_its_timeout(tmp_path):
    path = worker_job(tmp_path, mode="hang", per_node=2, extra="limits: {timeout: 3}\n")
    started = time.monotonic()
    run = run_local(tmp_path, path)
    assert run.code == 1
    assert 3 <= time.monotonic() - started < 30
    assert "limits.timeout (3s)" in run.err
    pids = recorded_pids(tmp_path / "pids")
    assert len(pids) == 4
    assert survivors(pids) == []


def test_background_processes_left_by_a_finished_command_are_stopped(tmp_path):
    marker = tmp_path / "bg.pid"
    path = write_job(tmp_path, f"command: sleep 120 & echo $! > {marker}; exit 0\n")
    prepared = prepare(str(path))
    backend = LocalBackend()
    assert backend.run(backend.plan(prepared, options(tmp_path))).status == "Completed"
    assert survivors([int(marker.read_text())]) == []


def test_stream_copies_every_ranks_output_prefixed_with_its_rank(tmp_path):
    run = run_local(tmp_path, worker_job(tmp_path, mode="ok", per_node=2), stream=True)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert "[rank 0] rank 0 started" in lines and "[rank 1] rank 1 started" in lines
    assert survivors(recorded_pids(tmp_path / "pids")) == []  # the ranks' sleeping children too


def test_the_status_line_is_drawn_only_when_asked(tmp_path):
    path = write_job(tmp_path, "command: sleep 1.2\n")
    for status, expected in ((True, True), (False, False)):
        run = run_local(tmp_path, path, status_line=status)
        assert run.code == 0
        assert ("\r\x1b[K[amldist]" in run.out) is expected


def test_outputs_snapshot_and_logs_land_in_a_new_run_folder_each_time(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "keep.txt").write_text("code")
    (tmp_path / "src" / "skip.log").write_text("ignored")
    (tmp_path / "src" / ".amlignore").write_text("*.log\n")
    path = write_job(tmp_path, """
        command: >-
          cat keep.txt > ${{outputs.result}}/copy.txt && ls > listing.txt && python -c
          "import amldist.runtime, sys; print(amldist.runtime.__file__)"
        outputs:
          result: {type: uri_folder}
        """)
    runs = []
    for _ in range(2):
        run = run_local(tmp_path, path)
        assert run.code == 0
        p = run.plan
        runs.append(p.run_dir)
        assert (tmp_path / "runs" / p.job_name / "outputs" / "result" / "copy.txt").read_text() == "code"
        listing = (tmp_path / "runs" / p.job_name / "code" / "listing.txt").read_text().split()
        assert "keep.txt" in listing and "skip.log" not in listing and "amldist" in listing
        log = (tmp_path / "runs" / p.job_name / "user_logs" / "std_log.txt").read_text()
        assert log.strip() == os.path.join(p.run_dir, "code", "amldist", "runtime", "__init__.py")
        assert (tmp_path / "runs" / p.job_name / "job.yml").is_file()
    assert runs[0] != runs[1]
    assert not (tmp_path / "src" / "listing.txt").exists()  # the user's folder is only read


def test_the_shim_is_the_azure_snapshots_and_wins_over_an_installed_amldist(tmp_path):
    installed = tmp_path / "site" / "amldist"
    (installed / "runtime").mkdir(parents=True)
    (installed / "__init__.py").write_text("")  # a regular package, as pip installs it
    (installed / "runtime" / "__init__.py").write_text("raise ImportError('the installed copy was imported')\n")
    path = write_job(tmp_path, f"""
        command: python -c "import amldist.runtime as r; print(r.__file__)"
        environment_variables:
          PYTHONPATH: {tmp_path / 'site'}
        """)
    run = run_local(tmp_path, path)
    assert run.code == 0, run.err
    p = run.plan
    log = (tmp_path / "runs" / p.job_name / "user_logs" / "std_log.txt").read_text()
    assert log.strip() == os.path.join(p.run_dir, "code", "amldist", "runtime", "__init__.py")

    def shim(root):
        return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*"))
                if f.is_file() and "__pycache__" not in f.parts}

    work = tmp_path / "azure"
    work.mkdir()
    on_azure = build_snapshot(None, str(tmp_path), "python -m amldist.runtime --print", str(work))
    assert on_azure.shim_added
    assert shim(Path(p.run_dir) / "code" / "amldist") == shim(Path(on_azure.path) / "amldist")


def test_a_code_folder_holding_the_run_root_is_not_copied_into_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('ok')\n")
    path = write_job(tmp_path, "command: ls -a\n")
    path.write_text(path.read_text().replace("code: src", "code: ."))
    prepared = prepare(str(path))
    for _ in range(2):  # the second run finds the first run's folder inside the code folder
        opts = SubmitOptions(grace_seconds=0.5, status_line=False)
        p = plan(prepared, opts)
        assert launch(p, out=io.StringIO(), err=io.StringIO()) == 0
        listing = (tmp_path / ".amldist" / "runs" / p.job_name / "user_logs" / "std_log.txt").read_text().split()
        assert "train.py" in listing and ".amldist" not in listing
