"""A pipeline run on this machine: each step planned and launched as the local backend runs one job.

Two steps, as for a single job:

1. :func:`plan_pipeline` is pure: it refuses steps that cannot run here (naming them) before
   anything starts, names the run folder ``.amldist/runs/<pipeline>/``, and plans each step in
   the graph's order with :func:`amldist.backends.local.plan.plan` (run folder
   ``<pipeline>/<step>/``, nested steps in ``<pipeline>/<outer>/<inner>/``). A step that reads
   another's output gets that step's planned output folder as its input path: outputs flow by
   folder, as mounts do on Azure. :func:`describe_pipeline` prints the order and every step's
   own dry run (processes, commands, environment, secrets masked).
2. :func:`run_pipeline` is the only step that acts. It starts each step when the steps it reads
   from have completed, as long as the processes running stay within ``max_parallel`` (a step
   larger than the budget runs alone). Each step is :func:`amldist.backends.local.supervisor.launch`
   in a child process of its own: the supervisor adopts orphans and handles signals per process,
   so two steps side by side must not share one. A failing step stops the steps that depend on it
   (they are ``skipped``); steps that do not depend on it finish. Ctrl-C, SIGTERM or SIGHUP are
   passed on to every running step, which stops its processes; no new step starts.

The run folder gets ``pipeline.yml`` (the pipeline as run, secrets masked) and ``summary.json``
(each step's status, exit code, duration and run folder, and where the pipeline outputs are).
Exit code: 0 when every step completed, 1 when one failed, 128+N when stopped by signal N.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from dataclasses import dataclass, field

from amldist.backends.local.plan import LocalPlan, describe, plan
from amldist.backends.local.process_groups import die_with_parent
from amldist.backends.local.records import step_exit_code
from amldist.backends.local.run_state import STEP_STATUS, PipelineState, write_state
from amldist.engine.run_folder import ignore_runs
from amldist.engine.steps import plan_steps, refuse_what_cannot_run_here
from amldist.backends.local.supervisor import STOP_SIGNALS, launch, say
from amldist.errors import UserError
from amldist.rules.secrets import mask_tree
from amldist.model.yamlio import dump_yaml
from amldist.submit.pipeline import PreparedPipeline
from amldist.submit.prepared import SubmitOptions

__all__ = ["PipelinePlan", "StepPlan", "describe_pipeline", "plan_pipeline", "plan_steps",
           "refuse_what_cannot_run_here", "run_pipeline"]

POLL_SECONDS = 0.05


@dataclass
class StepPlan:
    name: str  # qualified step name ("train", "outer/inner")
    needs: tuple[str, ...]  # the steps it reads from
    plan: LocalPlan

    @property
    def processes(self) -> int:
        return len(self.plan.ranks)


@dataclass
class PipelinePlan:
    name: str
    run_dir: str
    source: str
    steps: list[StepPlan]  # in the order they may start
    outputs: dict[str, str]  # pipeline output -> the folder (or file) the step writes
    max_parallel: int  # processes that may run at once
    pipeline_yaml: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def summary_path(self) -> str:
        return os.path.join(self.run_dir, "summary.json")


def plan_pipeline(prepared: PreparedPipeline, options: SubmitOptions, *, environ=None) -> PipelinePlan:
    """Everything the local pipeline run will do (see the module docstring); starts and writes nothing."""
    name, run_dir, planned, outputs = plan_steps(
        prepared, options, lambda job, step_options, pending: plan(job, step_options, environ=environ,
                                                                   pending_inputs=pending))
    steps = [StepPlan(node.name, node.needs, step) for node, step in planned]
    budget = options.max_parallel or os.cpu_count() or 1
    data = prepared.job.to_dict() if hasattr(prepared.job, "to_dict") else {}
    return PipelinePlan(name, run_dir, prepared.source, steps, outputs, budget, dump_yaml(mask_tree(data)))


def describe_pipeline(pp: PipelinePlan, *, cwd: str | None = None) -> str:
    """The dry run: the order, then each step's own dry run."""
    rel = os.path.relpath(pp.run_dir, cwd or os.getcwd())
    lines = [f"pipeline {pp.name}: {len(pp.steps)} step(s); run folder {rel} (not created); "
             + parallel_text(pp),
             "order: " + " -> ".join(s.name for s in pp.steps)]
    for out_name, path in pp.outputs.items():
        lines.append(f"pipeline output {out_name}: {os.path.relpath(path, cwd or os.getcwd())}")
    for step in pp.steps:
        after = f" (after {', '.join(step.needs)})" if step.needs else ""
        lines += ["", f"== step {step.name}{after} ==", describe(step.plan, cwd=cwd)]
    return "\n".join(lines)


