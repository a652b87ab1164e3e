"""The code snapshot of a local run: the job's ``code:`` folder copied into ``<run>/code``.

Why a copy and not the folder itself: Azure ML runs every job in a snapshot of ``code:``,
so files a script writes next to itself (``./outputs``, checkpoints, caches) never land in
the user's source tree, and a second run never sees the first run's leftovers. The local
backend does the same. Like Azure ML, the copy skips what ``.amlignore`` lists, or
``.gitignore`` when there is no ``.amlignore`` (git's full syntax, matched by ``pathspec``
through :mod:`amldist.rules.ignore_files`). ``.git``, ``__pycache__`` and ``.amldist`` (where run
folders live) are always skipped.

amldist's runtime shim is then added to ``<run>/code`` by :mod:`amldist.rules.runtime_bundle`,
exactly as the Azure backend adds it (``amldist/runtime/`` and a minimal ``amldist/__init__.py``),
so ``from amldist.runtime import init_distributed`` imports the same files locally and on Azure;
a code folder with an ``amldist`` entry of its own keeps it, without the shim, as on Azure.
Nothing here imports azure-ai-ml: its ignore matcher is the Azure backend's, this one is ours.
Symbolic links are copied as links (Azure uploads their content; reading through them gives
the same data, and a link to a large data folder is not copied). A relative link keeps working in
the snapshot: it stays relative when its target is copied too, and is rewritten to the target's
absolute path when the target lies outside the code folder or is not copied. Only regular files,
folders and links are copied: a FIFO would block the copy, a device node (``/dev/zero``) would be
read forever and a socket cannot be copied, so any of them is an error naming the file (ignore it
in ``.amlignore``). ``code: /`` (a filesystem root) is refused before anything is copied.
A component's ``additional_includes`` are then added as Azure ML adds them (:func:`copy_includes`).
``code:`` naming one file gives a code folder holding that file alone, as the Azure backend's
snapshot does (:mod:`amldist.azure_sdk.code_snapshot`): the working directory looks the same.
"""

from __future__ import annotations

import os
import shutil
import stat

from amldist.rules.ignore_files import code_ignore, is_ignored
from amldist.rules.runtime_bundle import RUNS_DIR
from amldist.errors import UserError

ALWAYS_SKIPPED = (".git", "__pycache__", RUNS_DIR)


def check_code_source(path: str, file: str = "the job") -> None:
    """Refuse a ``code:`` folder that is a filesystem root (it would copy the whole machine)."""
    if os.path.dirname(os.path.abspath(path)) == os.path.abspath(path):
        raise UserError(f"{file}: code {path!r} is the filesystem root; the local backend copies code: into the run",
                        hint="point code: at the folder holding your scripts, e.g. code: ./src")


def copy_code(source: str, dest: str, *, skip: tuple[str, ...] = (), progress=None) -> int:
    """Copy ``source`` into the new folder ``dest`` honouring the ignore rules; returns the file count.

    ``skip`` holds absolute folders never to copy (the run root when it lies inside the code);
    ``progress(files, bytes)``, when given, is called after each file (a large folder's progress line).
    Links are made once everything else is copied, when it is known which targets are there.
    """
    check_code_source(source)
    if os.path.isfile(source):
        os.makedirs(dest)
        shutil.copy2(source, os.path.join(dest, os.path.basename(source)))
        if progress is not None:
            progress(1, os.path.getsize(source))
        return 1
    rules = code_ignore(source)
    skip_real = {os.path.realpath(p) for p in skip}
    links: list[str] = []
    copied: set[str] = set()  # relative paths in the snapshot, links included
    count = size = 0
    os.makedirs(dest)
    for root, dirs, files in os.walk(source):
        rel_root = os.path.relpath(root, source)
        rel_root = "" if rel_root == "." else rel_root
        kept_dirs = []
        for d in sorted(dirs):
            rel = os.path.join(rel_root, d)
            full = os.path.join(root, d)
            if d in ALWAYS_SKIPPED or os.path.realpath(full) in skip_real or is_ignored(rules, rel, True):
                continue
            copied.add(rel)
            if os.path.islink(full):  # keep links as links, never follow them out of the tree
                links.append(rel)
                continue
            os.makedirs(os.path.join(dest, rel))
            kept_dirs.append(d)
        dirs[:] = kept_dirs
        for f in sorted(files):
            rel = os.path.join(rel_root, f)
            if is_ignored(rules, rel, False):
                continue
            info = os.lstat(os.path.join(root, f))
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                links.append(rel)
                copied.add(rel)
                continue
            if not stat.S_ISREG(mode):
                raise UserError(f"code folder {source}: {rel} is {_kind(mode)}, not a regular file; it cannot be "
                                "copied into the run", hint=f"list it in {os.path.join(source, '.amlignore')}")
            shutil.copy2(os.path.join(root, f), os.path.join(dest, rel), follow_symlinks=False)
            copied.add(rel)
            count, size = count + 1, size + info.st_size
            if progress is not None:
                progress(count, size)
    for rel in links:
        os.symlink(_link_target(source, rel, copied), os.path.join(dest, rel))
    return count


