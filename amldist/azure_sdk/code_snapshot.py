"""The job's code snapshot: the user's code folder plus ``amldist/runtime/``, in a temporary folder.

Azure ML uploads a job's ``code:`` folder and starts the command inside it, so
copying the runtime package to ``<snapshot>/amldist/runtime/`` makes
``from amldist.runtime import init_distributed`` and ``python -m amldist.runtime``
work in the container without installing amldist there. The shim is added by
:mod:`amldist.rules.runtime_bundle`, exactly as in a local run's snapshot. The user's
folder is only read:

- files are taken the way azure-ai-ml uploads them: the root ``.amlignore`` (or,
  when there is none, the root ``.gitignore``) excludes files, with the SDK's own
  matcher; symbolic links are followed (their content is uploaded); the ignore file
  itself is copied too, so the SDK's second pass over the snapshot agrees;
- ``.amldist/`` at the top of the code folder is left out: it holds amldist's own
  local run folders (``amldist submit --local`` writes them under the current
  directory), which a user never means to upload with ``code: .``;
- files are hard-linked when the temporary folder is on the same file system
  (nothing writes to them), copied otherwise;
- a code folder that already has an ``amldist`` entry keeps it: the shim is not
  added and :attr:`Snapshot.warnings` says so (the job then uses the user's copy);
- ``code:`` naming one file gives a snapshot folder holding that file and the shim
  (the job's working directory looks the same in the container);
- ``code:`` that is not a local path (``azureml:...``, ``https://...``, ``git+...``)
  cannot be changed: no snapshot, and a warning that the shim is not added;
- a job without ``code:`` gets a snapshot with only the shim when its command
  mentions ``amldist`` (``python -m amldist.runtime -- ...``), and stays without code
  otherwise (no upload for a job that does not need one).

Two steps, as for the whole backend: :func:`plan_snapshot` only reads the user's folder and
returns a :class:`SnapshotPlan` (every file the upload will hold, with where it comes from),
which ``--dry-run`` prints; :func:`materialized` writes exactly those files into a folder under
``tempfile.gettempdir()`` and removes it when the ``with`` block ends, whether the submission
worked or not.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field

from amldist.rules import paths
from amldist.rules.ignore_files import check_backtracking, read_lines
from amldist.rules.runtime_bundle import RUNS_DIR, has_own_amldist, shim_files, write_file



@dataclass
class SnapshotPlan:
    """What will be uploaded as the job's code; ``name`` None: no snapshot, the job's ``code:`` is kept."""

    name: str | None = None  # the snapshot folder's name (the upload keeps it in the storage path)
    files: dict[str, str | bytes] = field(default_factory=dict)  # "/"-path -> source file, or bytes to write
    warnings: list[str] = field(default_factory=list)
    shim_added: bool = False


@dataclass
class Snapshot:
    path: str | None  # the folder written (or None: keep the job's code as it is)
    files: list = field(default_factory=list)  # paths relative to the snapshot, "/"-separated
    warnings: list = field(default_factory=list)
    shim_added: bool = False


def _ignore_file(folder: str):
    """azure-ai-ml's own ignore-file object for ``folder`` (``.amlignore`` wins over ``.gitignore``)."""
    from azure.ai.ml._utils._asset_utils import get_ignore_file

    ignore = get_ignore_file(folder)
    if ignore.exists():  # the SDK's matcher backtracks: a pathological pattern would hang the upload
        check_backtracking(read_lines(str(ignore.path)), f"{ignore.path}: the pattern",
                           hint="simplify it: azure-ai-ml's matcher (and so the upload) would take hours on it")
    return ignore


def _code_files(source: str) -> dict[str, str]:
    """The files azure-ai-ml would upload from the folder ``source``: relative path -> real file."""
    ignore = _ignore_file(source)
    files: dict[str, str] = {}
    seen_dirs: set[str] = set()
    for root, dirs, names in os.walk(source, followlinks=True):
        real_root = os.path.realpath(root)
        if real_root in seen_dirs:  # a link cycle: the SDK would loop, we stop
            dirs[:] = []
            continue
        seen_dirs.add(real_root)
        if os.path.samefile(root, source):
            dirs[:] = [d for d in dirs if d != RUNS_DIR]
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            if ignore.is_file_excluded(path) or not os.path.isfile(path):
                continue
            files[os.path.relpath(path, source).replace(os.sep, "/")] = os.path.realpath(path)
    if ignore.exists():  # keep the rules, so the upload applies the same ones to the snapshot
        files.setdefault(os.path.basename(str(ignore.path)), os.path.realpath(str(ignore.path)))
    return files


