"""The local plan: every rank's command, environment and log, computed without starting anything."""

from __future__ import annotations

import json
import os
import sys

import pytest

from amldist.submit.prepared import Prepared, SubmitOptions
from amldist.engine.launchers import python_path
from amldist.backends.local.plan import describe, plan
from amldist.errors import UserError
from amldist.model import loads

from tests.backends.local.helpers import write_job

SHELL_ENV = {"PATH": os.environ["PATH"], "HOME": "/home/me", "FOO": "kept",
             # leftovers of other launchers in the shell that runs amldist: none may reach a rank
             "RANK": "7", "WORLD_SIZE": "9", "MASTER_ADDR": "10.0.0.9", "LOCAL_WORLD_SIZE": "3",
             "TORCHELASTIC_RUN_ID": "x", "SLURM_PROCID": "2", "OMPI_COMM_WORLD_RANK": "5", "PMI_RANK": "1",
             "TF_CONFIG": "{}", "AZ_BATCH_MASTER_NODE": "10.0.0.1:6000", "GROUP_RANK": "1"}


def make_plan(tmp_path, body: str, *, mpirun=None, name=None, environ=SHELL_ENV):
    path = write_job(tmp_path, body)
    job = loads(path.read_text(), file=str(path))
    options = SubmitOptions(run_root=str(tmp_path / "runs"), name=name)
    return plan(Prepared(job, str(path), str(tmp_path)), options, environ=environ, mpirun=mpirun)


def test_pytorch_ranks_get_exactly_azure_mls_variables(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: pytorch, process_count_per_instance: 2}
        resources: {instance_count: 2}
        """)
    assert [r.label for r in p.ranks] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    port = p.ranks[0].env["MASTER_PORT"]
    for index, rank in enumerate(p.ranks):
        node, local = divmod(index, 2)
        assert rank.added == {
            "PATH": python_path(os.environ["PATH"], sys.executable, os.path.join(p.run_dir, "bin")),
            "AZUREML_RUN_ID": p.job_name, "AZUREML_NODE_COUNT": "2",
            # amldist's own: where the runtime shim leaves each rank's evidence for `job diagnose`
            "AMLDIST_EVIDENCE_DIR": os.path.join(p.run_dir, "user_logs", "amldist"),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "WORLD_SIZE": "4",
            "NODE_RANK": str(node), "RANK": str(index), "LOCAL_RANK": str(local),
        }
        expected_env = {"PATH": os.environ["PATH"], "HOME": "/home/me", "FOO": "kept", **rank.added}
        assert rank.env == expected_env
        assert rank.cwd == os.path.join(p.run_dir, "code")
        assert rank.log_path == os.path.join(p.run_dir, "user_logs", f"std_log_process_0{index}.txt")
        assert rank.argv[1:] == ["-c", "python worker.py"]
    assert port == "<free port 0>" and p.ports == 1  # chosen when the run starts (launchers.bind_ports)
    assert p.processes is p.ranks
    assert set(p.removed) == set(SHELL_ENV) - {"PATH", "HOME", "FOO"}


@pytest.mark.parametrize("world, names", [
    (1, ["std_log_process_0.txt"]),
    (3, ["std_log_process_00.txt", "std_log_process_01.txt", "std_log_process_02.txt"]),
    (11, [f"std_log_process_{i:02d}.txt" for i in range(11)]),
])
def test_log_names_follow_azure_ml(tmp_path, world, names):
    p = make_plan(tmp_path, f"""
        command: echo hi
        distribution: {{type: pytorch, process_count_per_instance: {world}}}
        """)
    assert [os.path.basename(r.log_path) for r in p.ranks] == names


def test_mpi_on_one_node_runs_the_real_mpirun(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: mpi, process_count_per_instance: 3}
        """, mpirun="/opt/bin/mpirun")
    (launcher,) = p.processes
    assert launcher.argv[:3] == ["/opt/bin/mpirun", "-np", "3"] and "--oversubscribe" in launcher.argv
    assert launcher.env["AZ_BATCHAI_MPI_MASTER_NODE"] == "127.0.0.1"
    assert not any(k.startswith("OMPI_COMM_WORLD") for k in launcher.env)  # mpirun sets those itself
    assert launcher.log_path.endswith(os.path.join("user_logs", "mpi_log.txt"))
    assert "python worker.py" in launcher.argv[-1] and "std_log_process_" in launcher.argv[-1]
    assert [r.added["OMPI_COMM_WORLD_RANK"] for r in p.ranks] == ["0", "1", "2"]
    assert {r.added["OMPI_COMM_WORLD_LOCAL_SIZE"] for r in p.ranks} == {"3"}


