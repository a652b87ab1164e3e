"""The one home for reading a user's file safely and writing one atomically.

Reading (``read_text``): only regular files are read. A FIFO would block the
reader forever, ``/dev/zero`` (directly or through a symlink) never ends, a
socket or a device is no spec: each is refused by name before it is opened, and
again after opening (``fstat`` of the open descriptor, so a file swapped for a
FIFO in between is caught too; the open itself is non-blocking). At most
``max_bytes`` are read, whatever the file's size claims.

Writing (``write_atomic``): the text goes to a temporary file in the target's
folder which then replaces the target in one ``os.replace``, so an interrupted
run never leaves half a file. An existing target must be a regular file (a
symlink to one is followed and its target replaced, so the link stays); its
permission bits are kept. A new file gets the usual ``0o666 & ~umask``.

Hand-written rather than a library: the standard library has the pieces
(``os.open`` flags, ``fstat``, ``os.replace``) and no single call that refuses
special files; the common atomic-write packages do not refuse them either.
"""

from __future__ import annotations

import os
import stat

from amldist.errors import UserError

MAX_SPEC_BYTES = 2 * 1024 * 1024  # matches yamlio.MAX_CHARS: a spec is a few KB, big pipelines ~100 KB

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class FileProblem(UserError):
    """A file that cannot be read (or written) as asked: ``cannot read PATH: REASON``.

    ``code`` names the kind of trouble, ``reason`` says it without the path (for a
    diagnostic that names the file anyway), ``line``/``col`` may point into the file.
    """

    def __init__(self, path: str, code: str, reason: str, *, verb: str = "read", hint: str | None = None,
                 line: int = 0, col: int = 0):
        # A path that is not there, or names a folder/FIFO/device where a file belongs, is a usage mistake
        # (exit 2, as for every command); a file that is there but cannot be used is the work failing (1).
        if code == "missing":
            super().__init__(f"{path} does not exist", hint=hint, exit_code=2)
        else:
            super().__init__(f"cannot {verb} {path}: {reason}", hint=hint,
                             exit_code=2 if code == "not-a-regular-file" else 1)
        self.path, self.code, self.reason, self.line, self.col = path, code, reason, line, col


def kind_of(mode: int) -> str | None:
    """``"a FIFO (named pipe)"``, ``"a folder"``, ... for a special file's mode; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path, *, max_bytes: int = MAX_SPEC_BYTES) -> bytes:
    """The bytes of the regular file ``path``; FileProblem for anything else or more than ``max_bytes``."""
    path = os.fspath(path)
    try:
        _refuse_special(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileProblem(path, "missing", "it does not exist", hint="check the path") from None
    except OSError as exc:
        raise FileProblem(path, "unreadable", str(exc.strerror or exc)) from None
    try:
        info = os.fstat(fd)
        _refuse_special(path, info.st_mode)
        if info.st_size > max_bytes:
            _too_big(path, info.st_size, max_bytes)
        chunks, size = [], 0
        while size <= max_bytes:  # the size stat gave may lie (a growing file, /proc): read at most max_bytes + 1
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            _too_big(path, size, max_bytes)
        return b"".join(chunks)
    except OSError as exc:
        raise FileProblem(path, "unreadable", str(exc.strerror or exc)) from None
    finally:
        os.close(fd)


def read_text(path, *, max_bytes: int = MAX_SPEC_BYTES) -> str:
    """The UTF-8 text (a byte-order mark dropped) of the regular file ``path``; FileProblem otherwise."""
    raw = read_bytes(path, max_bytes=max_bytes)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileProblem(os.fspath(path), "not-utf8",
                          f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                          hint="save it as UTF-8", line=line, col=col) from None


def write_atomic(path, text: str) -> str:
    """Replace (or create) the regular file ``path`` with ``text`` in one step; returns the path written.

    FileProblem when ``path`` exists and is not a regular file (a folder, a FIFO,
    a device, a socket), or its folder cannot be written.
    """
    path = os.fspath(path)
    target = path
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise FileProblem(path, "unwritable", str(exc.strerror or exc), verb="write") from None
    if mode is not None:
        kind = kind_of(mode)
        if kind is not None:
            raise FileProblem(path, "not-a-regular-file", f"it is {kind}, not a regular file", verb="write",
                              hint="name a regular file, or a new one")
        target = os.path.realpath(path)  # a symlink keeps pointing at the replaced file
    folder = os.path.dirname(os.path.abspath(target))
    tmp = os.path.join(folder, f".{os.path.basename(target)}.{os.urandom(4).hex()}.amldist-tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise FileProblem(path, "unwritable", str(exc.strerror or exc), verb="write") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(mode))  # keep the existing file's permissions
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FileProblem(path, "unwritable", str(exc.strerror or exc), verb="write") from None
        raise
    return path


def inside(root, path) -> str:
    """``path``, absolute, when it stays inside the folder ``root`` once ``..`` and symlinks are resolved
    (both sides resolved, so a link above ``root`` is no escape); FileProblem ``outside`` otherwise.

    The one check every writer of a run folder (or of ``job download -o DIR``) makes before it
    creates or writes anything: a name such as ``../../x``, or a link planted in the folder, never
    makes amldist write elsewhere.
    """
    path, root = os.fspath(path), os.fspath(root)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise FileProblem(path, "outside", f"it lies outside {root}", verb="write",
                          hint="names of outputs, steps and files are single folder names (no '..', no links out)")
    return os.path.abspath(path)


def make_folder(root, path) -> str:
    """``os.makedirs(path)`` (existing folders kept) after checking, before and after, that it stays
    inside ``root`` (:func:`inside`): a link swapped in meanwhile is caught too."""
    inside(root, path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise FileProblem(os.fspath(path), "unwritable", str(exc.strerror or exc), verb="write") from None
    return inside(root, path)


def create_file(root, path, text: str, mode: int = 0o644) -> bool:
    """Create the new file ``path`` (inside ``root``) holding ``text``; False when something is already
    there, which is left alone. Never through a link: O_EXCL and O_NOFOLLOW refuse one at ``path``."""
    inside(root, os.path.dirname(os.path.abspath(os.fspath(path))))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        return False
    except OSError as exc:
        raise FileProblem(os.fspath(path), "unwritable", str(exc.strerror or exc), verb="write") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def _refuse_special(path: str, mode: int) -> None:
    kind = kind_of(mode)
    if kind is not None:
        raise FileProblem(path, "not-a-regular-file", f"it is {kind}; amldist reads only regular files",
                          hint="name the file itself")


def _too_big(path: str, size: int, max_bytes: int) -> None:
    raise FileProblem(path, "file-too-large", f"it is {size:,} bytes or more (at most {max_bytes:,})",
                      hint="a spec is a few KB; split it or move data out of it")