def parallel_text(pp: PipelinePlan) -> str:
    """What --max-parallel means for these steps: a step of more processes than the budget still runs, alone."""
    text = f"independent steps run side by side within {pp.max_parallel} process(es) (--max-parallel)"
    larger = [f"{s.name}: {s.processes}" for s in pp.steps if s.processes > pp.max_parallel]
    return text + (f"; a larger step runs alone ({', '.join(larger)})" if larger else "")


def _step_main(p: LocalPlan, parent: int) -> None:
    """A step's child process: its own session (signals come from the pipeline, not the terminal),
    gone with the pipeline (PR_SET_PDEATHSIG), then exactly the single-job launch."""
    os.setsid()
    preexec = die_with_parent(parent)
    if preexec is not None:
        preexec()
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    code = launch(p)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


step_main = _step_main  # the name a sweep's trials run under (amldist.backends.local.sweep_run)


class _Runner:
    """The scheduler of :func:`run_pipeline`: which step starts when, and what each one ended as."""

    def __init__(self, pp: PipelinePlan, err, state: PipelineState | None = None):
        self.pp = pp
        self.err = err
        self.state = state  # the pipeline's status.json (run_state.PipelineState)
        self.status = {s.name: "waiting" for s in pp.steps}
        self.codes: dict[str, int | None] = {}
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.running: dict[str, multiprocessing.Process] = {}
        self.stop_signal: int | None = None
        self.context = multiprocessing.get_context("fork")  # the plan is handed over as it is

    def handler(self, signum, frame):
        for proc in self.running.values():  # a second signal reaches the steps again: no more grace
            if proc.pid:
                try:
                    os.kill(proc.pid, signum)
                except OSError:
                    pass
        self.stop_signal = signum

    def ready(self):
        for step in self.pp.steps:
            if self.status[step.name] == "waiting" and all(self.status[n] == "completed" for n in step.needs):
                yield step

    def start(self, step: StepPlan) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        proc = self.context.Process(target=_step_main, args=(step.plan, os.getpid()), name=f"amldist-{step.name}")
        proc.start()
        self.running[step.name] = proc
        self.status[step.name] = "running"
        self.started[step.name] = time.time()
        if self.state:
            self.state.step_started(step.name)

    def finish(self, name: str, code: int) -> None:
        self.running.pop(name)
        self.ended[name] = time.time()
        code = step_exit_code(next(s.plan.run_dir for s in self.pp.steps if s.name == name), code)
        self.codes[name] = code
        self.status[name] = "completed" if code == 0 else "stopped" if self.stop_signal is not None else "failed"
        if self.state:
            self.state.step_ended(name, STEP_STATUS[self.status[name]], code)
        if code == 0:
            return
        skipped = self.dependents(name)
        for other in skipped:
            self.status[other] = "skipped"
            if self.state:
                self.state.step_not_started(other, f"it reads from {name}, which did not complete")
        if self.stop_signal is None:
            print(f"error: step {name} of pipeline {self.pp.name} failed (exit {code})"
                  + (f"; not started: {', '.join(skipped)} (they read from it)" if skipped else ""), file=self.err)

    def dependents(self, name: str) -> list[str]:
        """Every waiting step that reads from ``name``, directly or through other steps."""
        out: list[str] = []
        for step in self.pp.steps:
            if self.status[step.name] == "waiting" and any(n == name or n in out for n in step.needs):
                out.append(step.name)
        return out

    def loop(self) -> None:
        while True:
            if self.stop_signal is None:
                for step in self.ready():
                    used = sum(s.processes for s in self.pp.steps if s.name in self.running)
                    if self.running and used + step.processes > self.pp.max_parallel:
                        break  # in order: a big step is not overtaken forever by small ones
                    self.start(step)
            if not self.running:
                return
            for name, proc in list(self.running.items()):
                if not proc.is_alive():
                    proc.join()
                    code = proc.exitcode
                    self.finish(name, code if code >= 0 else 128 - code)
            time.sleep(POLL_SECONDS)


