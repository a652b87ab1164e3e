"""The sbatch script of a job: pure text built from the typed job, nothing started or written.

What each task sees is what Azure ML's launcher gives a process on node k (the same names and
values as ``amldist submit --local``, :mod:`amldist.engine.launchers`), computed from
Slurm's own variables inside the allocation:

- ``pytorch``: ``srun`` starts nodes x process_count_per_instance tasks; each gets RANK
  (SLURM_PROCID), LOCAL_RANK (SLURM_LOCALID), NODE_RANK (SLURM_NODEID), WORLD_SIZE (SLURM_NTASKS),
  MASTER_ADDR (the first node's address, ``NodeAddr`` in ``scontrol show node``) and MASTER_PORT
  (a port free on the first node when the batch script starts there);
- ``mpi``: Open MPI's ``mpirun`` inside the allocation (it reads Slurm's node list and starts its
  daemons with ``srun``), one rank per task, so Open MPI sets OMPI_COMM_WORLD_* as on Azure; plus
  AZ_BATCH_MASTER_NODE (several nodes) or AZ_BATCHAI_MPI_MASTER_NODE (one). ``mpirun`` rather than
  ``srun --mpi=pmix``: it needs no PMIx plugin in Slurm matching the job's Open MPI, and it is
  what Azure ML runs;
- ``tensorflow``: one task per worker and parameter server (``--ntasks``); a first ``srun`` finds each
  task's node and a port free there, then each task gets TF_CONFIG as Azure ML writes it (cluster,
  task type and index, ``"environment": "cloud"``);
- ``ray``: one task per node, each running :mod:`amldist.runtime.ray_node` (the job snapshot's copy when the
  runtime is bundled, else the installed one): the head on the first node (``SLURM_NODEID`` 0), which runs
  the command once, a worker on every other; AMLDIST_RAY_HEAD is the first node's address and a port free
  there (``distribution.port`` when given), AMLDIST_RAY_NODE_IP the task's own node's ``NodeAddr``; the
  distribution's other Ray fields travel with the job's values (:func:`amldist.engine.launchers.ray_variables`);
- no distribution: the command once per node.

Every task drops Slurm's own variables (SLURM_*, SLURMD_*, SRUN_*) before the command starts, so a
script sees on Slurm what it sees on Azure ML; amldist.runtime then forms its world from the Azure
variables. What any machine's environment has stays: HOSTNAME (the node's name) and TMPDIR (which
slurmd sets when the submitting shell had none). GPUs: ``--gpus-per-node`` = the GPUs of ``resources.instance_type`` when it names a GPU
size, and every process of a node sees all of them, as on Azure (``cuda:LOCAL_RANK`` picks one;
per-task binding would hide the others and break that).

Each task writes its output to Azure ML's log name (``user_logs/std_log_process_NN.txt``) and its
exit code to ``state/rank_N.exit``; the batch script writes ``state/exit_code`` when the step ends.
The job's values (inputs, environment_variables, secrets) are not in the script: they travel in
``sbatch``'s environment (``--export=ALL``) as ``AMLDIST_V_<NAME>``, names neither ``sbatch`` nor ``srun``
reads (so a spec's ``SBATCH_TIMELIMIT`` or ``SLURM_NTASKS`` changes nothing of the job's shape), and each
task exports them under their own names before its launcher variables, as the local backend passes them
to its processes.
"""

from __future__ import annotations

import math
import os
import re
import shlex

from amldist.engine.launchers import RAY_NODE, process_log_name, rank_digits
from amldist.errors import UserError
from amldist.runtime.evidence import EVIDENCE_FOLDER, EVIDENCE_VAR

PORT_PICKER = 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
# The job's variables, carried in sbatch's environment as AMLDIST_V_<NAME> (commands.environment): each
# becomes NAME in the task, before the launcher's variables (which win, as on Azure ML) are set.
IMPORT_VARIABLES = ('for v in $(compgen -e | grep "^AMLDIST_V_"); do export "${v#AMLDIST_V_}=${!v}"; unset "$v"; '
                    'done')
