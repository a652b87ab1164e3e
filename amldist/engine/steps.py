"""A pipeline's steps planned one by one, for every backend that runs the steps itself (local, Slurm).

:func:`plan_steps` refuses what cannot run outside Azure ML (naming each step) before anything is
planned, names the pipeline's run folder, and plans each step in the graph's order as its own prepared
job in ``<pipeline>/<step>/``; a step that reads another's output gets the folder that step writes as
its input path (outputs flow by folder, as mounts do on Azure). Each backend plans a step its own way
(the ``plan_step`` it passes).
"""

from __future__ import annotations

import dataclasses
import os

from amldist.engine.job_inputs import job_name
from amldist.errors import UserError
from amldist.model.files import inside
from amldist.submit.pipeline import OutputRef, PreparedPipeline
from amldist.submit.prepared import Prepared


def plan_steps(prepared: PreparedPipeline, options, plan_step, what: str = "local run"):
    """The walk every backend that runs a pipeline's steps itself shares (local, Slurm): refuse what cannot
    run here, name the run, then each step in order as its own prepared job, planned by
    ``plan_step(prepared_job, step_options, pending_inputs)`` with its inputs wired to the places the steps
    before it write (``what`` names a run of the backend in a refusal). Returns
    ``(name, run_dir, [(node, step_plan)], pipeline outputs)``."""
    graph = prepared.graph
    refuse_what_cannot_run_here(prepared)
    run_root = os.path.abspath(options.run_root)
    requested = options.name or graph.name
    name = job_name(requested, run_root, what)
    run_dir = os.path.join(run_root, name)
    places: dict = {}
    planned = []
    for node in graph.nodes:
        missing = [f"{ref.node}.{ref.output}" for ref in node.inputs.values()
                   if isinstance(ref, OutputRef) and ref not in places]
        if missing:
            raise UserError(f"{prepared.source}: step {node.name} reads {', '.join(missing)}, which no step writes")
        folder, leaf = os.path.split(node.name)
        job = node.to_job(places, name=leaf)
        step_root = inside(run_dir, os.path.join(run_dir, folder))  # a step named ../../x stays in the pipeline's folder
        step_options = dataclasses.replace(options, name=leaf, run_root=step_root)
        pending = {k for k, v in node.inputs.items() if isinstance(v, OutputRef)}
        step = plan_step(Prepared(job=job, source=f"{prepared.source} (step {node.name})", base_dir=node.base_dir,
                                  code_includes=node.code_includes()), step_options, pending)
        for out_name, where in step.outputs.items():
            places[OutputRef(node.name, out_name)] = where
        planned.append((node, step))
    outputs = {k: places[ref][0] for k, ref in graph.outputs.items() if ref in places}
    return name, run_dir, planned, outputs


def refuse_what_cannot_run_here(prepared: PreparedPipeline) -> None:
    """One line: the pipeline's own problem, or each step that cannot run on this machine, each saying
    what to pass instead (see :mod:`amldist.submit.pipeline`); nothing has started yet."""
    graph = prepared.graph
    if graph.local_problem:
        raise UserError(f"{prepared.source}: the pipeline cannot run locally: {graph.local_problem}")
    refused = [f"step {n.name}: {n.local_problem}" for n in graph.nodes if n.local_problem]
    if len(refused) == 1:
        raise UserError(f"{prepared.source}: {refused[0]}")
    if refused:  # one line (a newline would reach the screen escaped): the steps one after another
        raise UserError(f"{prepared.source}: {len(refused)} steps cannot run locally: " + "; ".join(refused),
                        hint="submit the pipeline to Azure ML (without --local), or change those steps")