def install_handlers(handler) -> dict:
    """``handler`` for the stop signals, from the main thread only (a signal handler can be set nowhere else);
    returns the handlers it replaced. The pipeline and the sweep runners both stand on it."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}


def end_children(runner, previous: dict) -> None:
    """The runner's end, whatever ended its loop: the replaced handlers back, and no child (a step or a
    trial) outliving it, each recorded as failed (code 1)."""
    for sig, old in previous.items():
        signal.signal(sig, old)
    for name, proc in list(runner.running.items()):
        proc.terminate()
        proc.join()
        runner.finish(name, 1)


def run_pipeline(pp: PipelinePlan, *, out=None, err=None) -> int:
    """Create the pipeline's run folder, run its steps (see the module docstring), write the summary."""
    out = out or sys.stdout
    err = err or sys.stderr
    os.makedirs(os.path.dirname(pp.run_dir), exist_ok=True)
    ignore_runs(os.path.dirname(pp.run_dir))
    try:
        os.mkdir(pp.run_dir, 0o700)
    except FileExistsError:
        raise UserError(f"a local run named {pp.name!r} already exists", hint="pass --name NEW") from None
    record = PipelineState(pp)
    fd = os.open(os.path.join(pp.run_dir, "pipeline.yml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(pp.pipeline_yaml)
    say(f"pipeline {pp.name}: {len(pp.steps)} step(s) ({' -> '.join(s.name for s in pp.steps)}), run folder "
        f"{os.path.relpath(pp.run_dir)}", out)  # a closed stdout must not stop the pipeline (supervisor.say)
    runner = _Runner(pp, err, record)
    previous = install_handlers(runner.handler)
    began = time.time()
    try:
        runner.loop()
    finally:
        end_children(runner, previous)
        for name, state in runner.status.items():
            if state == "waiting":
                runner.status[name] = "not started"
        write_summary(pp, runner, time.time() - began)
        record.finished(stop_signal=runner.stop_signal)
    say(summary_text(pp, runner), out)
    if runner.stop_signal is not None:
        print(f"error: pipeline {pp.name} stopped by {signal.Signals(runner.stop_signal).name}", file=err)
        return 128 + runner.stop_signal
    if all(state == "completed" for state in runner.status.values()):
        say(f"pipeline {pp.name}: Completed in {time.time() - began:.1f}s; summary in "
            f"{os.path.relpath(pp.summary_path)}", out)
        return 0
    return 1


def step_records(pp: PipelinePlan, runner: _Runner) -> list[dict]:
    records = []
    for step in pp.steps:
        start, end = runner.started.get(step.name), runner.ended.get(step.name)
        records.append({
            "name": step.name, "status": runner.status[step.name], "exit_code": runner.codes.get(step.name),
            "needs": list(step.needs), "processes": step.processes,
            "started": None if start is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)),
            "duration_s": None if start is None or end is None else round(end - start, 3),
            "run_folder": os.path.relpath(step.plan.run_dir, pp.run_dir),
        })
    return records


def write_summary(pp: PipelinePlan, runner: _Runner, elapsed: float) -> None:
    states = set(runner.status.values())
    status = "completed" if states == {"completed"} else "stopped" if runner.stop_signal else "failed"
    summary = {"pipeline": pp.name, "status": status, "duration_s": round(elapsed, 3),
               "steps": step_records(pp, runner), "outputs": pp.outputs}
    try:
        write_state(pp.run_dir, summary, os.path.basename(pp.summary_path))  # never through a planted link
    except OSError:
        pass  # status.json holds the same record


def summary_text(pp: PipelinePlan, runner: _Runner) -> str:
    rows = [(r["name"], STEP_STATUS[r["status"]], "" if r["duration_s"] is None else f"{r['duration_s']:.1f}s",
             r["run_folder"])
            for r in step_records(pp, runner)]
    width = [max(len(row[i]) for row in rows + [("step", "status", "time", "folder")]) for i in range(3)]
    return "\n".join(f"  {a:<{width[0]}}  {b:<{width[1]}}  {c:>{width[2]}}  {d}" for a, b, c, d in rows)
