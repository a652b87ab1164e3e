"""The code snapshot: regular files, folders and links only; relative links keep working; no ``code: /``."""

from __future__ import annotations

import os
import socket

import pytest

from amldist.engine.code_copy import check_code_source, copy_code
from amldist.errors import UserError


def test_relative_links_work_in_the_snapshot_inside_and_outside_the_code_folder(tmp_path):
    src, data = tmp_path / "src", tmp_path / "data"
    (src / "pkg").mkdir(parents=True)
    data.mkdir()
    (data / "train.csv").write_text("a,b\n")
    (src / "pkg" / "model.py").write_text("W = 1\n")
    (src / "model.py").symlink_to("pkg/model.py")  # inside: stays relative
    (src / "data").symlink_to("../data")  # outside: would point at <run>/data in the snapshot
    (src / "skipped.log").write_text("x")
    (src / ".amlignore").write_text("*.log\n")
    (src / "log").symlink_to("skipped.log")  # target not copied: pointed at the original
    (src / "abs").symlink_to(data / "train.csv")
    (src / "dangling").symlink_to("nowhere")
    dest = tmp_path / "run" / "code"
    copy_code(str(src), str(dest))
    assert os.readlink(dest / "model.py") == "pkg/model.py"
    assert (dest / "model.py").read_text() == "W = 1\n"
    assert os.readlink(dest / "data") == str(data)
    assert (dest / "data" / "train.csv").read_text() == "a,b\n"
    assert os.readlink(dest / "log") == str(src / "skipped.log")
    assert not (dest / "skipped.log").exists()
    assert os.readlink(dest / "abs") == str(data / "train.csv")
    assert (dest / "dangling").is_symlink()


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_special_files_are_refused_with_the_file_named(tmp_path, kind):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("")
    special = src / "special"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(special))
        sock.close()
    else:  # a link to /dev/zero is a link (kept); the device itself is what must never be read
        if not os.access("/dev", os.W_OK):
            pytest.skip("no way to make a device node here")
        try:
            os.mknod(special, 0o600 | 0o020000, os.makedev(1, 5))  # a character device: /dev/zero's numbers
        except PermissionError:
            pytest.skip("making a device node needs privileges")
    with pytest.raises(UserError) as info:
        copy_code(str(src), str(tmp_path / "run" / "code"))
    assert "special" in info.value.message and "not a regular file" in info.value.message
    assert ".amlignore" in info.value.hint


def test_an_ignored_special_file_is_no_problem(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    os.mkfifo(src / "pipe")
    (src / ".amlignore").write_text("pipe\n")
    assert copy_code(str(src), str(tmp_path / "code")) == 1  # .amlignore itself


def test_the_filesystem_root_is_refused(tmp_path):
    with pytest.raises(UserError) as info:
        check_code_source("/", "job.yml")
    assert "filesystem root" in info.value.message
    check_code_source(str(tmp_path), "job.yml")  # any other folder is fine


def test_the_ignore_file_is_read_with_gits_full_syntax(tmp_path):
    src = tmp_path / "src"
    for rel in ("train.py", "data/a/b/big.bin", "data/keep.bin", "logs/x.txt", "nested/logs/y.txt", "notes.md"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    # ** across folders, a negation, a folder-only pattern that matches at any depth, an anchored file
    (src / ".gitignore").write_text("data/**/*.bin\n!data/keep.bin\nlogs/\n/notes.md\n")
    copy_code(str(src), str(tmp_path / "copy"))
    found = sorted(os.path.relpath(os.path.join(root, f), tmp_path / "copy")
                   for root, _, files in os.walk(tmp_path / "copy") for f in files)
    assert found == [".gitignore", "data/keep.bin", "train.py"]
    # .amlignore wins over .gitignore, as when az ml uploads the folder
    (src / ".amlignore").write_text("*.md\n")
    copy_code(str(src), str(tmp_path / "copy2"))
    assert (tmp_path / "copy2" / "data" / "a" / "b" / "big.bin").exists()
    assert not (tmp_path / "copy2" / "notes.md").exists()


def test_a_run_folder_is_new_one_line_when_it_cannot_be_and_gone_when_filling_fails(tmp_path):
    from amldist.engine.run_folder import new_run_folder

    (tmp_path / "runs").write_text("a file where the run root should be")
    with pytest.raises(UserError, match="is a file, not a folder"):
        new_run_folder(str(tmp_path / "runs" / "a"), "taken", "hint", lambda: None)
    root = tmp_path / "root"
    (root / "b").mkdir(parents=True)
    with pytest.raises(UserError, match="^taken$"):
        new_run_folder(str(root / "b"), "taken", "hint", lambda: None)

    def fill_then_fail():
        (root / "c" / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError):
        new_run_folder(str(root / "c"), "taken", "hint", fill_then_fail)
    assert not (root / "c").exists()
