"""A job's command with its inputs and outputs filled in, for any backend that runs it on its own machines.

One rule, shared by the local and the Slurm backends: every ``${{inputs.x}}``/``${{outputs.y}}`` becomes
a reference to a variable that holds the value (:func:`amldist.engine.command.render`), data
inputs are local paths (relative ones against the YAML's folder), each output is
``<run folder>/outputs/<name>``, and ``environment_variables`` are passed as their text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from amldist.engine.command import Rendered, literal_text, render
from amldist.model.kinds import type_word
from amldist.submit.overrides import is_path_input


@dataclass(frozen=True)
class JobCommand:
    """The command for ``bash -c``, the variables it needs, and where each output goes."""

    command: str
    rendered: Rendered
    variables: dict[str, str]  # environment_variables, then the values the command reads
    outputs: dict[str, tuple[str, str]]  # name -> (path, type)


def job_command(job, inputs: dict[str, str | None], file: str, run_dir: str) -> JobCommand:
    """``job``'s command as it runs from ``run_dir`` (see the module docstring), ``inputs`` the text of each
    input (:func:`amldist.engine.job_inputs.resolve_inputs`); raises UserError."""
    values = {f"inputs.{k}": v for k, v in inputs.items()}
    outputs = {}
    for out_name, spec in (job.outputs or {}).items():
        out_type = (type_word(spec.get("type")) if isinstance(spec, dict) else None) or "uri_folder"
        path = os.path.join(run_dir, "outputs", out_name)
        outputs[out_name] = (path, out_type)
        values[f"outputs.{out_name}"] = path
    local_paths = {f"inputs.{k}" for k, v in (job.inputs or {}).items() if is_path_input(v)} | {
        f"outputs.{k}" for k in outputs}
    rendered = render(job.command, values, file=file, paths=local_paths)  # values travel as variables
    variables = {str(k): "" if v is None else literal_text(v) for k, v in (job.environment_variables or {}).items()}
    variables.update(rendered.env)
    return JobCommand(rendered.command, rendered, variables, outputs)
