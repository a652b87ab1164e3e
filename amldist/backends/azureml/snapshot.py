"""The job's code snapshot: the user's code folder plus ``amldist/runtime/``, in a temporary folder.

Azure ML uploads a job's ``code:`` folder and starts the command inside it, so
copying the runtime package to ``<snapshot>/amldist/runtime/`` makes
``from amldist.runtime import init_distributed`` and ``python -m amldist.runtime``
work in the container without installing amldist there. The shim is added by
:mod:`amldist.backends.runtime_bundle`, exactly as in a local run's snapshot. The user's
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

The snapshot lives under ``tempfile.gettempdir()`` and is removed when the
``with`` block ends, whether the submission worked or not.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field

import amldist.runtime
from amldist.backends.runtime_bundle import RUNS_DIR, add_runtime, has_own_amldist

RUNTIME_DIR = os.path.dirname(os.path.abspath(amldist.runtime.__file__))  # the package the shim comes from
_REMOTE = re.compile(r"^(azureml:|[a-zA-Z][a-zA-Z0-9+.-]+://|git\+)")
LOCAL_RUNS_DIR = RUNS_DIR  # where the local backend keeps its run folders


@dataclass
class Snapshot:
    path: str | None  # the folder (or None: keep the job's code as it is)
    files: list = field(default_factory=list)  # paths relative to the snapshot, "/"-separated
    warnings: list = field(default_factory=list)
    shim_added: bool = False


def is_local_code(code: str) -> bool:
    return not _REMOTE.match(code)


def _ignore_file(folder: str):
    """azure-ai-ml's own ignore-file object for ``folder`` (``.amlignore`` wins over ``.gitignore``)."""
    from azure.ai.ml._utils._asset_utils import get_ignore_file

    return get_ignore_file(folder)


def _link_or_copy(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    real = os.path.realpath(source)
    try:
        os.link(real, target)
    except OSError:
        shutil.copy2(real, target)


def _copy_code_folder(source: str, target: str, files: list) -> None:
    ignore = _ignore_file(source)
    seen_dirs: set[str] = set()
    for root, dirs, names in os.walk(source, followlinks=True):
        real_root = os.path.realpath(root)
        if real_root in seen_dirs:  # a link cycle: the SDK would loop, we stop
            dirs[:] = []
            continue
        seen_dirs.add(real_root)
        if os.path.samefile(root, source):
            dirs[:] = [d for d in dirs if d != LOCAL_RUNS_DIR]
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            if ignore.is_file_excluded(path) or not os.path.isfile(path):
                continue
            relative = os.path.relpath(path, source)
            _link_or_copy(path, os.path.join(target, relative))
            files.append(relative.replace(os.sep, "/"))
    if ignore.exists():  # keep the rules, so the upload applies the same ones to the snapshot
        name = os.path.basename(str(ignore.path))
        if not os.path.exists(os.path.join(target, name)):
            _link_or_copy(str(ignore.path), os.path.join(target, name))
            files.append(name)


def build_snapshot(code: str | None, base_dir: str, command: str | None, workdir: str) -> Snapshot:
    """Fill ``workdir`` (an empty temporary folder) with the job's snapshot; see the module docstring."""
    if code is None:
        if "amldist" not in (command or ""):
            return Snapshot(None)
        target = os.path.join(workdir, "code")
        os.makedirs(target)
        return Snapshot(target, files=add_runtime(target), shim_added=True)
    if not is_local_code(code):
        return Snapshot(None, warnings=[
            f"code {code!r} is not a local folder: the amldist runtime shim cannot be added to it "
            "(the job must bring amldist.runtime itself if it uses it)"])
    source = os.path.normpath(os.path.join(base_dir, code))
    if not os.path.exists(source):
        return Snapshot(None)  # the SDK reports the missing path in its own words
    name = os.path.basename(source.rstrip(os.sep)) or "code"
    # Named like the user's folder: the upload keeps that name in the storage path.
    target = os.path.join(workdir, name if os.path.isdir(source) else os.path.splitext(name)[0] or "code")
    snap = Snapshot(target)
    if os.path.isdir(source):
        _copy_code_folder(source, target, snap.files)
    else:
        _link_or_copy(source, os.path.join(target, name))
        snap.files.append(name)
    if has_own_amldist(target) or has_own_amldist(source):
        snap.warnings.append(
            f"{source} already has an 'amldist' entry: the runtime shim was not added, "
            "the job uses that copy")
        return snap
    snap.files += add_runtime(target)
    snap.shim_added = True
    ignore = _ignore_file(target)
    excluded = [f for f in snap.files if f.startswith("amldist/") and ignore.is_file_excluded(os.path.join(target, f))]
    if excluded:
        snap.warnings.append(
            f"the code folder's ignore file excludes {excluded[0]}: the upload will leave the runtime shim out "
            "(add '!amldist/' to .amlignore)")
    return snap


@contextmanager
def code_snapshot(code: str | None, base_dir: str, command: str | None):
    """``with code_snapshot(job.code, base_dir, job.command) as snap:`` -> :class:`Snapshot`; removed after."""
    workdir = tempfile.mkdtemp(prefix="amldist-snapshot-")
    try:
        yield build_snapshot(code, base_dir, command, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