def test_mpi_on_several_nodes_is_one_mpirun_with_the_nodes_as_hosts(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: mpi, process_count_per_instance: 2}
        resources: {instance_count: 2}
        """, mpirun="/opt/bin/mpirun")
    assert len(p.ranks) == 4 and len(p.processes) == 1
    argv = p.processes[0].argv
    assert argv[:3] == ["/opt/bin/mpirun", "-np", "4"]
    assert argv[argv.index("--host") + 1] == "amldist-node-0:2,amldist-node-1:2"
    assert "mpi_agent.py" in argv[argv.index("plm_rsh_agent") + 1]  # daemons started here, not over ssh
    master = f"127.0.0.1:{p.busy_port}"
    for index, rank in enumerate(p.ranks):
        local = index % 2
        assert {k: v for k, v in rank.added.items() if not k.startswith(("AZUREML_", "AMLDIST_")) and k != "PATH"} == {
            "OMPI_COMM_WORLD_RANK": str(index), "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": str(local), "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
            "OMPI_COMM_WORLD_NODE_RANK": str(local), "AZ_BATCH_MASTER_NODE": master,
        }
        assert "AZ_BATCHAI_MPI_MASTER_NODE" not in rank.env


def test_mpi_without_mpirun_falls_back_to_the_emulation_with_a_note(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: mpi, process_count_per_instance: 2}
        """, mpirun=None)
    assert p.processes is p.ranks
    assert [r.added["OMPI_COMM_WORLD_RANK"] for r in p.ranks] == ["0", "1"]
    assert p.ranks[0].added["AZ_BATCHAI_MPI_MASTER_NODE"] == "127.0.0.1"
    assert any("mpirun was not found" in note for note in p.notes)


