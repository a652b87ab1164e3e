"""The Slurm backend's pure ``plan()``: the sbatch script, its options and its environment for one job.

Built from the same typed job as the other backends (:class:`~amldist.submit.prepared.PreparedJob`):
``resources.instance_count`` gives ``--nodes``, ``distribution.process_count_per_instance`` the tasks
per node, ``resources.instance_type`` the GPUs per node (when it names a GPU size), ``limits.timeout``
(or ``--time``) ``--time``; the command, its inputs, outputs and ``environment_variables`` are filled in
by the engine's rule (:func:`amldist.engine.job_values.job_command`), as for a local run, so values reach
the command as they do locally, with the same safety. Nothing is started, written or sent.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping

from amldist.backends.base import Options, Plan
from amldist.engine import launchers
from amldist.engine.job_inputs import code_folder, find_mpirun, job_name, rerunnable_yaml, resolve_inputs
from amldist.engine.job_values import job_command
from amldist.engine.attempts import attempt_of
from amldist.backends.slurm import commands, script
from amldist.errors import UserError
from amldist.rules.process_counts import takes_process_count
from amldist.rules import counts, faults, vm_sizes
from amldist.rules.runtime_bundle import has_own_amldist
from amldist.rules.secrets import mask_env, mask_text, mask_tree

DEFAULT_RUN_ROOT = ".amldist/slurm"


@dataclass(frozen=True)
class SlurmOptions(Options):
    partition: str | None = None  # --partition: Slurm's default partition when None
    account: str | None = None  # --account
    time: str | None = None  # --time: Slurm's format; default from limits.timeout
    run_root: str = DEFAULT_RUN_ROOT  # run folders, on a filesystem every node sees
    python: str | None = None  # the python every task runs (default: the one amldist runs in)
    exclude: str | None = None  # sbatch --exclude: nodes a retry keeps off (the node a fault was diagnosed on)
    checkpoint_dir: str | None = None  # AMLDIST_CHECKPOINT_DIR for every task (a retry's attempts share it)
    checkpoints: bool = False  # AMLDIST_CHECKPOINT_DIR = <run folder>/checkpoints unless checkpoint_dir is given
    inject: tuple = ()  # --inject FAULT...: the fault drill (amldist.rules.faults), acted out by each task's script
    retry: int | None = None  # --retry N: read by the retry loop (amldist.diagnosis.retry), not by plan()
    retry_on: str | None = None  # --retry-on CAUSES: the same
    attempt_of: str | None = None  # a retry: the first attempt's job name (amldist.diagnosis.retry)
    attempt: int = 1  # which attempt this run is


@dataclass(frozen=True)
class SlurmJobPlan(Plan):
    backend = "slurm"
    kind = "job"
    job_name: str
    run_dir: str
    launch: str  # pytorch | mpi | tensorflow | ray | single
    nodes: int
    tasks_per_node: int
    sbatch_options: tuple[str, ...]
    script: str
    environment: Mapping[str, str]  # added to the submitting shell's (launcher variables removed)
    removed: tuple[str, ...] = ()
    code_source: str | None = None
    add_runtime: bool = True
    outputs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    job_yaml: str = ""
    python: str = ""
    stream: bool = False
    notes: tuple[str, ...] = ()
    tasks: tuple[tuple[str, str, int], ...] = ()  # (label, log file name, node) of each task, by task id
    includes: tuple = ()  # a component's additional_includes, copied into code/ as the local backend does
    faults: tuple = ()  # --inject: the drill's faults (amldist.rules.faults.Fault), acted out in the task script
    attempt: Mapping[str, object] | None = None  # a retry's {"number": k, "of": first attempt's name}
    exclude: str | None = None  # the nodes kept off (sbatch --exclude), recorded so the next retry adds to them
    retried: bool = False  # --retry: amldist owns the attempt's life, a stop while following it cancels it

    @property
    def name(self) -> str:
        return self.job_name

    def describe(self) -> str:
        return describe(self)

    def to_json(self) -> dict:
        return mask_tree({"backend": "slurm", "kind": "job", **dataclasses.asdict(self)})


def plan(prepared, options: SlurmOptions, *, environ=None, pending_inputs=()) -> SlurmJobPlan:
    """Everything ``sbatch`` will get for ``prepared`` (see the module docstring); ``pending_inputs``: inputs
    an earlier pipeline step will write, so they need not exist yet."""
    job, file = prepared.job, prepared.source
    environ = dict(os.environ if environ is None else environ)
    run_root = os.path.abspath(options.run_root)
    name = job_name(options.name or job.name, run_root, "Slurm run")
    run_dir = os.path.join(run_root, name)
    script.check_run_folder(run_dir)
    code_source = code_folder(job.code, prepared.base_dir, file)
    if not isinstance(job.command, str) or not job.command.strip():
        raise UserError(f"{file}: the job has no command to run")
    filled = job_command(job, resolve_inputs(job.inputs, prepared.base_dir, file, pending_inputs), file, run_dir)
    launch, nodes, per_node, layout = shape(job, file)
    tf = layout.kind == "tensorflow"
    workers = sum(slot.label.startswith("worker") for slot in layout.slots) if tf else 0
    base = launchers.clean_environ(environ)
    python = launchers.interpreter(options.python, base)
    added = {**launchers.checkpoint_variable(options, run_dir), **filled.variables,  # the job's own value wins
             **launchers.run_info(name, nodes), **ray_variables(job, nodes, layout)}
    check_variable_names(added, file)
    added["PATH"] = launchers.python_path(added.get("PATH", base.get("PATH", "")), python, os.path.join(run_dir, "bin"))
    limit = options.time or (script.time_limit(int(job.limits.timeout))
                             if job.limits is not None and job.limits.timeout else None)
    sbatch = script.sbatch_options(name, commands.run_marker(run_dir), nodes, per_node,
                                   gpus_per_node=gpus_per_node(job), time=script.check_option("--time", limit),
                                   partition=script.check_option("--partition", options.partition),
                                   account=script.check_option("--account", options.account),
                                   tasks=len(layout.slots) if tf else None,
                                   exclude=script.check_option("--exclude", options.exclude),
                                   warning=warning(options, limit))
    mpirun = find_mpirun(base) if launch == "mpi" else None
    add_runtime = not (code_source and has_own_amldist(code_source))
    injected = faults.parse_faults(options.inject)
    faults.check_targets(injected, nodes=nodes, ranks=[slot.rank for slot in layout.slots], where=file)
    text = script.batch_script(sbatch, name=name, kind=launch, run_dir=run_dir, command=filled.command, nodes=nodes,
                               tasks_per_node=per_node, python=python, mpirun=mpirun,
                               as_root=hasattr(os, "geteuid") and os.geteuid() == 0, workers=workers,
                               parameter_servers=len(layout.slots) - workers if tf else 0,
                               port=launchers.ray_port(job.distribution.extra or {}) if launch == "ray" else None,
                               ray_node=BUNDLED_RAY_NODE if add_runtime else None, faults=injected,
                               warned=warning(options, limit) is not None)
    notes = [] if add_runtime else ["the code folder has its own 'amldist': the runtime shim is not added (as on Azure)"]
    return SlurmJobPlan(name, run_dir, launch, nodes, per_node, sbatch, text, added,
                        tasks=tuple((slot.label, slot.log_name, slot.node) for slot in layout.slots),
                        removed=tuple(sorted(k for k in environ if launchers.is_launcher_variable(k))),
                        code_source=code_source, add_runtime=add_runtime, outputs=filled.outputs,
                        job_yaml=rerunnable_yaml(job, prepared.base_dir, run_dir), python=python,
                        stream=options.stream, notes=tuple(notes),
                        includes=tuple(getattr(prepared, "code_includes", ())), faults=injected,
                        attempt=attempt_of(options, name),
                        exclude=options.exclude, retried=options.retry is not None)


def warning(options: SlurmOptions, limit: str | None) -> int | None:
    """Seconds before the time limit the batch script is warned (``--signal=B:TERM@S``): for a job with a time limit
    submitted with ``--retry``, so its tasks can save a checkpoint the next attempt resumes from; else None."""
    seconds = script.limit_seconds(limit)
    return script.warning_seconds(seconds) if options.retry is not None and seconds else None


# The Ray node module in the job's snapshot (task-script text: "$run" is the run folder), run when the runtime
# is bundled so every node runs the copy the job was submitted with; else the installed one (launchers.RAY_NODE).
BUNDLED_RAY_NODE = '"$run"/code/amldist/runtime/ray_node.py'


def ray_variables(job, nodes: int, layout: launchers.Layout) -> dict[str, str]:
    """A Ray job's variables that are the same on every node (node count, the distribution's Ray fields), as
    the local plan sets them; the role and the addresses are the task script's (script.rank_variables)."""
    if layout.kind != "ray":
        return {}
    return launchers.ray_variables(nodes, job.distribution.extra or {})


VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def check_variable_names(variables: dict, file: str) -> None:
    """Each task exports the job's variables by name (:data:`amldist.backends.slurm.script.IMPORT_VARIABLES`):
    a name the shell cannot export is one line, before anything is written."""
    bad = [k for k in variables if not VARIABLE_NAME.match(k)]
    if bad:
        raise UserError(f"{file}: environment variable {bad[0][:60]!r} is not a name a task's shell can export",
                        hint="use letters, digits and _ (not starting with a digit)")


def shape(job, file: str) -> tuple[str, int, int, launchers.Layout]:
    """(launch, nodes, tasks per node, the tasks as the local backend lays them out: labels and Azure ML's
    log names) of ``job``. Ports are not chosen here: the batch script finds them on the nodes."""
    nodes = _count(getattr(job.resources, "instance_count", None))
    dist = job.distribution
    kind = dist.kind if dist is not None else None
    if kind is None:
        return "single", nodes, 1, launchers.single_layout(nodes)
    if takes_process_count(kind):
        per_node = _count(dist.process_count_per_instance)
        layout = (launchers.pytorch_layout(nodes, per_node, port=1) if kind == "pytorch"
                  else launchers.mpi_layout(nodes, per_node, busy_port=1))
        return kind, nodes, per_node, layout
    if kind == "tensorflow":
        workers = _count(dist.worker_count) if dist.worker_count is not None else nodes
        ps = _count(dist.parameter_server_count) if dist.parameter_server_count else 0
        return kind, nodes, max(1, -(-(workers + ps) // nodes)), launchers.tensorflow_layout(workers, ps, [1] * (workers + ps))
    if kind == "ray":  # one task per node: the Ray node module (script.start_line)
        return kind, nodes, 1, launchers.ray_layout(nodes, launchers.ray_settings(dist, file), port=1)
    raise UserError(f"{file}: distribution type {dist.type!r} is not run by the Slurm backend",
                    hint="pytorch, mpi, tensorflow, ray and no distribution run on Slurm")


def _count(value) -> int:
    return 1 if value is None else counts.as_count(value)


def gpus_per_node(job) -> int | None:
    """The GPUs of ``resources.instance_type`` when it is a GPU size amldist knows, else None."""
    size = vm_sizes.lookup(getattr(job.resources, "instance_type", None))
    return size.gpus if size is not None and size.gpus else None


def describe(p: SlurmJobPlan, *, cwd: str | None = None) -> str:
    """The dry-run text: the sbatch options, the environment amldist adds (masked) and the script."""
    rel = lambda path: os.path.relpath(path, cwd or os.getcwd())
    lines = [f"job {p.job_name}: {p.launch} on Slurm, {p.nodes} node(s) x {p.tasks_per_node} task(s); "
             f"run folder {rel(p.run_dir)} (not created; every node must see it)"]
    lines.append(f"code: {rel(p.code_source) + ' copied to ' + rel(p.run_dir) + '/code' if p.code_source else 'none'}"
                 + (" (+ amldist/runtime)" if p.add_runtime else ""))
    lines += [f"additional include: {rel(i.source)} -> {rel(p.run_dir)}/code/{i.name}" for i in p.includes]
    lines += [f"output {n}: {rel(path)}" for n, (path, _) in p.outputs.items()]
    options = p.sbatch_options + script.command_line_options(p.run_dir)
    lines.append("sbatch options: " + " ".join(shlex.quote(o) for o in options))
    lines.append("environment of every task: this shell's (sbatch --export=ALL)"
                 + (f" minus launcher variables ({', '.join(p.removed)})" if p.removed else "")
                 + ", plus (carried as AMLDIST_V_<NAME>, never read by sbatch or srun):")
    lines += [f"  {k}={shlex.quote(str(v))}" for k, v in mask_env(dict(p.environment)).items()]
    lines += [f"note: {n}" for n in p.notes]
    lines += [f"--- {rel(p.run_dir)}/job.sbatch", mask_text(p.script).rstrip("\n")]
    return "\n".join(lines)
