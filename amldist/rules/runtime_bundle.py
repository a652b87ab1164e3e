"""What both backends add to a job's code snapshot: amldist's runtime shim, the same way.

Azure ML starts a job inside a snapshot of its ``code:`` folder, and the local backend does the
same in ``<run>/code``. Each backend copies the user's files its own way (the Azure one with
azure-ai-ml's ignore matcher, the local one without importing azure); the shim is added here,
once, so a script that imports it locally imports the same files in the container:

- ``amldist/runtime/<module>.py``: the files ``amldist.runtime.bundle_files()`` lists;
- ``amldist/__init__.py``: a minimal parent package holding only ``__version__``. A file rather
  than a namespace package because a regular ``amldist`` package installed anywhere on
  ``sys.path`` (in the job's image, or on this machine) wins over a namespace portion even when
  the portion comes first, and the job would import that copy, whatever its version. Not the
  real ``amldist/__init__.py``: it offers names (builders, spec) whose modules are not there.

A code folder with an ``amldist`` entry of its own keeps it and gets no shim
(:func:`has_own_amldist`); each backend says so in its own words. ``.amldist/`` at the top of a
code folder (:data:`RUNS_DIR`) holds the local backend's run folders and is never part of a
snapshot.
"""

from __future__ import annotations

import os
import shutil

from amldist import __version__
from amldist.runtime import bundle_files

RUNS_DIR = ".amldist"  # local run folders: <cwd>/.amldist/runs/<job-name>


def has_own_amldist(folder: str) -> bool:
    """True when ``folder`` has an ``amldist`` entry (a folder, file or link) of its own; ``code:``
    naming one file has one when that file is named ``amldist``."""
    if os.path.isfile(folder):
        return os.path.basename(folder) == "amldist"
    return os.path.lexists(os.path.join(folder, "amldist"))


def shim_files() -> dict[str, str | bytes]:
    """What the shim adds to a snapshot: relative ``/``-separated path -> the source file to copy,
    or the bytes to write (the minimal ``amldist/__init__.py``)."""
    files: dict[str, str | bytes] = dict(bundle_files())
    files["amldist/__init__.py"] = (
        '"""amldist runtime shim, added to the job\'s code snapshot by amldist submit."""\n\n'
        f"__version__ = {__version__!r}\n"
    ).encode()
    return files


def write_file(target: str, source: str | bytes) -> None:
    """Write one snapshot entry: copy ``source`` (a path) or write it (bytes)."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if isinstance(source, bytes):
        with open(target, "wb") as fh:
            fh.write(source)
    else:
        shutil.copyfile(source, target)


def add_runtime(root: str) -> list[str]:
    """Copy the runtime shim into the snapshot folder ``root``; returns the paths written,
    relative to ``root`` and ``/``-separated."""
    written = []
    for relative, source in shim_files().items():
        write_file(os.path.join(root, *relative.split("/")), source)
        written.append(relative)
    return written
