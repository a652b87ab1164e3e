"""A sweep job's submission to Azure ML: the same plan as a command job's, for the trial's code.

The body is azure-ai-ml's own (:func:`amldist.azure_sdk.entities.rest_body` over ``load_job``); the
snapshot is the trial's ``code:`` plus ``amldist/runtime/`` (every trial runs from it, as a command job's
ranks do), and a distributed trial on a catalog VM size gets the size's facts in its
``environment_variables`` (:func:`amldist.rules.fabric.size_variables`), its own values winning.
"""

from __future__ import annotations

import copy


def plan_sweep(prepared, options, *, environ, cwd: str) -> tuple:
    """What the :class:`~amldist.backends.azureml.backend.AzurePlan` of a :class:`~amldist.submit.sweep.PreparedSweep`
    holds: ``(job, workspace, workspace_problem, snapshot, body)``."""
    from amldist.azure_sdk.code_snapshot import plan_snapshot
    from amldist.azure_sdk.entities import job_name, rest_body
    from amldist.backends.azureml.workspace import workspace_or_problem
    from amldist.rules.fabric import size_variables

    job = copy.deepcopy(prepared.job)
    trial = job.trial = dict(job.trial or {})
    resources = trial.get("resources") or job.resources or {}
    sized = size_variables(resources.get("instance_type")) if trial.get("distribution") else {}
    if sized:
        trial["environment_variables"] = {**sized, **(trial.get("environment_variables") or {})}
    job.name = job_name(options.name, job.name)
    workspace, problem = workspace_or_problem(environ, cwd, options)
    snapshot = plan_snapshot(trial.get("code"), prepared.base_dir, trial.get("command"))
    body = rest_body(job, base_dir=prepared.base_dir)
    if snapshot.name is not None:
        body["properties"]["trial"]["codeId"] = (
            f"<uploaded at submit: {snapshot.name}/, {len(snapshot.files)} files"
            + (", amldist/runtime/ included>" if snapshot.shim_added else ">"))
    return job, workspace, problem, snapshot, body


def with_code(job, path: str):
    """``job`` (a command or sweep job, a copy) sending the written snapshot at ``path`` as its code."""
    if getattr(job, "kind", None) == "sweep_job":
        job.trial = {**(job.trial or {}), "code": path}
    else:
        job.code = path
    return job

