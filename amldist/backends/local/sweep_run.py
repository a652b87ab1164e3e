"""A sweep job run on this machine: each trial a local job, as Azure ML runs each trial as a child job.

1. :func:`plan_sweep` is pure: the parameter sets (:func:`amldist.rules.search_space.trials`: grid, or
   random with the algorithm's ``seed``, else one drawn now and shown; bayesian refused in one line),
   at most ``limits.max_total_trials``; each set made a command job
   (:func:`amldist.submit.sweep.trial_job`) and planned as the local backend plans any job, in the run
   folder ``.amldist/runs/<sweep>/trial_<n>/``, with ``MLFLOW_TRACKING_URI`` naming a file store of its
   own (``trial_<n>/mlruns``) in every process's environment. A distributed trial is a distributed job
   (2 x 2 pytorch: four ranks, Azure ML's launcher variables).
2. :func:`run_sweep` starts the trials in order, at most ``limits.max_concurrent_trials`` at once and
   within ``--max-parallel`` processes (a trial larger than that runs alone), each in a child process of
   its own that runs the single-job launch (:func:`amldist.backends.local.pipeline_run.step_main`). While
   they run it reads each trial's primary metric from its MLflow store (the values in the order logged)
   and applies ``early_termination`` (:func:`amldist.rules.search_space.to_stop`): a trial the policy
   stops gets SIGTERM and ends ``Canceled``, as on Azure ML. ``limits.timeout`` stops every running
   trial and starts no more; ``limits.trial_timeout`` is each trial's own ``limits.timeout``.

The run is a job to ``amldist job`` (list/show/logs/cancel/download) with its trials as steps: its
``status.json`` is a pipeline's (:class:`~amldist.backends.local.run_state.PipelineState`) plus a ``sweep``
block (each trial's parameters, metric and status, and the best trial), which ``job show`` prints as a
table. The sweep is ``Completed`` when no trial failed and one completed (early-terminated trials are
``Canceled``, not failures), ``Canceled`` when stopped by a signal or ``amldist job cancel``, else ``Failed``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import multiprocessing
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field

from amldist.backends.base import CANCELED, COMPLETED, FAILED, signal_name
from amldist.backends.local.pipeline_run import StepPlan, end_children, install_handlers, step_main
from amldist.backends.local.plan import describe, job_name, plan
from amldist.backends.local.records import step_exit_code
from amldist.backends.local.run_state import STEP_STATUS, PipelineState, cancel_requested
from amldist.backends.local.supervisor import STOP_SIGNALS, say
from amldist.engine.run_folder import ignore_runs
from amldist.errors import UserError
from amldist.model.yamlio import dump_yaml
from amldist.rules import search_space
from amldist.rules.secrets import mask_tree
from amldist.submit.prepared import Prepared
from amldist.submit.sweep import trial_job

POLL_SECONDS = 0.2
MLFLOW_HINT = "pip install 'amldist[sweep]' (mlflow-skinny) or mlflow, in the environment the trials run in"


@dataclass
class SweepPlan:
    name: str
    run_dir: str
    source: str
    steps: list[StepPlan]  # one per trial, in the order they start
    parameters: dict[str, dict]  # trial -> its sampled values
    goal: str  # minimize | maximize
    primary_metric: str
    policy: dict | None  # early_termination as written
    max_concurrent: int
    max_parallel: int  # processes that may run at once
    timeout: int | None  # limits.timeout of the whole sweep
    algorithm: str
    seed: int | None
    python: str = ""
    sweep_yaml: str = ""
    outputs: dict = field(default_factory=dict)  # what PipelineState reads (a sweep has no pipeline outputs)


def plan_sweep(prepared, options, *, environ=None) -> SweepPlan:
    """Everything the local sweep will do (see the module docstring); starts and writes nothing."""
    sweep = prepared.job
    limits = sweep.limits or {}
    algorithm = search_space.word(sweep.sampling_algorithm) or "random"
    given = sweep.sampling_algorithm.get("seed") if isinstance(sweep.sampling_algorithm, dict) else None
    seed = given if given is not None else (random.SystemRandom().randrange(2**31) if algorithm == "random" else None)
    try:
        sets = search_space.trials(sweep.search_space or {}, algorithm, int(limits["max_total_trials"]), seed=seed)
    except search_space.SweepRefused as exc:
        raise UserError(f"{prepared.source}: {exc}", hint=exc.hint) from None
    run_root = os.path.abspath(options.run_root)
    name = job_name(options.name or sweep.name, run_root)
    run_dir = os.path.join(run_root, name)
    steps, parameters = [], {}
    for index, values in enumerate(sets):
        trial = f"trial_{index}"
        job = trial_job(sweep, values, name=trial, file=prepared.source)
        store = "file:" + os.path.join(run_dir, trial, "mlruns")
        job.environment_variables = {**(job.environment_variables or {}), "MLFLOW_TRACKING_URI": store,
                                     "MLFLOW_ALLOW_FILE_STORE": "true"}  # MLflow 3 asks for it to use files
        step_options = dataclasses.replace(options, name=trial, run_root=run_dir)
        local = plan(Prepared(job=job, source=f"{prepared.source} ({trial})", base_dir=prepared.base_dir),
                     step_options, environ=environ)
        steps.append(StepPlan(trial, (), local))
        parameters[trial] = values
    objective = sweep.objective or {}
    return SweepPlan(name, run_dir, prepared.source, steps, parameters, search_space.word(objective.get("goal")),
                     objective.get("primary_metric"), sweep.early_termination,
                     int(limits.get("max_concurrent_trials") or len(steps) or 1),
                     options.max_parallel or os.cpu_count() or 1, limits.get("timeout"), algorithm, seed,
                     steps[0].plan.python if steps else "", dump_yaml(mask_tree(sweep.to_dict())))


def describe_sweep(sp: SweepPlan, *, cwd: str | None = None) -> str:
    """The dry run: the sweep's settings, every trial's values, then the first trial's own dry run (the others
    run the same processes with their own values and run folders; ``to_json()`` holds every plan)."""
    rel = os.path.relpath(sp.run_dir, cwd or os.getcwd())
    seed = f" (seed {sp.seed})" if sp.seed is not None else ""
    lines = [f"sweep {sp.name}: {len(sp.steps)} trial(s), {sp.algorithm} sampling{seed}, {sp.goal} "
             f"{sp.primary_metric}; at most {sp.max_concurrent} trial(s) and {sp.max_parallel} process(es) at once; "
             f"run folder {rel} (not created)"]
    if sp.policy:
        lines.append(f"early termination: {search_space.word(sp.policy)} " + ", ".join(
            f"{k}={v}" for k, v in sp.policy.items() if k != "type"))
    lines += [f"{s.name}: {_values_text(sp.parameters[s.name])}" for s in sp.steps]
    if sp.steps:
        others = " (trial_1 and after: the same with their own values)" if len(sp.steps) > 1 else ""
        lines += ["", f"== {sp.steps[0].name}{others} ==", describe(sp.steps[0].plan, cwd=cwd)]
    return "\n".join(lines)


def _values_text(values: dict) -> str:
    return ", ".join(f"{k}={_number(v)}" for k, v in values.items())


def _number(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def require_mlflow(python: str) -> None:
    """One line when the trials' interpreter has no MLflow (the metric is read from what they log)."""
    if os.path.realpath(python or sys.executable) != os.path.realpath(sys.executable):
        return  # another interpreter (--python): its own business; a trial without MLflow then fails visibly
    if importlib.util.find_spec("mlflow") is None:
        raise UserError("a local sweep reads each trial's primary metric from what it logs with MLflow, and mlflow "
                        f"is not installed for {python or sys.executable}", hint=MLFLOW_HINT)


