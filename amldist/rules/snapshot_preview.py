"""What a job's code snapshot will weigh, before anything is copied or uploaded: ``--dry-run``'s preview.

Slow or huge snapshots are a recurring Azure ML complaint: a virtual environment, ``node_modules``, a
checkpoint or a data file inside ``code:`` is uploaded with every job. Both backends' dry runs show, from
the files they would copy or upload (the same ignore rules as the real thing):

- the total size and file count, the largest files and the largest top-level folders;
- a warning for each virtual environment (a folder holding ``pyvenv.cfg``, or ``conda-meta/``; ``.venv``
  and ``venv`` by name), each ``node_modules`` folder, each checkpoint (``*.pt``, ``*.pth``, ``*.ckpt``,
  ``*.safetensors``, ``*.bin``, ``*.h5`` of :data:`CHECKPOINT_BYTES` or more) and each large data file
  (:data:`DATA_EXTENSIONS` of :data:`DATA_BYTES` or more, any other file of :data:`LARGE_BYTES` or more),
  each with the ``.amlignore`` line that would leave it out (gitignore syntax, anchored at the code folder).

Pure: it reads sizes (``lstat``; a link is copied as a link locally, so it weighs nothing there) and
writes nothing. :func:`folder_entries` walks a folder with an ``ignored(relpath, is_dir)`` rule and the
names always skipped (the local backend's); :func:`mapping_entries` reads the Azure snapshot plan's files.
:func:`of_folder` and :func:`of_mapping` are what the two dry runs call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

CHECKPOINT_EXTENSIONS = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".h5")
DATA_EXTENSIONS = (".csv", ".tsv", ".parquet", ".arrow", ".feather", ".npy", ".npz", ".jsonl", ".pkl", ".pickle",
                   ".tfrecord", ".hdf5", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".db", ".sqlite")
CHECKPOINT_BYTES = 10 * 2**20  # a model of a few KB (a sample's output) is not worth a warning
DATA_BYTES = 10 * 2**20
LARGE_BYTES = 100 * 2**20  # any file this large, whatever its kind
VENV_NAMES = (".venv", "venv")
SHOWN = 5  # largest files and folders listed
MAX_WARNINGS = 10  # then one line counts the rest
IN_EVERY_JOB = "it goes into every job's snapshot (uploaded to Azure ML each time)"


@dataclass
class Preview:
    total_bytes: int = 0
    files: int = 0
    largest_files: list[tuple[str, int]] = field(default_factory=list)
    largest_folders: list[tuple[str, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """For the Azure dry run's JSON."""
        return {"total_bytes": self.total_bytes, "size": human(self.total_bytes), "file_count": self.files,
                "largest_files": [{"path": p, "size": human(s)} for p, s in self.largest_files],
                "largest_folders": [{"path": p + "/", "size": human(s)} for p, s in self.largest_folders]}

    def upload_line(self, name: str) -> str:
        """What the Azure backend says before azure-ai-ml uploads the snapshot (it draws its own progress bar)."""
        return f"uploading the code snapshot {name}/: {human(self.total_bytes)} in {self.files} file(s)"

    def lines(self) -> list[str]:
        """For the local dry run's text: the size line, the largest entries, then ``warning:`` lines."""
        out = [f"code snapshot: {human(self.total_bytes)} in {self.files} file(s)"]
        if self.largest_folders:
            out.append("  largest folders: " + ", ".join(f"{p}/ {human(s)}" for p, s in self.largest_folders))
        if self.largest_files:
            out.append("  largest files: " + ", ".join(f"{p} {human(s)}" for p, s in self.largest_files))
        return out + [f"warning: {w}" for w in self.warnings]


def human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover


def folder_entries(source: str, ignored: Callable[[str, bool], bool], skip_names: Iterable[str] = ()
                   ) -> tuple[list[tuple[str, int]], list[str]]:
    """(relative "/" path, size) of every file a copy of ``source`` holds, and the environment folders
    among them (virtual environments, ``node_modules``; the outermost only)."""
    skip, files, environments = set(skip_names), [], []
    for root, dirs, names in os.walk(source):
        rel_root = os.path.relpath(root, source).replace(os.sep, "/")
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [d for d in sorted(dirs) if d not in skip and not ignored(rel_root + d, True)]
        for d in dirs:
            if not _inside(rel_root + d, environments) and _is_environment(os.path.join(root, d), d):
                environments.append(rel_root + d)
        for name in sorted(names):
            if not ignored(rel_root + name, False):
                files.append((rel_root + name, _size(os.path.join(root, name), follow=False)))
    return files, environments