def _include_files(include) -> dict[str, str | bytes]:
    """The snapshot entries one ``additional_includes`` entry adds (:mod:`amldist.rules.additional_includes`):
    a file under its name, a folder's files under its name (its own ignore file applied, as the SDK does), a
    ``NAME.zip`` entry as that folder zipped, the folder itself the archive's root entry."""
    if not os.path.isdir(include.source):
        return {include.name: include.source}
    files = _code_files(include.source)
    if not include.zipped:
        return {f"{include.name}/{relative}": source for relative, source in files.items()}
    import io
    import zipfile

    root = os.path.basename(include.source)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(include.source, root)
        for relative, source in sorted(files.items()):
            archive.write(source, f"{root}/{relative}")
    return {include.name: buffer.getvalue()}


def plan_snapshot(code: str | None, base_dir: str, command: str | None, includes=()) -> SnapshotPlan:
    """What the job's snapshot will hold (see the module docstring); reads, never writes.

    ``includes``: a component's resolved ``additional_includes``, added at the snapshot's root as Azure ML
    adds them when it builds the component's code, so a component sent as a job runs with them."""
    snap = _plan_code(code, base_dir, command)
    if includes:
        if snap.name is None:
            snap.name = "code"
        for include in includes:
            snap.files.update(_include_files(include))
    return snap


def _plan_code(code: str | None, base_dir: str, command: str | None) -> SnapshotPlan:
    if code is None:
        if "amldist" not in (command or ""):
            return SnapshotPlan()
        return SnapshotPlan("code", dict(shim_files()), shim_added=True)
    if not paths.is_local(code):
        return SnapshotPlan(warnings=[
            f"code {code!r} is not a local folder: the amldist runtime shim cannot be added to it "
            "(the job must bring amldist.runtime itself if it uses it)"])
    source = paths.local_path(code, base_dir)
    if not os.path.exists(source):
        return SnapshotPlan()  # the SDK reports the missing path in its own words
    name = os.path.basename(source.rstrip(os.sep)) or "code"
    if os.path.isdir(source):
        snap = SnapshotPlan(name, _code_files(source))
    else:
        snap = SnapshotPlan(os.path.splitext(name)[0] or "code", {name: os.path.realpath(source)})
    if has_own_amldist(source) or any(f == "amldist" or f.startswith("amldist/") for f in snap.files):
        snap.warnings.append(
            f"{source} already has an 'amldist' entry: the runtime shim was not added, "
            "the job uses that copy")
        return snap
    snap.files.update(shim_files())
    snap.shim_added = True
    if os.path.isdir(source):
        ignore = _ignore_file(source)
        excluded = [f for f in snap.files if f.startswith("amldist/")
                    and ignore.is_file_excluded(os.path.join(source, f))]
        if excluded:
            snap.warnings.append(
                f"the code folder's ignore file excludes {excluded[0]}: the upload will leave the runtime shim "
                "out (add '!amldist/' to .amlignore)")
    return snap


def _link_or_copy(source: str | bytes, target: str) -> None:
    """Hard-link a file when the folders share a file system (nothing writes to it), else copy it."""
    if isinstance(source, str):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(source, target)
            return
        except OSError:
            pass
    write_file(target, source)


def write_snapshot(snap: SnapshotPlan, workdir: str) -> Snapshot:
    """Write exactly the planned files into ``workdir/<name>``."""
    if snap.name is None:
        return Snapshot(None, warnings=list(snap.warnings))
    target = os.path.join(workdir, snap.name)
    os.makedirs(target)
    for relative, source in snap.files.items():
        _link_or_copy(source, os.path.join(target, *relative.split("/")))
    return Snapshot(target, list(snap.files), list(snap.warnings), snap.shim_added)


def build_snapshot(code: str | None, base_dir: str, command: str | None, workdir: str) -> Snapshot:
    """Plan the snapshot and write it into ``workdir`` (an empty folder) in one call."""
    return write_snapshot(plan_snapshot(code, base_dir, command), workdir)


@contextmanager
def materialized(snap: SnapshotPlan):
    """``with materialized(plan) as written:`` -> :class:`Snapshot` in a temporary folder, removed after."""
    workdir = tempfile.mkdtemp(prefix="amldist-snapshot-")
    try:
        yield write_snapshot(snap, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
