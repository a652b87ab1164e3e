"""Copying a local run's logs and outputs for ``amldist job download``: inside ``-o DIR``, links as links.

What a run left is the run's processes' doing, so it is copied as data, never trusted:

- a symbolic link is copied as a link (its text kept), never followed: two links pointing at each
  other, or at ``/``, copy as two small links instead of looping or copying the machine;
- every folder and file written is checked to stay inside the target
  (:func:`amldist.model.files.inside`);
- nothing already in the destination is written through: an existing link where a file or a
  folder goes is replaced by the copy (the link itself, never what it points to); files are opened
  with ``O_NOFOLLOW``;
- only folders, regular files and links are copied (a FIFO or a device in an output is skipped:
  reading one would block or never end);
- nothing is read outside the run folder: a source whose folder resolves elsewhere (a ``user_logs`` or
  ``outputs`` the job replaced by a link to another place) is not copied (:func:`copy_as_data`).

Used by the local and the Slurm backends' ``amldist job download``.
"""

from __future__ import annotations

import os
import shutil
import stat

from amldist.engine.state_files import resolves_inside
from amldist.errors import UserError
from amldist.model.files import inside, make_folder

CHUNK = 1 << 20


def copy_tree(source: str, target: str, root: str | None = None) -> None:
    """Copy the folder ``source`` to ``target`` (merged with what is there), or the file or link
    ``source`` into the folder ``target``; everything stays inside ``root`` (default: ``target``)."""
    root = root or target
    _folder(root, target)
    info = os.lstat(source)
    if not stat.S_ISDIR(info.st_mode):
        _entry(root, source, os.path.join(target, os.path.basename(source)), info)
        return
    for here, dirs, files in os.walk(source, followlinks=False):
        there = os.path.join(target, os.path.relpath(here, source))
        _folder(root, there)
        for name in sorted(dirs):  # a link to a folder is listed with the folders: copied as a link
            path = os.path.join(here, name)
            if os.path.islink(path):
                _entry(root, path, os.path.join(there, name), os.lstat(path))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(here, d))]
        for name in sorted(files):
            path = os.path.join(here, name)
            _entry(root, path, os.path.join(there, name), os.lstat(path))


def check_destination(destination: str) -> None:
    """``-o DIR`` must be a folder or nothing yet: one line otherwise."""
    if os.path.lexists(destination) and not os.path.isdir(destination):
        raise UserError(f"-o {destination} is a file, not a folder", hint="name a folder (it is created)")


def copy_as_data(source: str, target: str, *, within: str, root: str | None = None) -> bool:
    """Copy ``source`` (a folder's tree, or a file or link into the folder ``target``) as :func:`copy_tree`
    does, only when it lies in the run folder ``within``; False when there is nothing to copy. Every path
    written stays inside ``root`` (default ``target``); a failure is one UserError line."""
    if not os.path.lexists(source) or not resolves_inside(within, source):
        return False
    try:
        copy_tree(source, target, os.path.abspath(root) if root else None)
    except (OSError, shutil.Error) as exc:
        detail = exc.args[0][0][2] if isinstance(exc, shutil.Error) and exc.args and exc.args[0] else exc
        raise UserError(f"cannot copy {os.path.relpath(source)} to {os.path.relpath(target)}: {detail}",
                        exit_code=1) from None
    return True


def _folder(root: str, path: str) -> None:
    if os.path.islink(path):  # planted in the destination: replaced, never followed
        os.unlink(path)
    make_folder(root, path)


def _entry(root: str, source: str, dest: str, info: os.stat_result) -> None:
    inside(root, os.path.dirname(dest))
    if os.path.lexists(dest) and (os.path.islink(dest) or not os.path.isdir(dest)):
        os.unlink(dest)
    elif os.path.isdir(dest):
        shutil.rmtree(dest)  # a folder where the run has a file or a link: the run's version wins
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), dest)
    elif stat.S_ISREG(info.st_mode):
        _copy_file(source, dest, info)


def _copy_file(source: str, dest: str, info: os.stat_result) -> None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    src = os.open(source, flags)
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):  # swapped for a FIFO since lstat: skipped
            return
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                      stat.S_IMODE(info.st_mode) or 0o644)
        try:
            while chunk := os.read(src, CHUNK):
                os.write(out, chunk)
        finally:
            os.close(out)
        os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(src)
