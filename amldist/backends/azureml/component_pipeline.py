"""A component with a value output, sent to Azure ML as the one step of a pipeline job.

A component runs as a command job (:func:`amldist.authoring.component_job.component_to_job`), but
a command job cannot declare an output that carries a value (``type: boolean`` and the other
primitive types, a pipeline's control outputs): azure-ai-ml refuses the job. Azure ML takes such
an output from a pipeline step, which is also how its studio runs one component on its own. So
the Azure backend sends that component as a pipeline job with one step, the component itself
(``component: file:<its file>``), carrying what the job had: input values, resources,
distribution, environment variables, limits, compute, display and experiment names. A ``--set`` on
the component's ``command`` or ``code`` does not carry over (the step runs the component as
written). The local backends keep the command job, the value output becoming a folder.
"""

from __future__ import annotations

import os
import re

from amldist.model.kinds import value_outputs
from amldist.submit.pipeline import PreparedPipeline
from amldist.submit.prepared import Prepared

PIPELINE_SCHEMA = "https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json"


def needs_pipeline(prepared) -> bool:
    """Whether ``prepared`` is a job with a value output, which Azure ML takes only from a pipeline step."""
    return isinstance(prepared, Prepared) and bool(value_outputs(prepared.job.outputs))


def as_one_step_pipeline(prepared: Prepared, cwd: str) -> PreparedPipeline:
    """``prepared`` (a component run as a job) as a pipeline job whose one step is the component."""
    from amldist.model.yamlio import dump_yaml, load_yaml
    from amldist.submit.pipeline import prepare_pipeline
    from amldist.submit.prepare import check_findings  # prepare's rule: raise on an error, keep the warnings

    job = prepared.job
    step: dict = {"type": "command", "component": "file:./" + os.path.basename(prepared.source)}
    if job.inputs:
        step["inputs"] = dict(job.inputs)
    for field in ("resources", "distribution", "limits"):
        value = getattr(job, field, None)
        if value is not None and value.to_dict():
            step[field] = value.to_dict()
    if job.environment_variables:
        step["environment_variables"] = dict(job.environment_variables)
    data: dict = {"$schema": PIPELINE_SCHEMA, "type": "pipeline"}
    for field in ("name", "display_name", "experiment_name", "description", "tags", "compute"):
        if getattr(job, field, None):
            data[field] = getattr(job, field)
    data["jobs"] = {_step_name(prepared.source): step}
    text = dump_yaml(data)
    return prepare_pipeline(prepared.source, load_yaml(text), text, cwd=cwd, check=check_findings)


def note(prepared: Prepared) -> str:
    """The line the dry run and the submission show about the change of kind."""
    names = ", ".join(repr(name) for name in value_outputs(prepared.job.outputs))
    return (f"{prepared.source} is sent as the one step of a pipeline job: its output {names} carries a value, "
            "which Azure ML takes only from a pipeline step, not from a command job")


def _step_name(source: str) -> str:
    """The step's name: the component's own name (else its file's), as a valid step name."""
    from amldist.model import load

    name = getattr(load(source), "name", None) or os.path.splitext(os.path.basename(source))[0]
    stem = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_")
    return stem if stem and not stem[0].isdigit() else f"step_{stem}"
