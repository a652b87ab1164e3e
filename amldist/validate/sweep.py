"""The semantic rules of a sweep job (``type: sweep``), beyond its JSON Schema.

The trial is a command job's command: its command gets the command rules (placeholders of the sweep's
``inputs``/``outputs``, shell contexts), its distribution and resources the size rules a command job gets
(the trial's ``resources``, else the sweep's), its code and environment the same checks. Besides:

- ``undeclared-search-space`` (error): ``${{search_space.NAME}}`` in the command with no such parameter
  (Azure ML would pass the text as it is);
- ``unused-search-space`` (warning): a parameter the command never reads (every trial would differ only
  in a value nothing uses);
- the search space's own rules (:func:`amldist.rules.search_space.static_findings`): grid over non-choice
  parameters, bayesian limits, empty ranges, non-positive spreads.
"""

from __future__ import annotations

from amldist.diagnostics import ERROR, WARNING
from amldist.rules import search_space
from amldist.rules.suggestions import suggest
from amldist.validate import command_rules, rules, templates


def check_sweep(ctx, data: dict) -> None:
    inputs, outputs = rules.ports(data, "inputs"), rules.ports(data, "outputs")
    trial = data.get("trial") if isinstance(data.get("trial"), dict) else {}
    command = trial.get("command")
    # a search-space value reaches the command as the local trial passes it, an input of that name
    # (amldist.submit.sweep.trial_job): the command rules (the shell grammar among them) read it as one
    space = data.get("search_space") if isinstance(data.get("search_space"), dict) else {}
    as_inputs = (search_space.REFERENCE.sub(lambda m: "${{inputs." + m.group(1) + "}}", command)
                 if isinstance(command, str) else command)
    command_rules.check_command(ctx, ("trial", "command"), as_inputs,
                                {**{name: {"type": "string"} for name in space}, **(inputs or {})}, outputs)
    resources = trial.get("resources") if isinstance(trial.get("resources"), dict) else data.get("resources")
    res_path = ("trial", "resources") if isinstance(trial.get("resources"), dict) else ("resources",)
    rules.check_sizes(ctx, trial.get("distribution"), resources, dist_path=("trial", "distribution"),
                      res_path=res_path, environment_variables=trial.get("environment_variables"))
    rules.check_code(ctx, trial, ("trial",))
    if not templates.check_environment_reference(ctx, trial.get("environment"), ("trial", "environment")):
        rules.check_environment(ctx, trial, ("trial",))
    _check_references(ctx, data, command)
    for found in search_space.static_findings(data):
        ctx.emit(found.path, ERROR, found.code, found.message, found.hint)


def _check_references(ctx, data: dict, command) -> None:
    space = data.get("search_space")
    if not isinstance(space, dict):
        return
    used = search_space.references(command)
    for name in used:
        if name not in space:
            guess = suggest(name, list(space))
            ctx.emit(("trial", "command"), ERROR, "undeclared-search-space",
                     f"trial.command: ${{{{search_space.{name}}}}} names no parameter of search_space",
                     f"did you mean search_space.{guess}?" if guess else "add it to search_space",
                     position=ctx.locate(("trial", "command"), f"search_space.{name}"))
    for name in space:
        if name not in used and isinstance(command, str):
            legacy = "{search_space." + name + "}" in command  # the old form, passed as written
            ctx.emit(("search_space", name), WARNING, "unused-search-space",
                     f"search_space.{name}: the trial's command never reads ${{{{search_space.{name}}}}}"
                     + (f" (it has {{search_space.{name}}}, without the $ and the second braces)" if legacy else ""),
                     f"write ${{{{search_space.{name}}}}} in the command" if legacy else
                     "pass it to the command (--NAME ${{search_space.NAME}}) or remove it")
