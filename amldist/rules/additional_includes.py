"""A component's ``additional_includes``: what Azure ML adds to its code snapshot, read as
azure-ai-ml 1.35.2 reads it (``azure/ai/ml/entities/_component/_additional_includes.py``):

- each entry is a path relative to the component file's folder (absolute ones as written),
  resolved (links followed); it lands in the snapshot root under its own name (its basename),
  a folder merged into a folder of that name;
- an entry ``NAME.zip`` that does not exist while the folder ``NAME`` does is that folder zipped
  (the folder itself as the archive's root entry);
- an entry that does not exist, the filesystem root, or a name the ``code:`` folder already has
  is refused (azure-ai-ml's validation says the same);
- an Azure DevOps artifact entry (a mapping with ``type: artifact``) needs Azure DevOps: amldist
  cannot fetch it, and refuses it naming the entry.

:func:`resolve` answers what to add; the local backend copies it
(:func:`amldist.engine.code_copy.copy_includes`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from amldist.errors import UserError


@dataclass(frozen=True)
class Include:
    source: str  # absolute, resolved: a file or folder (for a zip: the folder to zip)
    name: str  # the entry's name in the snapshot root
    zipped: bool = False


def resolve(entries, base_dir: str, code_dir: str | None, file: str = "the component") -> tuple[Include, ...]:
    """The includes of ``entries`` (the ``additional_includes`` list), checked as described above."""
    if not entries:
        return ()
    if not isinstance(entries, list):
        raise UserError(f"{file}: additional_includes is not a list",
                        hint="list paths, e.g. additional_includes: [../lib]")
    found = []
    for index, entry in enumerate(entries):
        where = f"{file}: additional_includes[{index}]"
        if not isinstance(entry, str):
            raise UserError(f"{where} is an Azure DevOps artifact, which only Azure ML can fetch",
                            hint="download it and list its local path instead, or run on Azure ML")
        found.append(_one(entry, base_dir, code_dir, where))
    return tuple(found)


def _one(entry: str, base_dir: str, code_dir: str | None, where: str) -> Include:
    source = os.path.realpath(os.path.join(base_dir, entry))
    name = os.path.basename(source)
    zipped = False
    if not os.path.exists(source):
        folder = os.path.splitext(source)[0]
        if not (source.endswith(".zip") and os.path.isdir(folder)):
            raise UserError(f"{where}: {entry} does not exist (looked for {source})",
                            hint="paths in additional_includes are relative to the component file")
        source, zipped = folder, True
    if os.path.dirname(source) == source:
        raise UserError(f"{where}: {entry} is the filesystem root", hint="list the folder that holds the files")
    if code_dir and os.path.lexists(os.path.join(code_dir, name)):
        raise UserError(f"{where}: the code folder already has {name!r}, which this include would replace",
                        hint="rename one of them (Azure ML refuses the same)")
    return Include(source, name, zipped)