# Variables Slurm sets in a task that Azure ML's processes do not have (ENVIRONMENT=BATCH is sbatch's).
DROP_SLURM = "unset $(compgen -e | grep -E '^(SLURM_|SLURMD_|SRUN_)'); [ \"${ENVIRONMENT:-}\" = BATCH ] && unset ENVIRONMENT"


# sbatch's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (ASCII digits: '²' passes str.isdigit()), or unlimited
_TIME = re.compile(r"(\d{1,9}-\d{1,9}(:\d{1,9}){0,2}|\d{1,9}(:\d{1,9}){0,2}|unlimited|infinite)", re.ASCII | re.I)


def time_problem(text: str) -> str | None:
    """Why ``text`` is not a time limit sbatch takes (``--time``), or None."""
    if _TIME.fullmatch(text.strip()):
        return None
    shown = text if len(text) <= 40 else text[:37] + "..."
    return f"{shown!r} is not a Slurm time limit: write MINUTES, H:MM:SS or DAYS-H:MM:SS (e.g. 90, 2:00:00, 1-12:00:00)"


def time_option(text: str) -> str:
    """argparse ``type=`` for ``--time`` (declared by the backend): a usage error (exit 2) for what sbatch refuses."""
    import argparse

    problem = time_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def time_limit(seconds: int) -> str:
    """``limits.timeout`` (seconds) as Slurm's ``--time`` (``H:MM:SS``, whole minutes, at least one:
    Slurm counts in minutes, so a limit is never cut short)."""
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes // 60}:{minutes % 60:02d}:00"


_PARTS = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", re.ASCII)


def limit_seconds(text: str | None) -> int | None:
    """A ``--time`` value in seconds (sbatch's formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S); None for none or
    ``unlimited``."""
    match = _PARTS.fullmatch((text or "").strip())
    if not match:
        return None
    days, first, second, third = (int(g) if g else None for g in match.groups())
    if days is not None:  # D-H[:M[:S]]
        return ((days * 24 + first) * 60 + (second or 0)) * 60 + (third or 0)
    if third is not None:  # H:M:S
        return (first * 60 + second) * 60 + third
    return first * 60 + (second or 0)  # M or M:S