def mapping_entries(files: Mapping[str, str | bytes]) -> tuple[list[tuple[str, int]], list[str]]:
    """The same from a snapshot plan's ``{relative path: source file or bytes}`` (links already followed)."""
    entries = [(rel, len(src) if isinstance(src, bytes) else _size(src, follow=True)) for rel, src in files.items()]
    folders = {rel.rsplit("/", depth)[0] for rel in files for depth in range(1, rel.count("/") + 1)}
    environments = sorted(f for f in folders if f.rsplit("/", 1)[-1] == "node_modules"
                          or f.rsplit("/", 1)[-1] in VENV_NAMES or f + "/pyvenv.cfg" in files
                          or any(r.startswith(f + "/conda-meta/") for r in files))
    environments = [e for e in environments if not any(e.startswith(o + "/") for o in environments)]
    return entries, environments


def preview(entries: list[tuple[str, int]], environments: list[str]) -> Preview:
    """Totals, largest entries and warnings (see the module docstring)."""
    result = Preview(total_bytes=sum(size for _, size in entries), files=len(entries))
    plain = [(p, s) for p, s in entries if not _inside(p, environments)]
    result.largest_files = sorted(plain, key=lambda e: (-e[1], e[0]))[:SHOWN]
    tops: dict[str, int] = {}
    for path, size in entries:
        if "/" in path:
            tops[path.split("/", 1)[0]] = tops.get(path.split("/", 1)[0], 0) + size
    result.largest_folders = sorted(tops.items(), key=lambda e: (-e[1], e[0]))[:SHOWN]
    found = [_environment_warning(e, _sum_under(entries, e)) for e in environments]
    found += [w for w in (_file_warning(p, s) for p, s in plain) if w]
    result.warnings = found[:MAX_WARNINGS] + (
        [f"{len(found) - MAX_WARNINGS} more entries like these in the snapshot"] if len(found) > MAX_WARNINGS else [])
    return result


def _environment_warning(folder: str, size: int) -> str:
    name = folder.rsplit("/", 1)[-1]
    what = "node_modules (JavaScript packages)" if name == "node_modules" else "a virtual environment"
    line = "node_modules/" if name == "node_modules" else f"/{folder}/"
    return f"{folder}/ is {what}, {human(size)}: {IN_EVERY_JOB}; add '{line}' to the code folder's .amlignore"


def _file_warning(path: str, size: int) -> str | None:
    ext = os.path.splitext(path)[1].lower()
    if ext in CHECKPOINT_EXTENSIONS and size >= CHECKPOINT_BYTES:
        what = "a checkpoint"
    elif (ext in DATA_EXTENSIONS and size >= DATA_BYTES) or size >= LARGE_BYTES:
        what = "a large data file"
    else:
        return None
    return (f"{path} is {what}, {human(size)}: {IN_EVERY_JOB}; add '/{path}' to the code folder's .amlignore "
            "(and pass it as an input instead)")


def _is_environment(path: str, name: str) -> bool:
    return (name == "node_modules" or name in VENV_NAMES or os.path.isfile(os.path.join(path, "pyvenv.cfg"))
            or os.path.isdir(os.path.join(path, "conda-meta")))


def _inside(path: str, folders: list[str]) -> bool:
    return any(path.startswith(f + "/") for f in folders)


def _sum_under(entries, folder: str) -> int:
    return sum(size for path, size in entries if path.startswith(folder + "/"))


def _size(path: str, *, follow: bool) -> int:
    try:
        return (os.stat if follow else os.lstat)(path).st_size
    except OSError:
        return 0


def of_folder(source: str, skip_names: Iterable[str] = ()) -> Preview:
    """The preview of a copy of ``source`` made with the code folder's ignore file (``.amlignore``, else
    ``.gitignore``: :mod:`amldist.rules.ignore_files`), as the local backend copies it."""
    from amldist.rules.ignore_files import code_ignore, is_ignored

    if os.path.isfile(source):  # code: naming one file: the snapshot holds it alone
        return of_mapping({os.path.basename(source): source})
    rules = code_ignore(source)
    return preview(*folder_entries(source, lambda rel, is_dir: is_ignored(rules, rel, is_dir), skip_names))


def of_mapping(files: Mapping[str, str | bytes]) -> Preview:
    """The preview of a snapshot plan's files (the Azure backend's, its ignore rules already applied)."""
    return preview(*mapping_entries(files))
