"""The ``local`` backend of ``amldist submit``: :func:`plan`, then :func:`launch` exactly that plan.

``plan`` (in :mod:`amldist.backends.local.plan`) starts and writes nothing; ``describe`` is what
``--dry-run --local`` prints; ``run`` (in :mod:`amldist.backends.local.supervisor`) creates the
run folder and runs the planned processes, nothing else.
"""

from __future__ import annotations

from amldist.backends.local import pipeline_run
from amldist.backends.local.plan import LocalPlan, describe, plan
from amldist.backends.local.supervisor import launch
from amldist.submit.prepared import Prepared, SubmitOptions


class LocalBackend:
    """Processes on this machine with Azure ML's launcher environment (see the modules above)."""

    def plan(self, prepared: Prepared, options: SubmitOptions) -> LocalPlan:
        if hasattr(prepared, "graph"):  # a pipeline (amldist.submit.pipeline.PreparedPipeline)
            return pipeline_run.plan_pipeline(prepared, options)
        return plan(prepared, options)

    def describe(self, p: LocalPlan) -> str:
        if isinstance(p, pipeline_run.PipelinePlan):
            return pipeline_run.describe_pipeline(p)
        return describe(p)

    def run(self, p: LocalPlan) -> int:
        if isinstance(p, pipeline_run.PipelinePlan):
            return pipeline_run.run_pipeline(p)
        return launch(p)
