"""The Slurm backend's pure plan: the sbatch options and script from the typed job, nothing started."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import pytest

from amldist.backends import get_backend
from amldist.backends.slurm import script
from amldist.errors import UserError
from amldist.submit.prepare import prepare

from tests.backends.local.helpers import SAMPLES


def make_plan(tmp_path, body: str | None = None, path=None, **options):
    if path is None:
        (tmp_path / "src").mkdir(exist_ok=True)
        path = tmp_path / "job.yml"
        path.write_text("$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
                        "type: command\ncode: src\nenvironment: azureml:AzureML-sklearn-1.5@latest\n"
                        + textwrap.dedent(body))
    backend = get_backend("slurm")
    return backend.plan(prepare(str(path)), backend.options(run_root=str(tmp_path / "runs"), **options))


def test_the_pytorch_sample_becomes_two_nodes_of_two_tasks_with_its_timeout(tmp_path):
    p = make_plan(tmp_path, path=SAMPLES / "pytorch_ddp" / "job.yml", partition="gpu", account="proj")
    assert p.sbatch_options[1:6] == ("--nodes=2", "--ntasks-per-node=2", "--time=0:15:00", "--partition=gpu",
                                     "--account=proj")
    assert all(f"#SBATCH {o}" in p.script for o in p.sbatch_options)
    assert 'srun --kill-on-bad-exit=1 bash -c "$task"' in p.script
    assert 'export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" NODE_RANK="$SLURM_NODEID"' in p.script
    assert p.environment["AMLDIST_IN_0_epochs"] == "5" and p.environment["AZUREML_NODE_COUNT"] == "2"
    assert p.environment["AMLDIST_OUT_3_model"] == os.path.join(p.run_dir, "outputs", "model")
    assert not os.path.exists(p.run_dir)  # pure: nothing written


def test_values_and_secrets_travel_in_the_environment_never_in_the_script(tmp_path):
    p = make_plan(tmp_path, """
        command: echo ${{inputs.msg}} $API_KEY
        inputs: {msg: "hi; touch pwned"}
        environment_variables: {API_KEY: s3cr3t-value}
        """)
    assert "pwned" not in p.script and "s3cr3t-value" not in p.script
    assert p.environment["API_KEY"] == "s3cr3t-value"
    text = p.describe()
    assert "s3cr3t-value" not in text and "API_KEY=" in text  # masked in --dry-run
    assert "#SBATCH --nodes=1" in text


def test_the_task_script_gives_azure_names_and_drops_slurms_variables(tmp_path):
    p = make_plan(tmp_path, """
        command: env
        distribution: {type: pytorch, process_count_per_instance: 2}
        resources: {instance_count: 2}
        """)
    task = script.task_script("pytorch", "env", 2, 4)
    env = {"PATH": os.environ["PATH"], "AMLDIST_RUN_DIR": str(tmp_path), "SLURM_PROCID": "3", "SLURM_LOCALID": "1",
           "SLURM_NODEID": "1", "SLURM_NTASKS": "4", "SLURMD_NODENAME": "n2", "ENVIRONMENT": "BATCH"}
    for sub in ("user_logs", "state", "code"):
        (tmp_path / sub).mkdir(exist_ok=True)
    subprocess.run(["bash", "-c", task], env=env, check=True, timeout=30)
    seen = dict(line.split("=", 1) for line in (tmp_path / "user_logs" / "std_log_process_03.txt").read_text().split("\n")
                if "=" in line)
    assert (seen["RANK"], seen["LOCAL_RANK"], seen["NODE_RANK"], seen["WORLD_SIZE"]) == ("3", "1", "1", "4")
    assert not [k for k in seen if k.startswith("SLURM") or k in ("ENVIRONMENT", "AMLDIST_RUN_DIR")]
    assert (tmp_path / "state" / "rank_3.exit").read_text().strip() == "0"
    assert p.launch == "pytorch"


def test_a_gpu_size_asks_for_its_gpus_on_every_node(tmp_path):
    p = make_plan(tmp_path, """
        command: python train.py
        distribution: {type: pytorch, process_count_per_instance: 8}
        resources: {instance_count: 2, instance_type: Standard_ND96asr_v4}
        """)
    assert "--gpus-per-node=8" in p.sbatch_options
    assert not any("gpus" in o for o in make_plan(tmp_path, "command: echo\n").sbatch_options)


def test_mpi_runs_mpirun_inside_the_allocation(tmp_path):
    p = make_plan(tmp_path, """
        command: python train.py
        distribution: {type: mpi, process_count_per_instance: 2}
        resources: {instance_count: 2}
        """)
    assert "-np 4 --map-by ppr:2:node" in p.script
    assert 'AZ_BATCH_MASTER_NODE="$MASTER_ADDR:$MASTER_PORT"' in p.script


def test_tensorflow_asks_for_one_task_per_worker_and_parameter_server(tmp_path):
    p = make_plan(tmp_path, """
        command: python train.py
        distribution: {type: tensorflow, worker_count: 2, parameter_server_count: 1}
        resources: {instance_count: 2}
        """)
    assert "--ntasks=3" in p.sbatch_options and "--nodes=2" in p.sbatch_options
    assert [t[:2] for t in p.tasks] == [("worker 0", "std_log_node_00_worker.txt"),
                                        ("worker 1", "std_log_node_01_worker.txt"), ("ps 0", "std_log_node_00_ps.txt")]
    assert "state/tf_config" in p.script


def test_ray_runs_one_ray_node_per_slurm_node_with_the_command_once_on_the_head(tmp_path):
    p = make_plan(tmp_path, """
        command: python train.py
        distribution: {type: ray, port: 6390, head_node_additional_args: "--num-cpus 2"}
        resources: {instance_count: 3}
        """)
    assert "--nodes=3" in p.sbatch_options and "--ntasks-per-node=1" in p.sbatch_options
    assert [t[:2] for t in p.tasks] == [("ray head", "std_log_node_00.txt"), ("ray worker 1", "std_log_node_01.txt"),
                                        ("ray worker 2", "std_log_node_02.txt")]
    # the same node count and Ray fields as the local plan gives every node; the role and addresses are the task's
    assert p.environment["AMLDIST_RAY_NODES"] == "3" and p.environment["AMLDIST_RAY_HEAD_ARGS"] == "--num-cpus 2"
    assert "export MASTER_PORT=6390\n" in p.script  # distribution.port is the head's GCS port
    assert 'AMLDIST_RAY_HEAD="$MASTER_ADDR:$MASTER_PORT"' in p.script
    # the snapshot's copy of the Ray node module; only the head gets the command
    assert ("then setsid " + p.python + ' "$run"/code/amldist/runtime/ray_node.py -- bash -c') in p.script.replace(
        "'\"'\"'", "'")
    task = next(line for line in p.script.splitlines() if line.startswith("if [ "))
    assert task.count("train.py") == 1 and task.index("train.py") < task.index("else")


def test_a_task_script_runs_the_ray_nodes_and_names_their_roles_in_real_bash(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    python = fake / "python"  # says what a Ray node would be started with
    python.write_text('#!/bin/sh\necho "$AMLDIST_RAY_ROLE $AMLDIST_RAY_HEAD $AMLDIST_RAY_NODE_IP $*"\n')
    python.chmod(0o755)
    text = script.task_script("ray", "echo the command", 2, 2, python=str(python), ray_node="NODE")
    (tmp_path / "code").mkdir()
    (tmp_path / "user_logs").mkdir()
    (tmp_path / "state").mkdir()
    (fake / "scontrol").write_text("#!/bin/sh\necho NodeName=$3 Arch=x NodeAddr=10.0.0.$3 NodeHostName=h\n")
    (fake / "scontrol").chmod(0o755)
    for node in (0, 1):
        env = {"PATH": f"{fake}:/usr/bin:/bin", "AMLDIST_RUN_DIR": str(tmp_path), "SLURM_PROCID": str(node),
               "SLURM_NODEID": str(node), "SLURMD_NODENAME": str(node + 1), "MASTER_ADDR": "10.0.0.1",
               "MASTER_PORT": "7000"}
        subprocess.run(["bash", "-c", text + "\n"], env=env, check=True)
    head, worker = ((tmp_path / "user_logs" / f"std_log_node_0{n}.txt").read_text() for n in (0, 1))
    assert head == "head 10.0.0.1:7000 10.0.0.1 NODE -- bash -c echo the command\n"
    assert worker == "worker 10.0.0.1:7000 10.0.0.2 NODE\n"  # its own node's NodeAddr


def test_ray_on_slurm_refuses_joining_an_existing_cluster_in_one_line(tmp_path):
    with pytest.raises(UserError, match="distribution.address '10.0.0.9:6379' joins an existing Ray cluster"):
        make_plan(tmp_path, """
            command: python train.py
            distribution: {type: ray, address: "10.0.0.9:6379"}
            """)


@pytest.mark.parametrize("seconds, limit", [(1, "0:01:00"), (900, "0:15:00"), (3601, "1:01:00"), (86400, "24:00:00")])
def test_timeouts_become_slurm_time_limits_rounded_up_to_minutes(seconds, limit):
    assert script.time_limit(seconds) == limit


def test_a_components_additional_includes_reach_its_code_folder(tmp_path):
    from amldist.backends.slurm.submission import fill_run_folder

    (tmp_path / "comp" / "src").mkdir(parents=True)
    (tmp_path / "comp" / "src" / "train.py").write_text("print(1)\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.py").write_text("U = 1\n")
    (tmp_path / "comp" / "c.yml").write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\n"
        "type: command\nname: c\ncode: ./src\ncommand: python train.py\n"
        "environment: azureml:AzureML-sklearn-1.5@latest\nadditional_includes: [../lib]\n")
    backend = get_backend("slurm")
    p = backend.plan(prepare(str(tmp_path / "comp" / "c.yml")), backend.options(run_root=str(tmp_path / "runs")))
    assert [i.name for i in p.includes] == ["lib"]
    assert "additional include:" in p.describe() and "/code/lib" in p.describe()
    fill_run_folder(p)  # the run folder sbatch is then given, written for real
    assert (tmp_path / "runs" / p.job_name / "code" / "lib" / "util.py").read_text() == "U = 1\n"
    assert (tmp_path / "runs" / p.job_name / "code" / "train.py").is_file()
    wrapper = tmp_path / "runs" / p.job_name / "bin" / "python"  # `python` in every task is the plan's
    assert p.python in wrapper.read_text() and os.access(wrapper, os.X_OK)


@pytest.mark.parametrize("flag, value", [("partition", "gpu\n#SBATCH --wrap=x"), ("partition", "a b"),
                                         ("account", "x%j"), ("time", "1:00'"), ("account", "back\\slash")])
def test_a_value_that_cannot_be_one_sbatch_word_is_one_line(tmp_path, flag, value):
    with pytest.raises(UserError) as caught:
        make_plan(tmp_path, "command: echo hi\n", **{flag: value})
    assert caught.value.message.startswith(f"--{flag} ") and "\n" not in caught.value.message


def test_the_specs_variables_never_reach_sbatchs_own_environment(tmp_path):
    from amldist.backends.slurm import commands

    p = make_plan(tmp_path, """
        command: echo hi
        environment_variables: {SBATCH_TIMELIMIT: "1", SLURM_NTASKS: "9", KEEP: "yes"}
        """)
    env = commands.environment({"HOME": "/home/x", "AMLDIST_V_OLD": "stale"}, dict(p.environment))
    assert not {"SBATCH_TIMELIMIT", "SLURM_NTASKS", "KEEP", "AMLDIST_V_OLD"} & set(env)
    assert env["AMLDIST_V_SBATCH_TIMELIMIT"] == "1" and env["AMLDIST_V_KEEP"] == "yes"
    assert script.IMPORT_VARIABLES in p.script  # each task exports them under their own names
    assert all("/" not in o for o in p.sbatch_options)  # no path in an #SBATCH line


def test_a_run_folder_path_slurm_cannot_name_is_one_line_and_percent_is_escaped(tmp_path):
    odd = tmp_path / "a\\b"
    odd.mkdir()
    with pytest.raises(UserError) as caught:
        make_plan(odd, "command: echo hi\n")
    assert "backslash" in caught.value.message
    assert script.command_line_options("/p/x%j/run") == ("--output=/p/x%%j/run/slurm_job.txt",)


def test_job_ids_are_only_what_sbatch_answers_and_the_marker_follows_the_folder_not_its_spelling(tmp_path):
    from amldist.backends.slurm import commands

    assert [commands.is_job_id(t) for t in ("123", "123_4", "--user=root", "12 3", "123\n", "", None)] == [
        True, True, False, False, False, False, False]
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert commands.run_marker(str(tmp_path / "link" / "run")) == commands.run_marker(str(tmp_path / "real" / "run"))
    assert commands.run_marker(str(tmp_path / "real" / "run")) != commands.run_marker(str(tmp_path / "real" / "other"))


@pytest.mark.skipif(not shutil.which("sbatch"), reason="Slurm's client programs are not installed")
@pytest.mark.skipif(os.path.exists("/etc/slurm/slurm.conf"), reason="this machine has a Slurm cluster configured")
def test_no_configured_cluster_is_named_as_such_not_as_a_partition_or_time_problem(cli, tmp_path, monkeypatch):
    """Real sbatch with no slurm.conf: Slurm's own error is about DNS; the user needs to hear SLURM_CONF."""
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("submit", str(SAMPLES / "pytorch_ddp" / "job.yml"), "--slurm")
    assert code == 2, err
    assert "sbatch reached no Slurm cluster: this machine has no slurm.conf" in err
    assert "SLURM_CONF" in err and "--partition" not in err


