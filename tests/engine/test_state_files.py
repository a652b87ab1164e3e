"""The engine's reader and writer of run-folder files: bounded, never through a link, regular files only, typed."""

from __future__ import annotations

import os

import pytest

from amldist.engine import state_files
from amldist.engine.state_files import TypedFields


def test_the_reader_refuses_links_fifos_devices_and_large_files_at_once(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/zero", tmp_path / "zero")
    os.symlink(tmp_path / "ok", tmp_path / "link")
    (tmp_path / "ok").write_text('{"a": 1}')
    (tmp_path / "big").write_bytes(b" " * 2000)
    assert state_files.read_json_object(str(tmp_path / "ok")) == {"a": 1}
    assert state_files.read_bounded(str(tmp_path / "missing")) is None
    for name, why in (("fifo", "not a regular file"), ("zero", "a link"), ("link", "a link")):
        with pytest.raises(ValueError, match=why):
            state_files.read_bounded(str(tmp_path / name))
    with pytest.raises(ValueError, match="larger than"):
        state_files.read_bounded(str(tmp_path / "big"), 1000)
    assert state_files.read_small_text(str(tmp_path / "fifo")) is None  # a state file: nothing, never a block


def test_typed_fields_keep_paths_inside_the_run_folder_and_names_plain(tmp_path):
    fields = TypedFields(str(tmp_path), lambda what: ValueError(what))
    assert fields.inside("outputs/m", "p") == str(tmp_path / "outputs" / "m")
    for bad in ("../x", "/etc", str(tmp_path) + "/../y"):
        with pytest.raises(ValueError, match="outside the run folder"):
            fields.inside(bad, "p")
    for bad in ("..", "a/b", "x\n", ""):
        with pytest.raises(ValueError, match="not a plain name"):
            fields.name(bad, "a log")
    with pytest.raises(ValueError, match="expected int"):
        fields.get({"n": True}, "n", (int,), "")


def test_writes_replace_a_planted_link_and_markers_never_write_through_one(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep")
    os.symlink(target, tmp_path / "state.json")
    state_files.write_state(str(tmp_path), {"x": 1}, "state.json")
    assert not os.path.islink(tmp_path / "state.json") and target.read_text() == "keep"
    os.symlink(target, tmp_path / "cancel_requested")
    state_files.create_marker(str(tmp_path), "cancel_requested", "now")
    assert target.read_text() == "keep" and not state_files.marker_present(str(tmp_path), "cancel_requested")
