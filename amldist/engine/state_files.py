"""Reading and writing the files a run leaves: data, never authority, for every backend on the engine.

What a run's folder holds was written, or could have been rewritten, by the job's own processes (they
run as the user and can write the run folder). So every file amldist reads back from it is read here:

- bounded (at most ``limit`` bytes, one more read to tell a larger file), opened with ``O_NOFOLLOW`` and
  ``O_NONBLOCK`` and kept only when ``fstat`` says it is a regular file: a link (to ``/dev/zero``, to a
  file outside the run), a FIFO (which would block the reader) or a device is refused at once, never read
  (:func:`read_bounded`, :func:`read_json_object`, :func:`read_small_text`);
- typed (:class:`TypedFields`): each field checked against the type amldist writes, each path it names
  resolved inside the run folder, each name a plain one; anything else is one :class:`StateFileError`
  line, so ``amldist job list`` reports that run on one line and lists the others.

Every file amldist writes into a run folder is replaced in one step (a temporary file, then a rename,
:func:`write_state`), so a reader never sees half of it and a link planted where it goes is replaced,
never written through; a marker (``cancel_requested``) is created with ``O_EXCL | O_NOFOLLOW``
(:func:`create_marker`), never truncating what a link at its name points to.
"""

from __future__ import annotations

import json
import os
import re
import stat

from amldist.errors import UserError

MAX_STATE_BYTES = 4 * 1024 * 1024  # a 1,000-rank job's status.json is about 200 KB
SMALL_TEXT_BYTES = 4096  # state/started, state/exit_code, rank_N.exit: a line each
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}\Z")  # \Z: "$" would let a final newline in


class StateFileError(UserError):
    """A file of a run folder that is not what amldist writes (exit 1: that run's record is unreadable)."""

    def __init__(self, message: str, run_dir: str):
        super().__init__(message, hint=f"the run's files are in {os.path.relpath(run_dir)}; remove the folder if "
                         "it is not a run", exit_code=1)


def is_plain_name(name) -> bool:
    """A name that is one file name: letters, digits, ``_.-``, never ``.`` or ``..``."""
    return isinstance(name, str) and bool(PLAIN_NAME.match(name)) and name not in (".", "..")


def read_bounded(path: str, limit: int = MAX_STATE_BYTES) -> bytes | None:
    """The bytes of ``path``, None when there is none; OSError-free: a ``ValueError`` naming what is
    wrong (a link, not a regular file, larger than ``limit``, unreadable)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a link
        raise ValueError(f"cannot be opened as a regular file (a link?): {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("is not a regular file")
        data = os.read(fd, limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"is larger than {limit // 1024} KiB" if limit < 1 << 20 else
                         f"is larger than {limit // (1 << 20)} MiB")
    return data


def read_json_object(path: str, limit: int = MAX_STATE_BYTES) -> dict | None:
    """``path`` as a JSON object (None when there is no file); ValueError naming what is wrong."""
    data = read_bounded(path, limit)
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"is not JSON ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(value, dict):
        raise ValueError(f"holds a JSON {type(value).__name__}, not an object")
    return value


def read_small_text(path: str, limit: int = SMALL_TEXT_BYTES) -> str | None:
    """A one-line state file's text, stripped; None when it is missing or anything but a small regular
    file (what the job left there is data: a FIFO or a link reads as nothing, never blocks)."""
    try:
        data = read_bounded(path, limit)
    except ValueError:
        return None
    return None if data is None else data.decode("utf-8", "replace").strip()


def resolves_inside(folder: str, path: str) -> bool:
    """Whether ``path`` lies in ``folder`` once the folders on its way are resolved (``path`` itself may be
    a link: the reader opens it without following, or copies it as a link)."""
    top = os.path.realpath(folder)
    return os.path.commonpath([top, os.path.realpath(os.path.dirname(os.path.abspath(path)))]) == top


def _open_folder(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def write_state(folder: str | int, data: dict, name: str) -> None:
    """Replace ``folder/name`` with ``data`` as JSON in one step (readers see the old or the new file).
    ``folder`` is a path or an open folder descriptor; a link at ``name`` is replaced, never followed."""
    text = json.dumps(data, indent=2) + "\n"
    dir_fd = _open_folder(folder) if isinstance(folder, str) else folder
    tmp = f".{name}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o644, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        if isinstance(folder, str):
            os.close(dir_fd)


def create_marker(folder: str, name: str, text: str) -> None:
    """Leave the marker ``folder/name``; never through an existing file or link (one already there is a
    request already made, and what a link points to is never truncated)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.join(folder, name), flags, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def marker_present(folder: str, name: str) -> bool:
    """Whether ``folder/name`` is a marker amldist left (a regular file, not something planted)."""
    try:
        return stat.S_ISREG(os.lstat(os.path.join(folder, name)).st_mode)
    except OSError:
        return False


class TypedFields:
    """Typed access to one mapping read from a run folder; every mistake is ``error(what)`` naming the field."""

    def __init__(self, run_dir: str, error):
        self.run_dir = os.path.abspath(run_dir)
        self.error = error  # what -> an exception to raise

    def get(self, mapping: dict, key: str, types: tuple, where: str, *, required: bool = False):
        value = mapping.get(key)
        if value is None:
            if required:
                raise self.error(f"has no {where}{key}")
            return None
        if isinstance(value, bool) or not isinstance(value, types):
            raise self.error(f"has {where}{key} of type {type(value).__name__}, expected "
                             + " or ".join(t.__name__ for t in types))
        return value

    def path(self, mapping: dict, key: str, where: str, *, required: bool = False) -> str | None:
        """A path the file names; it must lie inside the run folder."""
        value = self.get(mapping, key, (str,), where, required=required)
        return None if value is None else self.inside(value, f"{where}{key}")

    def inside(self, value: str, what: str) -> str:
        """``value`` (relative to the run folder, or absolute) resolved; it must lie inside the run folder."""
        if "\0" in value:
            raise self.error(f"names {what} with a NUL byte")
        resolved = os.path.normpath(os.path.join(self.run_dir, value))
        if os.path.commonpath([resolved, self.run_dir]) != self.run_dir:
            raise self.error(f"names {what} outside the run folder")
        return resolved

    def name(self, value, what: str) -> str:
        """``value`` must be a plain file name (:func:`is_plain_name`)."""
        if not is_plain_name(value):
            raise self.error(f"has {what} {str(value)[:40]!r}, not a plain name")
        return value

    def items(self, mapping: dict, key: str, kind: type) -> list:
        """The entries of a list (``kind`` list) or an object (``kind`` dict) of objects."""
        value = self.get(mapping, key, (kind,), "")
        if value is None:
            return []
        if any(not isinstance(item, dict) for item in (value.values() if kind is dict else value)):
            raise self.error(f"has an entry of {key} that is not an object")
        return list(value.items()) if kind is dict else value