@pytest.mark.parametrize("stderr, meaning", [
    ("sbatch: error: s_p_parse_file: cannot stat file /x/slurm.conf: No such file or directory, retrying in 1sec",
     "SLURM_CONF names a file that does not exist"),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
     "the controller its slurm.conf names does not answer"),
])
def test_slurms_words_for_an_unreachable_cluster_become_one_line_about_it(stderr, meaning):
    from amldist.backends.slurm.commands import no_cluster

    with pytest.raises(UserError) as caught:
        no_cluster("sbatch", stderr)
    assert caught.value.message == f"sbatch reached no Slurm cluster: {meaning}" and "SLURM_CONF" in caught.value.hint
    no_cluster("sbatch", "sbatch: error: invalid partition specified: gpu")  # a real refusal is not one of them


def test_a_slurm_conf_that_does_not_exist_is_said_at_once(monkeypatch, tmp_path):
    """Slurm would retry the missing file for a minute; amldist says it before calling Slurm."""
    from amldist.backends.slurm import commands

    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    with pytest.raises(UserError, match="SLURM_CONF names a file that does not exist"):
        commands.call("squeue", "-h")


def test_a_retry_keeps_its_job_off_a_node_and_shares_the_first_attempts_checkpoints(tmp_path):
    p = make_plan(tmp_path, "command: python train.py\n", exclude="n2", checkpoint_dir=str(tmp_path / "first"))
    assert "--exclude=n2" in p.sbatch_options
    assert p.environment["AMLDIST_CHECKPOINT_DIR"] == str(tmp_path / "first")
    first = make_plan(tmp_path, "command: python train.py\n", checkpoints=True)
    assert first.environment["AMLDIST_CHECKPOINT_DIR"] == os.path.join(first.run_dir, "checkpoints")
    assert "AMLDIST_CHECKPOINT_DIR" not in make_plan(tmp_path, "command: python train.py\n").environment
    assert not any(o.startswith("--exclude") for o in first.sbatch_options)
    with pytest.raises(UserError, match="--exclude 'n1 n2' is not a Slurm name or value"):
        make_plan(tmp_path, "command: python train.py\n", exclude="n1 n2")
