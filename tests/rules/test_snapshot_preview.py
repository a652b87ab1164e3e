"""The snapshot preview of --dry-run: sizes, largest entries, and a warning with a working .amlignore line for
each virtual environment, node_modules, checkpoint and large data file (sizes from sparse files: no disk used)."""

from __future__ import annotations

import os

from amldist.rules import snapshot_preview
from amldist.rules.snapshot_preview import of_folder, of_mapping


def sparse(path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def project(tmp_path):
    code = tmp_path / "src"
    (code / ".venv" / "lib").mkdir(parents=True)
    (code / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    sparse(code / ".venv" / "lib" / "big.so", 30 * 2**20)
    (code / "env2").mkdir()  # a venv by its pyvenv.cfg, whatever its name
    (code / "env2" / "pyvenv.cfg").write_text("")
    (code / "web" / "node_modules" / "pkg").mkdir(parents=True)
    sparse(code / "web" / "node_modules" / "pkg" / "index.js", 2 * 2**20)
    (code / "ckpt").mkdir()
    sparse(code / "ckpt" / "epoch3.ckpt", 20 * 2**20)
    sparse(code / "ckpt" / "tiny.pt", 4096)  # a sample's model: no warning
    sparse(code / "train.csv", 12 * 2**20)
    (code / "train.py").write_text("print('hi')\n")
    return code


def test_sizes_largest_entries_and_one_warning_per_heavy_entry(tmp_path):
    preview = of_folder(str(project(tmp_path)))
    assert preview.total_bytes == 64 * 2**20 + 4096 + len("print('hi')\n") + len("home = /usr/bin\n")
    assert preview.files == 8
    assert preview.largest_folders[0] == (".venv", 30 * 2**20 + len("home = /usr/bin\n"))
    assert [p for p, _ in preview.largest_files][:2] == ["ckpt/epoch3.ckpt", "train.csv"]  # none inside .venv
    text = "\n".join(preview.lines())
    assert text.startswith("code snapshot: 64.0 MB in 8 file(s)")
    for line in ("'/.venv/'", "'/env2/'", "'node_modules/'", "'/ckpt/epoch3.ckpt'", "'/train.csv'"):
        assert sum(line in w for w in preview.warnings) == 1, (line, preview.warnings)
    assert len(preview.warnings) == 5 and not any("tiny.pt" in w for w in preview.warnings)


def test_each_suggested_line_leaves_its_entry_out(tmp_path):
    code = project(tmp_path)
    lines = [w.split(" add '", 1)[1].split("'", 1)[0] for w in of_folder(str(code)).warnings]
    (code / ".amlignore").write_text("\n".join(lines) + "\n")
    after = of_folder(str(code))
    assert after.warnings == []
    assert after.total_bytes < 2**20  # what is left: the script, the tiny model, the ignore file


def test_names_always_skipped_and_the_azure_plans_mapping_agree(tmp_path):
    code = project(tmp_path)
    (code / "__pycache__").mkdir()
    sparse(code / "__pycache__" / "x.pyc", 50 * 2**20)
    local = of_folder(str(code), skip_names=("__pycache__",))
    files = {os.path.relpath(os.path.join(root, n), code).replace(os.sep, "/"): os.path.join(root, n)
             for root, dirs, names in os.walk(code) if "__pycache__" not in root for n in names}
    azure = of_mapping(files)
    assert (azure.total_bytes, azure.files, azure.warnings) == (local.total_bytes, local.files, local.warnings)
    assert azure.as_dict()["largest_folders"][0] == {"path": ".venv/", "size": "30.0 MB"}


def test_many_findings_end_in_one_counting_line(tmp_path):
    entries = [(f"data/part{i}.parquet", 11 * 2**20) for i in range(snapshot_preview.MAX_WARNINGS + 3)]
    warnings = snapshot_preview.preview(entries, []).warnings
    assert len(warnings) == snapshot_preview.MAX_WARNINGS + 1 and warnings[-1].startswith("3 more")
