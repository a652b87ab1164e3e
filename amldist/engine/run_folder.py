"""A run folder, as the local and the Slurm backends make it: one place for what both write.

``new_run_folder`` creates the folder (mode 0700, never one that exists already: a name taken
meanwhile is one line) after keeping run folders out of git, fills it, and removes it again when
filling fails or a signal arrives half way, so a partial snapshot is never left for a later run.
Only SIGKILL (or a power cut) during the filling leaves a half-made folder: its first file,
:data:`MAKER` (the pid and start time of the amldist that made it), tells a reader, until the run's
``status.json`` exists, whether the folder is still being made by a live amldist or was abandoned
(:func:`creation_state`); ``job list`` and ``job show`` say which, and a new run of the same name is
refused with what to do. Nothing is removed without being asked.
``fill_job_and_code`` writes what every run folder holds: ``job.yml`` (0600 from the start, the job
as run, secrets masked), ``code/`` (the snapshot of ``code:``, the component's
``additional_includes``, the runtime shim) and the output folders (each checked to stay inside
the run folder, whatever its name). Each backend adds its own (``user_logs/``; ``job.sbatch``).
"""

from __future__ import annotations

import os
import shlex
import shutil

from amldist.engine.code_copy import copy_code, copy_includes
from amldist.errors import UserError
from amldist.model.files import create_file, make_folder
from amldist.rules.runtime_bundle import RUNS_DIR, add_runtime

GITIGNORE = "# run folders of amldist submit --local (written by amldist)\n*\n"
def start_of(pid: int) -> int | None:
    """The start time of ``pid`` (``/proc/<pid>/stat`` field 22), None when gone or a zombie. The local backend's
    process_groups has the same reader, but it runs as a standalone watchdog script (standard library only, by
    its path), so neither can import the other."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    if len(fields) < 20 or fields[0] == "Z" or not fields[19].isdigit():
        return None
    return int(fields[19])


MAKER = ".made_by"  # "<pid> <start time>" of the amldist process that made the folder (module docstring)
BEING_MADE, ABANDONED = "being made", "abandoned"


def new_run_folder(run_dir: str, taken: str, hint: str, fill) -> None:
    """Create ``run_dir`` and ``fill()`` it (see the module docstring); ``taken``/``hint``: the line
    when a run of that name exists already."""
    root = os.path.dirname(run_dir)
    try:
        os.makedirs(root, exist_ok=True)
    except FileExistsError:
        raise UserError(f"the run folders' root {root} is a file, not a folder",
                        hint="move that file away, or run from another folder") from None
    ignore_runs(root)
    try:
        os.mkdir(run_dir, 0o700)  # fails if another run took the name meanwhile: never reuse a folder
    except FileExistsError:
        if creation_state(run_dir) == ABANDONED:
            raise UserError(f"{taken}: {abandoned_text(run_dir)}", hint=hint) from None
        raise UserError(taken, hint=hint) from None
    try:
        create_file(run_dir, os.path.join(run_dir, MAKER), f"{os.getpid()} {start_of(os.getpid())}\n")
        fill()
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def creation_state(run_dir: str) -> str | None:
    """BEING_MADE or ABANDONED for a run folder without ``status.json`` that amldist made, else None (a run
    that started, or a folder of an older amldist): the maker's pid alive with its recorded start time."""
    if os.path.lexists(os.path.join(run_dir, "status.json")):
        return None
    try:
        with open(os.path.join(run_dir, MAKER), "rb") as fh:
            pid, start = (int(part) for part in fh.read(100).split())
    except (OSError, ValueError):
        return None
    return BEING_MADE if start_of(pid) == start else ABANDONED


def abandoned_text(run_dir: str) -> str:
    return (f"its folder {os.path.relpath(run_dir)} was left half made: the amldist that made it was killed "
            "before the run started (during the code copy); nothing of the run ran")


def ignore_runs(run_root: str) -> None:
    """A ``.gitignore`` that keeps run folders out of git, written only in the ``.amldist/`` folder
    holding the run root (the default ``.amldist/runs``): anywhere else a ``*`` would hide a
    repository's own files from git. An existing file (or link) there is left alone, never written
    through."""
    parent = os.path.dirname(os.path.abspath(run_root))
    if os.path.basename(parent) == RUNS_DIR:
        create_file(parent, os.path.join(parent, ".gitignore"), GITIGNORE)


def python_wrappers(p) -> None:
    """``<run>/bin/python`` and ``python3``: scripts that exec the plan's interpreter (a script, not a
    link: a link would hide a venv's ``pyvenv.cfg`` from the interpreter it points to)."""
    folder = os.path.join(p.run_dir, "bin")
    os.makedirs(folder)
    for name in ("python", "python3"):
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'#!/bin/sh\nexec {shlex.quote(p.python)} "$@"\n')
        os.chmod(path, 0o755)


def fill_job_and_code(p, progress=None) -> None:
    """``job.yml``, ``code/`` and the output folders of plan ``p`` (a local or a Slurm job plan);
    ``progress(files, bytes)`` follows a large copy."""
    job_file = os.open(os.path.join(p.run_dir, "job.yml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(job_file, "w", encoding="utf-8") as fh:
        fh.write(p.job_yaml)
    code = os.path.join(p.run_dir, "code")
    if p.code_source:
        copy_code(p.code_source, code, skip=(os.path.dirname(p.run_dir),), progress=progress)
    else:
        os.makedirs(code)
    copy_includes(p.includes, code)  # a component's additional_includes, laid out as Azure ML lays them out
    if p.add_runtime:
        add_runtime(code)
    for path, out_type in p.outputs.values():
        make_folder(p.run_dir, os.path.dirname(path) if out_type == "uri_file" else path)