def read_metric(run_dir: str, metric: str) -> list[float]:
    """The values ``metric`` was logged with in a trial's MLflow file store, in the order logged (by step,
    then time); every run of the store counts (each rank that logs without a run of its own makes one)."""
    store = os.path.join(run_dir, "mlruns")
    entries = []
    for experiment in _folders(store):
        for run in _folders(os.path.join(store, experiment)):
            path = os.path.join(store, experiment, run, "metrics", metric)
            entries += _metric_lines(path, os.path.join(store, experiment, run, "metrics"))
    return [value for _, _, value in sorted(entries)]


def _folders(path: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _metric_lines(path: str, folder: str) -> list[tuple]:
    """``timestamp value step`` lines of one metric file (MLflow's file store), bounded; a link is not read."""
    if os.path.commonpath([os.path.normpath(path), folder]) != folder or os.path.islink(path):
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        try:
            out.append((int(parts[2]) if len(parts) > 2 else 0, int(parts[0]), float(parts[1])))
        except (ValueError, IndexError):
            continue  # a line being written
    return out


class SweepState(PipelineState):
    """The sweep's status.json: a pipeline's (its trials as steps) plus the ``sweep`` block."""

    def __init__(self, sp: SweepPlan):
        super().__init__(sp)
        self.data["sweep"] = {"primary_metric": sp.primary_metric, "goal": sp.goal, "algorithm": sp.algorithm,
                              "seed": sp.seed, "best": None,
                              "trials": [{"name": s.name, "parameters": sp.parameters[s.name], "metric": None,
                                          "status": "NotStarted"} for s in sp.steps]}
        self._write()

    def trial(self, name: str, *, metric=None, status: str | None = None, note: str | None = None) -> None:
        entry = next(t for t in self.data["sweep"]["trials"] if t["name"] == name)
        entry["metric"] = metric if metric is not None else entry["metric"]
        entry["status"] = status or entry["status"]
        if note:
            self._step(name)["note"] = note
        self._write()

    def finished_sweep(self, best: str | None, *, stop_signal: int | None, timed_out: bool = False) -> dict:
        self.data["sweep"]["best"] = best
        statuses = [s["status"] for s in self.data["steps"]]
        if cancel_requested(self.run_dir) or stop_signal is not None:
            status = CANCELED
            self.data["stopped_by"] = ("amldist job cancel" if cancel_requested(self.run_dir)
                                       else signal_name(stop_signal))
        elif FAILED not in statuses and COMPLETED in statuses:
            status = COMPLETED
        else:
            status = FAILED
            failed = [s["name"] for s in self.data["steps"] if s["status"] == FAILED]
            self.data["error"] = (f"trial(s) {', '.join(failed)} failed" if failed
                                  else "limits.timeout was reached before any trial completed" if timed_out
                                  else "no trial completed")
        self._end(status)
        return self.data


class _Trials:
    """The scheduler of :func:`run_sweep`: which trial starts when, the metrics read, the policy applied."""

    def __init__(self, sp: SweepPlan, state: SweepState | None, err):
        self.sp, self.state, self.err = sp, state, err
        self.status = {s.name: "waiting" for s in sp.steps}  # the step runner's words (run_state.STEP_STATUS)
        self.running: dict[str, multiprocessing.Process] = {}
        self.series: dict[str, list[float]] = {}
        self.evaluated: dict[str, int] = {}
        self.early: set[str] = set()
        self.stop_signal: int | None = None
        self.timed_out = False
        self.began = time.monotonic()
        self.context = multiprocessing.get_context("fork")  # the plan is handed over as it is

    def handler(self, signum, frame):
        self.stop_signal = signum
        self.signal_all(signum)

    def signal_all(self, signum) -> None:
        for proc in self.running.values():
            if proc.pid:
                try:
                    os.kill(proc.pid, signum)
                except OSError:
                    pass

    def start_ready(self) -> None:
        for step in self.sp.steps:
            if self.status[step.name] != "waiting":
                continue
            used = sum(s.processes for s in self.sp.steps if s.name in self.running)
            if self.running and (len(self.running) >= self.sp.max_concurrent
                                 or used + step.processes > self.sp.max_parallel):
                return  # in order: a big trial is not overtaken forever by small ones
            sys.stdout.flush()
            sys.stderr.flush()
            proc = self.context.Process(target=step_main, args=(step.plan, os.getpid()), name=f"amldist-{step.name}")
            proc.start()
            self.running[step.name] = proc
            self.status[step.name] = "running"
            if self.state:
                self.state.step_started(step.name)
                self.state.trial(step.name, status="Running")

    def read_metrics(self) -> None:
        for step in self.sp.steps:
            if step.name in self.running:
                self.series[step.name] = read_metric(step.plan.run_dir, self.sp.primary_metric)

    def apply_policy(self) -> None:
        stop = search_space.to_stop(self.sp.policy, self.sp.goal, self.series, set(self.running), self.evaluated)
        for name in stop:
            self.early.add(name)
            values = self.series[name]
            say(f"{name}: stopped by the {search_space.word(self.sp.policy)} policy after {len(values)} report(s) "
                f"of {self.sp.primary_metric} (last {_number(values[-1])})", self.err)
            try:
                os.kill(self.running[name].pid, signal.SIGTERM)
            except OSError:  # it has just ended by itself
                pass

    def check_timeout(self) -> None:
        if self.sp.timeout and not self.timed_out and time.monotonic() - self.began > self.sp.timeout:
            self.timed_out = True
            say(f"sweep {self.sp.name}: limits.timeout ({self.sp.timeout}s) reached: the running trials are "
                "stopped and no other starts", self.err)
            self.signal_all(signal.SIGTERM)

    def finish(self, name: str, code: int) -> None:
        self.running.pop(name)
        step = next(s for s in self.sp.steps if s.name == name)
        code = step_exit_code(step.plan.run_dir, code)
        self.series[name] = read_metric(step.plan.run_dir, self.sp.primary_metric)
        stopped = name in self.early or self.timed_out or self.stop_signal is not None
        self.status[name] = "completed" if code == 0 else "stopped" if stopped else "failed"
        note = (f"stopped by the {search_space.word(self.sp.policy)} policy" if name in self.early and code != 0
                else "stopped at the sweep's limits.timeout" if self.timed_out and code != 0 else None)
        if self.state:
            self.state.step_ended(name, STEP_STATUS[self.status[name]], code)
            self.state.trial(name, metric=self.metric(name), status=STEP_STATUS[self.status[name]], note=note)
        if code == 0 and self.metric(name) is None:
            say(f"warning: {name} completed without logging {self.sp.primary_metric} with MLflow (mlflow.log_metric"
                f"('{self.sp.primary_metric}', value) in the trial's code); it cannot be ranked", self.err)

    def metric(self, name: str):
        values = self.series.get(name) or []
        return values[-1] if values else None

    def loop(self) -> None:
        while True:
            if self.stop_signal is None and not self.timed_out:
                self.start_ready()
            if not self.running:
                return
            self.read_metrics()
            self.apply_policy()
            self.check_timeout()
            for name, proc in list(self.running.items()):
                if not proc.is_alive():
                    proc.join()
                    self.finish(name, proc.exitcode if proc.exitcode >= 0 else 128 - proc.exitcode)
            time.sleep(POLL_SECONDS)

    def best(self) -> str | None:
        scored = [(self.metric(s.name), s.name) for s in self.sp.steps
                  if self.status[s.name] == "completed" and self.metric(s.name) is not None]
        if not scored:
            return None
        pick = max if self.sp.goal == "maximize" else min
        return pick(scored, key=lambda item: item[0])[1]


def run_sweep(sp: SweepPlan, *, out=None, err=None) -> int:
    """Create the sweep's run folder, run its trials (see the module docstring), print the table of trials."""
    out, err = out or sys.stdout, err or sys.stderr
    require_mlflow(sp.python)
    os.makedirs(os.path.dirname(sp.run_dir), exist_ok=True)
    ignore_runs(os.path.dirname(sp.run_dir))
    try:
        os.mkdir(sp.run_dir, 0o700)
    except FileExistsError:
        raise UserError(f"a local run named {sp.name!r} already exists", hint="pass --name NEW") from None
    state = SweepState(sp)
    fd = os.open(os.path.join(sp.run_dir, "sweep.yml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(sp.sweep_yaml)
    seed = f", seed {sp.seed}" if sp.seed is not None else ""
    say(f"sweep {sp.name}: {len(sp.steps)} trial(s) ({sp.algorithm}{seed}), {sp.goal} {sp.primary_metric}, "
        f"run folder {os.path.relpath(sp.run_dir)}", out)
    trials = _Trials(sp, state, err)
    previous = install_handlers(trials.handler)
    try:
        trials.loop()
    finally:
        end_children(trials, previous)
        for name, status in trials.status.items():
            if status == "waiting":
                state.step_not_started(name, "the sweep ended first (limits.timeout, a stop or a failure)")
        best = trials.best()
        data = state.finished_sweep(best, stop_signal=trials.stop_signal, timed_out=trials.timed_out)
    say(table(data), out)
    say(f"sweep {sp.name}: {data['status']}" + (f"; best trial {best}" if best else "")
        + f"; 'amldist job show {sp.name}' shows it again", out)
    if trials.stop_signal is not None:
        return 128 + trials.stop_signal
    return 0 if data["status"] == COMPLETED else 1


def table(data: dict) -> str:
    """The trials of a sweep's status.json as a table: trial, parameters, metric, status; ``*`` the best."""
    sweep = data.get("sweep") or {}
    best = sweep.get("best")
    header = ("", "trial", "parameters", str(sweep.get("primary_metric") or "metric"), "status")
    rows = [header] + [("*" if t.get("name") == best else "", str(t.get("name")),
                        _values_text(t.get("parameters") or {}),
                        "-" if t.get("metric") is None else _number(t.get("metric")), str(t.get("status")))
                       for t in sweep.get("trials") or []]
    width = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row)).rstrip() for row in rows)