def _link_target(source: str, rel: str, copied: set[str]) -> str:
    """What the snapshot's copy of the link ``rel`` points to (see the module docstring)."""
    target = os.readlink(os.path.join(source, rel))
    if os.path.isabs(target):
        return target
    resolved = os.path.normpath(os.path.join(source, os.path.dirname(rel), target))
    inside = os.path.relpath(resolved, source)
    if inside in copied:
        return target  # the target is in the snapshot too: the relative link still works there
    return resolved


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def copy_includes(includes, dest: str) -> int:
    """Add a component's ``additional_includes`` (:mod:`amldist.rules.additional_includes`) to the
    snapshot ``dest`` as Azure ML does: each under its name in the root, a folder merged into a
    folder of that name, honouring the folder's own ``.amlignore``/``.gitignore``; a zip entry
    written as the folder zipped. Links inside are read through, as azure-ai-ml copies them.
    Returns the number of files added."""
    os.makedirs(dest, exist_ok=True)
    count = 0
    for include in includes:
        target = os.path.join(dest, include.name)
        if include.zipped:
            _zip_folder(include.source, target)
            count += 1
        elif os.path.isdir(include.source):
            count += _merge_folder(include.source, target)
        else:
            shutil.copy2(include.source, target)
            count += 1
    return count


def _included_files(source: str):
    """(relative path, absolute path) of every file an included folder adds, ignore rules applied."""
    rules = code_ignore(source)
    seen = {os.path.realpath(source)}  # linked folders are read through, as azure-ai-ml does, each once
    for root, dirs, files in os.walk(source, followlinks=True):
        rel_root = os.path.relpath(root, source)
        rel_root = "" if rel_root == "." else rel_root
        kept = [d for d in sorted(dirs) if d not in ALWAYS_SKIPPED
                and os.path.realpath(os.path.join(root, d)) not in seen
                and not is_ignored(rules, os.path.join(rel_root, d), True)]
        seen.update(os.path.realpath(os.path.join(root, d)) for d in kept)
        dirs[:] = kept
        for f in sorted(files):
            rel = os.path.join(rel_root, f)
            full = os.path.join(root, f)
            if not is_ignored(rules, rel, False) and os.path.isfile(full):
                yield rel, full


def _merge_folder(source: str, target: str) -> int:
    count = 0
    for rel, full in _included_files(source):
        os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
        shutil.copy2(full, os.path.join(target, rel))
        count += 1
    return count


def _zip_folder(folder: str, target: str) -> None:
    import zipfile

    parent = os.path.dirname(folder)
    with zipfile.ZipFile(target, "w") as archive:
        archive.write(folder, os.path.relpath(folder, parent))  # the folder as the root entry
        for rel, full in sorted(_included_files(folder)):
            archive.write(full, os.path.relpath(full, parent))
