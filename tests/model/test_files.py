"""spec.files: only regular files are read (bounded), and writes are atomic, mode-keeping, regular-only."""

from __future__ import annotations

import os
import socket
import stat
import threading

import pytest

from amldist.model import files
from amldist.model.files import FileProblem, read_text, write_atomic


def _reads_within(path, seconds=5.0):
    """read_text(path) in a thread: (finished, result or exception)."""
    box = {}

    def target():
        try:
            box["value"] = read_text(path)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["value"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), box.get("value")


def test_a_regular_file_is_read_and_a_bom_dropped(tmp_path):
    path = tmp_path / "job.yml"
    path.write_bytes(b"\xef\xbb\xbftype: command\n")
    assert read_text(path) == "type: command\n"


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "FIFO"),
    (lambda p: os.symlink("/dev/zero", p), "character device"),
    (lambda p: os.mkdir(p), "folder"),
])
def test_special_files_are_refused_by_name_without_blocking(tmp_path, make, kind):
    path = tmp_path / "spec.yml"
    make(path)
    finished, result = _reads_within(path)
    assert finished, "reading a special file blocked"
    assert isinstance(result, FileProblem) and result.code == "not-a-regular-file"
    assert kind in result.message and str(path) in result.message and result.exit_code == 2  # a usage mistake


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.yml"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(FileProblem, match="socket"):
            read_text(path)
    finally:
        server.close()


def test_size_is_bounded_before_reading(tmp_path):
    path = tmp_path / "big.yml"
    path.write_bytes(b"a" * 101)
    with pytest.raises(FileProblem) as info:
        read_text(path, max_bytes=100)
    assert info.value.code == "file-too-large" and "at most 100" in info.value.message
    assert read_text(path, max_bytes=101) == "a" * 101


def test_bad_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "latin1.yml"
    path.write_bytes(b"type: command\ncommand: caf\xe9\n")
    with pytest.raises(FileProblem) as info:
        read_text(path)
    assert (info.value.code, info.value.line, info.value.col) == ("not-utf8", 2, 13)


def test_missing_file_and_link_loop_are_one_clear_error(tmp_path):
    loop = tmp_path / "loop.yml"
    os.symlink(loop, loop)
    with pytest.raises(FileProblem) as info:
        read_text(tmp_path / "nope.yml")
    # a missing path is a usage mistake, exit 2 in every command (the CLI's exit-code table)
    assert info.value.code == "missing" and info.value.exit_code == 2
    assert info.value.message == f"{tmp_path / 'nope.yml'} does not exist"
    with pytest.raises(FileProblem) as info:
        read_text(loop)
    assert info.value.code == "unreadable" and info.value.message.startswith(f"cannot read {loop}: ")


def test_write_atomic_keeps_the_mode_of_an_existing_file(tmp_path):
    path = tmp_path / "out.yaml"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    inode = os.stat(path).st_ino
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.stat(path).st_ino != inode  # replaced, not rewritten in place
    assert os.listdir(tmp_path) == ["out.yaml"]  # no temporary file left


def test_write_atomic_new_file_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.yaml", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.yaml").st_mode) == 0o640


def test_write_atomic_through_a_symlink_replaces_its_target(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_text("old\n")
    link = tmp_path / "link.yaml"
    os.symlink(real, link)
    write_atomic(link, "new\n")
    assert os.path.islink(link) and real.read_text() == "new\n"


@pytest.mark.parametrize("make", [lambda p: os.mkfifo(p), lambda p: os.mkdir(p),
                                  lambda p: os.symlink("/dev/null", p)])
def test_write_atomic_refuses_a_special_target(tmp_path, make):
    path = tmp_path / "out.yaml"
    make(path)
    before = os.lstat(path)
    with pytest.raises(FileProblem) as info:
        write_atomic(path, "x\n")
    assert info.value.code == "not-a-regular-file" and info.value.message.startswith(f"cannot write {path}")
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert sorted(os.listdir(tmp_path)) == ["out.yaml"]


def test_write_atomic_into_a_missing_folder_is_a_file_problem(tmp_path):
    with pytest.raises(FileProblem) as info:
        write_atomic(tmp_path / "no" / "out.yaml", "x")
    assert info.value.code == "unwritable"


def test_kind_of_names_each_special_kind():
    assert files.kind_of(stat.S_IFREG | 0o644) is None
    assert files.kind_of(stat.S_IFIFO) == "a FIFO (named pipe)"
    assert files.kind_of(stat.S_IFBLK) == "a block device"