def test_tensorflow_gets_one_process_per_task_with_tf_config(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        distribution: {type: tensorflow, worker_count: 2, parameter_server_count: 1}
        resources: {instance_count: 2}
        """)
    configs = [json.loads(r.added["TF_CONFIG"]) for r in p.ranks]
    assert [c["task"] for c in configs] == [{"type": "worker", "index": 0}, {"type": "worker", "index": 1},
                                           {"type": "ps", "index": 0}]
    cluster = configs[0]["cluster"]
    assert all(c["cluster"] == cluster and c["environment"] == "cloud" for c in configs)
    assert len(cluster["worker"]) == 2 and len(cluster["ps"]) == 1
    assert len(set(cluster["worker"] + cluster["ps"])) == 3
    assert [os.path.basename(r.log_path) for r in p.ranks] == [
        "std_log_node_00_worker.txt", "std_log_node_01_worker.txt", "std_log_node_00_ps.txt"]
    assert all("RANK" not in r.env and "MASTER_ADDR" not in r.env for r in p.ranks)


def test_inputs_are_passed_as_variables_optional_groups_dropped_and_outputs_placed_in_the_run_folder(tmp_path):
    (tmp_path / "data").mkdir()
    p = make_plan(tmp_path, """
        command: >-
          python worker.py --msg ${{inputs.msg}} --data ${{inputs.data}}
          $[[--lr ${{inputs.lr}}]] --out ${{outputs.model}}
        inputs:
          msg: "x; touch pwned"
          data: {type: uri_folder, path: ./data}
          lr: {type: number, optional: true}
        outputs:
          model: {type: uri_folder}
        """)
    out = os.path.join(p.run_dir, "outputs", "model")
    assert p.command == ('python worker.py --msg ${AMLDIST_IN_0_msg} --data "${AMLDIST_IN_1_data}" '
                         '--out "${AMLDIST_OUT_2_model}"')
    assert all(r.env["AMLDIST_IN_0_msg"] == "x; touch pwned" and r.env["AMLDIST_IN_1_data"] == str(tmp_path / "data")
               and r.env["AMLDIST_OUT_2_model"] == out for r in p.ranks)
    assert p.outputs == {"model": (out, "uri_folder")}


def test_a_uri_file_input_is_the_absolute_path_of_a_local_file(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("x,y\n")
    p = make_plan(tmp_path, """
        command: python worker.py --data ${{inputs.table}}
        inputs:
          table: {type: uri_file, path: data/train.csv}
        """)
    assert p.command == 'python worker.py --data "${AMLDIST_IN_0_table}"'
    assert p.ranks[0].env["AMLDIST_IN_0_table"] == str(tmp_path / "data" / "train.csv")


def test_defaults_are_the_documented_ones():
    """README: run folders under ./.amldist/runs, a 5 s grace before SIGTERM, a status line only on a terminal."""
    options = SubmitOptions()
    assert (options.run_root, options.grace_seconds, options.status_line) == (".amldist/runs", 5.0, None)


@pytest.mark.parametrize("inputs, words", [
    ("data: {type: uri_folder, path: ./missing}", "does not exist"),
    ("data: {type: uri_file, path: azureml:cifar:1}", "not on this machine"),
    ("data: {type: uri_file, path: ./src}", "is a folder"),
])
def test_bad_data_inputs_give_one_clear_error(tmp_path, inputs, words):
    with pytest.raises(UserError) as info:
        make_plan(tmp_path, f"""
            command: python worker.py --data ${{{{inputs.data}}}}
            inputs:
              {inputs}
            """)
    assert "input 'data'" in str(info.value) and words in str(info.value)


def test_names_are_unique_and_plans_create_nothing(tmp_path):
    body = "command: echo hi\n"
    first = make_plan(tmp_path, body)
    second = make_plan(tmp_path, body)
    assert first.job_name != second.job_name
    assert not (tmp_path / "runs").exists()  # planning wrote nothing
    (tmp_path / "runs" / "taken").mkdir(parents=True)
    with pytest.raises(UserError, match="already exists"):
        make_plan(tmp_path, body, name="taken")
    with pytest.raises(UserError, match="not valid"):
        make_plan(tmp_path, body, name="../escape")


def test_a_distribution_type_the_local_backend_does_not_know_is_one_line(tmp_path):
    # a Prepared built by hand (the Python API) skips validation: the planner still names what runs locally
    with pytest.raises(UserError, match="not emulated") as caught:
        make_plan(tmp_path, "command: echo hi\ndistribution: {type: horovod}\n")
    assert "pytorch, mpi, tensorflow and ray run locally" in caught.value.hint


def test_dry_run_text_masks_secrets_and_shows_every_rank(tmp_path):
    p = make_plan(tmp_path, """
        command: python worker.py
        environment_variables:
          HF_TOKEN: hf_abcdef
          storage_account_key: k3y
          DB_PASSWORD: pw
          SAS_URL: https://x?sig=1
          AZURE_STORAGE_CONNECTION_STRING: cs
          VISIBLE: shown
        distribution: {type: pytorch, process_count_per_instance: 2}
        """)
    text = describe(p)
    for secret in ("hf_abcdef", "k3y", "=pw", "sig=1", "=cs"):
        assert secret not in text
    for name in ("HF_TOKEN", "storage_account_key", "DB_PASSWORD", "SAS_URL", "AZURE_STORAGE_CONNECTION_STRING"):
        assert f"{name}='***'" in text
    assert "VISIBLE=shown" in text
    assert "RANK=0 LOCAL_RANK=0 python worker.py" in text and "RANK=1 LOCAL_RANK=1 python worker.py" in text


def test_ports_are_chosen_when_the_run_starts_so_the_plan_is_pure(tmp_path):
    from amldist.backends.local.plan import with_ports

    body = """
        command: python worker.py
        distribution: {type: tensorflow, worker_count: 2, parameter_server_count: 1}
        """
    first, second = make_plan(tmp_path, body), make_plan(tmp_path, body)
    configs = lambda plan: [r.env["TF_CONFIG"] for r in plan.ranks]
    assert configs(first) == configs(second)  # nothing of the machine's moment in it
    assert first.ports == 3 and "<free port 2>" in first.ranks[0].env["TF_CONFIG"]
    assert "ports: 3, each chosen free" in describe(first)
    bound = with_ports(first, [4001, 4002, 4003])
    config = json.loads(bound.ranks[2].env["TF_CONFIG"])
    assert config["cluster"] == {"worker": ["127.0.0.1:4001", "127.0.0.1:4002"], "ps": ["127.0.0.1:4003"]}
    assert bound.ports == 0 and "<free port" not in json.dumps([r.env for r in bound.ranks])
