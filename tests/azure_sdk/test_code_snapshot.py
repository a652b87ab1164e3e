"""The code snapshot: the user's files (as azure-ai-ml would upload them) plus amldist/runtime/."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile

import pytest

import amldist.runtime
from amldist.azure_sdk.code_snapshot import build_snapshot, materialized, plan_snapshot

RUNTIME_DIR = os.path.dirname(os.path.abspath(amldist.runtime.__file__))  # the package the shim comes from

RUNTIME_FILES = sorted(
    f"amldist/runtime/{os.path.relpath(os.path.join(root, name), RUNTIME_DIR).replace(os.sep, '/')}"
    for root, dirs, names in os.walk(RUNTIME_DIR) if "__pycache__" not in root
    for name in names if not name.endswith((".pyc", ".pyo"))
)


def tree(folder) -> dict:
    """{relative path: sha256} of every file under folder (links followed)."""
    out = {}
    for root, _, names in os.walk(folder, followlinks=True):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder).replace(os.sep, "/")] = hashlib.sha256(fh.read()).hexdigest()
    return out


def sdk_upload_list(folder) -> set:
    """The files azure-ai-ml itself would upload from ``folder`` (relative paths)."""
    from azure.ai.ml._utils._asset_utils import get_ignore_file, get_upload_files_from_folder

    pairs = get_upload_files_from_folder(folder, ignore_file=get_ignore_file(folder))
    return {remote for _, remote in pairs}


@pytest.fixture
def code(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print('train')\n")
    (src / "pkg" / "model.py").write_text("W = 1\n")
    (src / "big.ckpt").write_bytes(b"\0" * 100)
    (src / "pkg" / "cache.ckpt").write_bytes(b"\1" * 10)
    (src / ".amlignore").write_text("*.ckpt\n")
    return src


def test_snapshot_holds_what_the_sdk_would_upload_plus_the_runtime(tmp_path, code):
    before = tree(code)
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), "python train.py", str(work))
    assert snap.shim_added and snap.warnings == []
    assert os.path.basename(snap.path) == "src"  # the upload keeps the folder's name
    expected = sdk_upload_list(code) | set(RUNTIME_FILES) | {"amldist/__init__.py"}
    assert sdk_upload_list(snap.path) == expected
    assert "big.ckpt" not in tree(snap.path) and "pkg/model.py" in tree(snap.path)
    for name in RUNTIME_FILES:  # byte for byte the installed runtime
        with open(os.path.join(RUNTIME_DIR, name[len("amldist/runtime/"):]), "rb") as fh:
            assert tree(snap.path)[name] == hashlib.sha256(fh.read()).hexdigest()
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in tree(snap.path))
    assert tree(code) == before  # the user's folder is untouched


def test_gitignore_is_used_when_there_is_no_amlignore(tmp_path, code):
    (code / ".amlignore").unlink()
    (code / ".gitignore").write_text("pkg/\n")
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot(str(code), str(tmp_path), None, str(work))
    files = tree(snap.path)
    assert "pkg/model.py" not in files and "big.ckpt" in files and "train.py" in files
    assert sdk_upload_list(snap.path) == sdk_upload_list(code) | set(RUNTIME_FILES) | {"amldist/__init__.py"}


def test_runtime_is_importable_and_runnable_from_the_snapshot(tmp_path, code):
    """In the container the job starts in the snapshot: python -m amldist.runtime must work there."""
    with materialized(plan_snapshot("src", str(tmp_path), None)) as snap:
        env = {"PATH": os.environ.get("PATH", ""), "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "6105"}
        where = subprocess.run(
            [sys.executable, "-c", "import amldist.runtime as r; print(r.__file__)"],
            cwd=snap.path, env=env, capture_output=True, text=True, timeout=60)
        assert where.returncode == 0, where.stderr
        assert where.stdout.strip().startswith(os.path.realpath(snap.path)) or \
            where.stdout.strip().startswith(snap.path)
        printed = subprocess.run([sys.executable, "-m", "amldist.runtime", "--print"],
                                 cwd=snap.path, env=env, capture_output=True, text=True, timeout=60)
        assert printed.returncode == 0, printed.stderr
        detected = json.loads(printed.stdout)
        assert detected["rank"] == 1 and detected["world_size"] == 2
    assert not os.path.exists(snap.path)  # removed when the block ends


def test_snapshot_is_removed_even_when_the_submission_fails(tmp_path, code):
    with pytest.raises(RuntimeError):
        with materialized(plan_snapshot("src", str(tmp_path), None)) as snap:
            assert os.path.isdir(snap.path)
            raise RuntimeError("upload failed")
    assert not os.path.exists(os.path.dirname(snap.path))


def test_an_existing_amldist_folder_is_kept_and_warned_about(tmp_path, code):
    (code / "amldist").mkdir()
    (code / "amldist" / "__init__.py").write_text("MINE = True\n")
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), None, str(work))
    assert not snap.shim_added
    assert (tree(snap.path)["amldist/__init__.py"]
            == hashlib.sha256(b"MINE = True\n").hexdigest())
    assert not any(f.startswith("amldist/runtime/") for f in tree(snap.path))
    assert len(snap.warnings) == 1 and "amldist" in snap.warnings[0]


def test_an_ignore_rule_that_would_drop_the_shim_is_warned_about(tmp_path, code):
    (code / ".amlignore").write_text("amldist\n")
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), None, str(work))
    assert any("!amldist/" in w for w in snap.warnings)


def test_remote_code_is_left_alone(tmp_path):
    for remote in ("azureml:my-code:1", "https://example.invalid/code.zip", "git+https://example.invalid/r.git"):
        snap = build_snapshot(remote, str(tmp_path), "python -m amldist.runtime -- python x.py", str(tmp_path))
        assert snap.path is None and not snap.shim_added
        assert "not a local folder" in snap.warnings[0]


def test_job_without_code(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert build_snapshot(None, str(tmp_path), "echo hello", str(work)).path is None
    snap = build_snapshot(None, str(tmp_path), "python -m amldist.runtime --print", str(work))
    assert snap.shim_added
    assert sorted(tree(snap.path)) == sorted(RUNTIME_FILES + ["amldist/__init__.py"])


def test_code_naming_one_file(tmp_path, code):
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src/train.py", str(tmp_path), None, str(work))
    files = tree(snap.path)
    assert "train.py" in files and "amldist/runtime/__init__.py" in files and "pkg/model.py" not in files


def test_symlinked_files_are_uploaded_as_their_content(tmp_path, code):
    outside = tmp_path / "shared.py"
    outside.write_text("SHARED = 1\n")
    os.symlink(outside, code / "shared.py")
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), None, str(work))
    assert tree(snap.path)["shared.py"] == hashlib.sha256(b"SHARED = 1\n").hexdigest()
    assert not os.path.islink(os.path.join(snap.path, "shared.py"))


def test_snapshots_live_in_the_temporary_folder(tmp_path, code, monkeypatch):
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with materialized(plan_snapshot("src", str(tmp_path), None)) as snap:
        assert snap.path.startswith(str(temp))
    assert os.listdir(temp) == []


def test_bytecode_caches_are_not_shipped(tmp_path, code, monkeypatch):
    import shutil
    from pathlib import Path

    import amldist.runtime

    runtime = tmp_path / "runtime"
    shutil.copytree(RUNTIME_DIR, runtime, ignore=shutil.ignore_patterns("__pycache__"))
    (runtime / "__pycache__").mkdir()
    (runtime / "__pycache__" / "_env.cpython-311.pyc").write_bytes(b"\0")
    (runtime / "stray.pyc").write_bytes(b"\0")
    with open(runtime / "env_reader.py", "a") as fh:
        fh.write("# the copy\n")  # proves the snapshot was filled from this folder
    monkeypatch.setattr(amldist.runtime, "RUNTIME_DIR", Path(runtime))  # what bundle_files() lists from
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), None, str(work))
    shipped = [f for f in tree(snap.path) if f.startswith("amldist/runtime/")]
    assert sorted(shipped) == RUNTIME_FILES
    assert (Path(snap.path) / "amldist" / "runtime" / "env_reader.py").read_text().endswith("# the copy\n")


def test_local_run_folders_are_not_uploaded(tmp_path, code):
    runs = code / ".amldist" / "runs" / "job-1" / "outputs"
    runs.mkdir(parents=True)
    (runs / "model.bin").write_bytes(b"\0" * 10)
    (code / "pkg" / ".amldist").mkdir()  # only the top-level folder is amldist's
    (code / "pkg" / ".amldist" / "keep.txt").write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    snap = build_snapshot("src", str(tmp_path), None, str(work))
    files = tree(snap.path)
    assert not any(f.startswith(".amldist/") for f in files)
    assert "pkg/.amldist/keep.txt" in files