def warning_seconds(limit: int) -> int:
    """How long before the time limit a retried job's batch script is told (``--signal=B:TERM@S``): a tenth of the
    limit, at least 60 s (Slurm sends the signal up to a minute early: its resolution) and at most 10 minutes."""
    return min(600, max(60, limit // 10))


def sbatch_options(name: str, marker: str, nodes: int, tasks_per_node: int, *, gpus_per_node: int | None,
                   time: str | None, partition: str | None, account: str | None,
                   tasks: int | None = None, exclude: str | None = None,
                   warning: int | None = None) -> tuple[str, ...]:
    """The ``#SBATCH`` options, in the order they are written; ``tasks``: a total (tensorflow's tasks) in
    place of the tasks per node; ``marker``: the run's (``--comment``, how amldist knows its jobs).

    No path is written here (a ``#`` in the project's path would end an ``#SBATCH`` line): ``sbatch`` runs in
    ``<run>/code`` (the job's working folder) and gets the output file on its command line
    (:func:`command_line_options`). The values given by the user (``--time``, ``--partition``,
    ``--account``) are checked by :func:`check_option`; ``exclude``: nodes to keep the job off (``--exclude``,
    a retry's after a node fault); ``warning``: seconds before the time limit the batch script gets SIGTERM
    (``--signal=B:TERM@S``), which it passes on to the tasks so they can save (:func:`batch_script`)."""
    per = f"--ntasks={tasks}" if tasks else f"--ntasks-per-node={tasks_per_node}"
    options = [f"--job-name={name}", f"--nodes={nodes}", per]
    if gpus_per_node:
        options.append(f"--gpus-per-node={gpus_per_node}")
    options += [f"--{key}={value}" for key, value in (("time", time), ("partition", partition),
                                                       ("account", account), ("exclude", exclude)) if value]
    # --no-requeue: a job whose node fails ends Failed, as on Azure ML, instead of starting over in the same
    # run folder (Slurm's default requeues a batch job after a node failure)
    options += [f"--signal=B:TERM@{warning}"] if warning else []
    options += [f"--comment={marker}", "--export=ALL", "--no-requeue"]
    return tuple(options)


def command_line_options(run_dir: str) -> tuple[str, ...]:
    """What ``sbatch`` gets on its command line, beside the script: Slurm's own output file, in the run folder.
    Slurm reads ``%`` in a file name as a pattern (``%j``: the job id), so each is written ``%%``; a
    backslash would turn the patterns off (and is dropped), so a run folder's path holding one is refused
    at plan time (:func:`check_run_folder`)."""
    return (f"--output={os.path.join(run_dir, 'slurm_job.txt').replace('%', '%%')}",)


def check_run_folder(run_dir: str) -> None:
    """One line for a run folder's path that Slurm cannot be given as a file name (see
    :func:`command_line_options`)."""
    if "\\" in run_dir or "\n" in run_dir:
        raise UserError(f"the Slurm run folder {run_dir!r} has a backslash or a newline in its path, which "
                        "Slurm's file names cannot hold", hint="submit from a folder whose path has neither")


OPTION_VALUE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.,:+@=-]{0,127}\Z")  # \Z: "$" would let a newline in


def check_option(flag: str, value: str | None) -> str | None:
    """``value`` when it can stand in an ``#SBATCH`` line as one word, else one UserError line: a space,
    ``#``, ``%``, a quote, a backslash or a newline would end the line, start a comment, be read as a file
    pattern or run as a line of the batch script."""
    if value is None or OPTION_VALUE.match(value):
        return value
    raise UserError(f"{flag} {value[:60]!r} is not a Slurm name or value: only letters, digits and _.,:+@=- "
                    "may be given (no spaces, quotes, backslashes, #, % or newlines)",
                    hint=f"{flag} takes one word, as sinfo/sacctmgr show it")


def log_name(kind: str, nodes: int, world: int, workers: int = 0) -> str:
    """Shell text for a task's log name, Azure ML's (as :func:`process_log_name` names them; tensorflow's
    ``std_log_node_NN_worker.txt``/``_ps.txt`` as the local backend names them)."""
    if kind == "tensorflow":
        return (f'$([ "$rank" -lt {workers} ] && printf std_log_node_%02d_worker.txt "$rank" '
                f'|| printf std_log_node_%02d_ps.txt $((rank - {workers})))')
    if kind == "ray":  # one log per node, as the local backend names a Ray job's nodes
        return 'std_log_node_$(printf %02d "$SLURM_NODEID").txt'
    if kind == "single":
        return "std_log.txt" if nodes == 1 else 'std_log_node_$(printf %02d "$SLURM_NODEID").txt'
    if world == 1:
        return process_log_name(0, 1)
    return f'std_log_process_$(printf %0{rank_digits(world)}d "$rank").txt'


def rank_variables(kind: str, nodes: int) -> str:
    """The exports that give a task Azure ML's launcher variables (see the module docstring)."""
    if kind == "pytorch":
        return ('export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" NODE_RANK="$SLURM_NODEID" '
                'WORLD_SIZE="$SLURM_NTASKS"')
    if kind == "tensorflow":  # this task's line of the cluster the batch script wrote (TF_BUILDER)
        return ('export TF_CONFIG="$(sed -n "$((rank + 1))p" "$run"/state/tf_config)"; '
                "unset MASTER_ADDR MASTER_PORT")
    if kind == "mpi":
        master = ('AZ_BATCH_MASTER_NODE="$MASTER_ADDR:$MASTER_PORT"' if nodes > 1
                  else 'AZ_BATCHAI_MPI_MASTER_NODE="$MASTER_ADDR"')
        return f"export {master}; unset MASTER_ADDR MASTER_PORT"
    if kind == "ray":  # the head's GCS at the first node's address; this node's own address from Slurm
        return (r"""node_ip=$(scontrol show node "$SLURMD_NODENAME" -o | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p'); """
                'export AMLDIST_RAY_ROLE=$([ "$SLURM_NODEID" = 0 ] && echo head || echo worker) '
                'AMLDIST_RAY_HEAD="$MASTER_ADDR:$MASTER_PORT" AMLDIST_RAY_NODE_IP="${node_ip:-$MASTER_ADDR}"; '
                "unset MASTER_ADDR MASTER_PORT node_ip")
    return "unset MASTER_ADDR MASTER_PORT"


def start_line(kind: str, command: str, python: str, ray_node: str | None) -> str:
    """The task's program, in a process group of its own: the command, or for ``ray`` the Ray node module
    (the command after ``--`` on the head only, as :func:`amldist.backends.local.plan.ray_argv` runs it)."""
    if kind != "ray":
        return f"setsid bash -c {shlex.quote(command)} &"
    node = f"{shlex.quote(python)} {ray_node or shlex.quote(RAY_NODE)}"
    return (f'if [ "$AMLDIST_RAY_ROLE" = head ]; then setsid {node} -- bash -c {shlex.quote(command)} & '
            f"else setsid {node} & fi")


def task_script(kind: str, command: str, nodes: int, world: int, workers: int = 0, python: str = "python",
                ray_node: str | None = None, faults=(), tasks_per_node: int = 1) -> str:
    """What each task runs (``bash -c``): Azure ML's variables, its own log, the command, its exit code;
    with ``faults`` (``--inject``) the drill's watchers beside the command (:func:`drill_watchers`)."""
    rank = '"$OMPI_COMM_WORLD_RANK"' if kind == "mpi" else '"$SLURM_PROCID"'
    # under mpirun a rank's node is its rank's block (--map-by ppr:N:node); else Slurm's node index
    node = f'$((OMPI_COMM_WORLD_RANK / {tasks_per_node}))' if kind == "mpi" else '"$SLURM_NODEID"'
    watchers, stop_watchers = drill_watchers(faults)
    return "\n".join([
        f'rank={rank} run="$AMLDIST_RUN_DIR"; unset AMLDIST_RUN_DIR',
        *([f'node={node} start="$EPOCHREALTIME" drills=""'] if faults else []),
        f'exec >"$run"/user_logs/{log_name(kind, nodes, world, workers)} 2>&1',
        IMPORT_VARIABLES,
        # every rank's Flight Recorder dump and error file, next to its log, as a local run has them
        f'export {EVIDENCE_VAR}="$run"/user_logs/{EVIDENCE_FOLDER}',
        rank_variables(kind, nodes),
        DROP_SLURM,
        'cd "$run"/code || exit 1',
        # its own process group: what the command leaves behind goes with it, as with Azure ML's container
        start_line(kind, command, python, ray_node),
        'pid=$!',
        *watchers,
        """trap 'kill -TERM -- -"$pid" 2>/dev/null' TERM INT""",
        'wait "$pid"; code=$?',
        'kill -0 "$pid" 2>/dev/null && { wait "$pid"; code=$?; }',
        'kill -KILL -- -"$pid" 2>/dev/null',
        *stop_watchers,
        'echo "$code" > "$run"/state/rank_"$rank".exit',
        'exit "$code"',
    ])


# What a drill's watcher does to the command's process group ("$1") once its time has come (``--inject``,
# amldist.rules.faults), as the local backend's FaultDrill does to a process group: {grace} and {stopped}/{running}
# are the fault's numbers.
DRILL_ACTIONS = {
    "preempt": 'kill -TERM -- -"$1"; sleep {grace}; kill -KILL -- -"$1" 2>/dev/null',
    "kill": 'kill -KILL -- -"$1"',
    "hang": 'kill -STOP -- -"$1"',
    "slow": ('while kill -STOP -- -"$1" 2>/dev/null; do sleep {stopped}; kill -CONT -- -"$1" 2>/dev/null; '
             'sleep {running}; done'),
}


def drill_watchers(faults) -> tuple[list[str], list[str]]:
    """The task script's lines for ``--inject`` (see :mod:`amldist.rules.faults`): for each fault that strikes
    this task (its node, or its rank), a watcher in a session of its own that sleeps until the fault's time,
    writes ``state/fault_<i>_rank_<rank>`` (when it fired, when the task started: ``$EPOCHREALTIME``), then
    signals the command's process group, on the node where it runs; and the lines that end the watchers once
    the command has ended, so none outlives its task. Real signals to the real processes: what the drill
    rehearses is what a preempted node or a killed process does to the job."""
    watchers = []
    for index, fault in enumerate(faults):
        action = DRILL_ACTIONS[fault.kind].format(grace=f"{fault.grace:g}", stopped=_seconds(0.1 - 0.1 / fault.factor),
                                                  running=_seconds(0.1 / fault.factor))
        body = (f'sleep {fault.after:g}; kill -0 -- -"$1" 2>/dev/null || exit 0; '
                f'echo "$EPOCHREALTIME $3" > "$2"; {action}')
        who = "node" if fault.target_key == "node" else "rank"
        fired = f'"$run"/state/fault_{index}_rank_"$rank"'
        watchers.append(f'[ "${who}" = {fault.target} ] && {{ setsid bash -c {shlex.quote(body)} drill "$pid" '
                        f'{fired} "$start" & drills="$drills $!"; }}')
    stop = ['for d in $drills; do kill -KILL -- -"$d" 2>/dev/null; done'] if watchers else []
    return watchers, stop


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def warned_launch(launch: str, state: str) -> tuple[str, ...]:
    """The launch when Slurm warns the batch script before the time limit (``--signal=B:TERM@S``): the step runs
    in the background so the script can act at once (bash runs a trap only between commands): it writes
    ``state/time_limit`` (when; the record's and the diagnosis's ``time-limit``) and sends SIGTERM to every process
    of the job's steps (``scancel --signal=TERM``: only a signal, the job goes on; a SIGTERM to ``srun`` would end
    the step at once instead): a script with :class:`amldist.runtime.checkpoint.GraceHook` saves and stops."""
    return (f"{launch} &",
            "step=$!",
            f"""trap 'date -u +%Y-%m-%dT%H:%M:%SZ > {state}/time_limit; scancel --signal=TERM "$SLURM_JOB_ID"' TERM""",
            'wait "$step"; code=$?',
            'while kill -0 "$step" 2>/dev/null; do wait "$step"; code=$?; done')


# Writes state/tf_config: one TF_CONFIG per task (workers, then parameter servers), as Azure ML writes it,
# from state/tasks ("PROCID NODE PORT" per task: the port free on that task's node a moment before).
TF_BUILDER = """
import json, subprocess, sys
state, workers = sys.argv[1], int(sys.argv[2])
rows = sorted((int(p), node, port) for p, node, port in (line.split() for line in open(state + "/tasks")))
def addr(node):
    out = subprocess.run(["scontrol", "show", "node", node, "-o"], capture_output=True, text=True).stdout
    return next((w[9:] for w in out.split() if w.startswith("NodeAddr=")), node)
hosts = {node: addr(node) for _, node, _ in rows}
where = [f"{hosts[node]}:{port}" for _, node, port in rows]
cluster = {"worker": where[:workers], **({"ps": where[workers:]} if len(where) > workers else {})}
with open(state + "/tf_config", "w") as fh:
    for index in range(len(where)):
        task = {"type": "worker", "index": index} if index < workers else {"type": "ps", "index": index - workers}
        fh.write(json.dumps({"cluster": cluster, "task": task, "environment": "cloud"}, separators=(",", ":")) + "\\n")
"""


def tensorflow_cluster(python: str, workers: int, parameter_servers: int) -> tuple[str, ...]:
    """The batch script's lines that find every task's node and a free port there, then write TF_CONFIG."""
    where = f'echo "$SLURM_PROCID $SLURMD_NODENAME $({shlex.quote(python)} -c {shlex.quote(PORT_PICKER)})"'
    return (f'srun bash -c {shlex.quote(where)} > "$AMLDIST_RUN_DIR"/state/tasks || exit 1',
            f'{shlex.quote(python)} -c {shlex.quote(TF_BUILDER)} "$AMLDIST_RUN_DIR"/state {workers} || exit 1')


def launch_line(kind: str, nodes: int, tasks_per_node: int, mpirun: str | None, as_root: bool) -> str:
    """The step that starts every task: ``srun`` (a failing task stops the others), or ``mpirun``."""
    if kind == "mpi":
        root = " --allow-run-as-root" if as_root else ""
        return (f"{shlex.quote(mpirun or 'mpirun')} -np {nodes * tasks_per_node} --map-by ppr:{tasks_per_node}:node "
                f'--bind-to none{root} bash -c "$task"')
    return 'srun --kill-on-bad-exit=1 bash -c "$task"'


def batch_script(options: tuple[str, ...], *, name: str, kind: str, run_dir: str, command: str, nodes: int,
                 tasks_per_node: int, python: str, mpirun: str | None = None, as_root: bool = False,
                 workers: int = 0, parameter_servers: int = 0, port: int | None = None,
                 ray_node: str | None = None, faults=(), warned: bool = False) -> str:
    """The whole sbatch script (see the module docstring); ``port``: MASTER_PORT when the job names one
    (``distribution.port`` of a Ray job), else a port free on the first node; ``ray_node``: the Ray node
    module's path as shell text (None: the installed one); ``faults``: the drill's (``--inject``); ``warned``:
    the job asked for SIGTERM before its time limit (:func:`warned_launch`)."""
    picked = str(port) if port else f"$({shlex.quote(python)} -c {shlex.quote(PORT_PICKER)})"
    world = workers + parameter_servers if kind == "tensorflow" else nodes * tasks_per_node
    state = '"$AMLDIST_RUN_DIR"/state'
    each_task = task_script(kind, command, nodes, world, workers, python, ray_node, faults, tasks_per_node)
    lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in options),
             f"# amldist: job {name}, {kind}, {nodes} node(s) x {tasks_per_node} task(s)",
             "set -u",
             f"export AMLDIST_RUN_DIR={shlex.quote(run_dir)}  # each task reads it, then drops it",
             f"date -u +%Y-%m-%dT%H:%M:%SZ > {state}/started",
             # the allocation's hosts by node index (what a retry's --exclude names, amldist.backends.slurm.retry)
             f'scontrol show hostnames "$SLURM_JOB_NODELIST" > {state}/nodes',
             f'first=$(head -n 1 {state}/nodes)',
             r"""addr=$(scontrol show node "$first" -o | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p')""",
             'export MASTER_ADDR="${addr:-$first}"',
             f"export MASTER_PORT={picked}",
             *(tensorflow_cluster(python, workers, parameter_servers) if kind == "tensorflow" else ()),
             f"task={shlex.quote(each_task)}",
             *(warned_launch(launch_line(kind, nodes, tasks_per_node, mpirun, as_root), state) if warned else
               (launch_line(kind, nodes, tasks_per_node, mpirun, as_root), "code=$?")),
             f"date -u +%Y-%m-%dT%H:%M:%SZ > {state}/ended",
             f'echo "$code" > {state}/exit_code.tmp && mv {state}/exit_code.tmp {state}/exit_code',
             'exit "$code"']
    return "\n".join(lines) + "\n"
