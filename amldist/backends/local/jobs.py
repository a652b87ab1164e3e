"""``amldist job list/show/logs/cancel/download`` for local runs (``.amldist/runs/<name>/``).

What each verb reads is the run's ``status.json`` (:mod:`amldist.backends.local.run_state`),
written by the run's supervisor as it goes, so every verb works while the run runs, from any
terminal. The verbs mirror ``az ml job``:

- ``list``: every run under the run root, newest first;
- ``show``: status, start, duration, per-node and per-rank exit codes, outputs with their paths;
- ``logs``: one rank's log (``--rank``) or all of them, each line prefixed by its rank;
  ``--follow`` keeps reading until the run ends;
- ``cancel``: SIGTERM to the run's supervisor (checked by pid *and* start time), which stops
  every process the way Ctrl-C does and records ``Canceled``;
- ``download``: as ``az ml job download``: the logs to ``DIR/artifacts/user_logs/``, with
  ``--all`` (or ``--output-name``) the outputs to ``DIR/named-outputs/<name>/``; refused while
  the run runs, as Azure refuses it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from datetime import datetime, timezone

from amldist.backends.local import run_state
from amldist.backends.local.run_state import RUNNING, TERMINAL, effective, exit_code_text, read_state
from amldist.errors import UserError

FOLLOW_POLL_SECONDS = 0.2


def run_names(run_root: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(run_root) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def list_runs(run_root: str) -> list[dict]:
    """Every run's state as :func:`show` gives it, newest first; a folder without status.json (a run
    being created, or one from an older amldist) is listed with status ``Unknown``."""
    runs = []
    for name in run_names(run_root):
        state = read_state(os.path.join(run_root, name))
        runs.append(describe(state) if state else {"name": name, "status": "Unknown", "start_time": None,
                                                   "duration_seconds": None, "backend": "local",
                                                   "run_dir": os.path.join(run_root, name)})
    return sorted(runs, key=lambda r: r.get("start_time") or "", reverse=True)


def get_run(run_root: str, name: str) -> dict:
    """The run called ``name`` as :func:`describe` gives it; UserError (exit 2) when there is none."""
    run_dir = os.path.join(run_root, name)
    state = read_state(run_dir) if os.path.basename(name) == name and name not in ("", ".", "..") else None
    if state is None:
        where = os.path.relpath(run_root)
        if os.path.isdir(run_dir):
            raise UserError(f"local run {name!r} in {where} has no status.json (it is being created, or was "
                            "made by an older amldist)", hint=f"its files are in {os.path.relpath(run_dir)}")
        raise UserError(f"no local run named {name!r} in {where}",
                        hint="'amldist job list --local' shows the runs; --run-root DIR looks elsewhere")
    return describe(state)


def has_run(run_root: str, name: str) -> bool:
    return os.path.basename(name) == name and os.path.isfile(os.path.join(run_root, name, run_state.STATUS_FILE))


def describe(state: dict) -> dict:
    """The JSON ``show --format json`` prints: status.json as a reader should see it, plus per-node
    exit codes and a duration while the run still runs."""
    data = effective(state)
    ranks = data.get("ranks", [])
    nodes: dict[int, list] = {}
    for entry in ranks:
        nodes.setdefault(entry.get("node", 0), []).append(entry.get("exit_code"))
    duration = data.get("duration_seconds")
    if duration is None and data.get("start_time"):
        started = datetime.fromisoformat(data["start_time"])
        duration = round((datetime.now(timezone.utc) - started).total_seconds(), 3)
    return {
        "name": data.get("name"), "backend": "local", "status": data.get("status"),
        "start_time": data.get("start_time"), "end_time": data.get("end_time"), "duration_seconds": duration,
        "nodes": [{"node": node, "exit_code": node_exit_code(codes)} for node, codes in sorted(nodes.items())],
        "ranks": ranks, "launcher": data.get("launcher"), "outputs": data.get("outputs") or {},
        "logs": data.get("logs"), "run_dir": data.get("run_dir"), "pid": data.get("pid"),
        "stopped_by": data.get("stopped_by"), "error": data.get("error"),
    }


def node_exit_code(codes: list) -> int | None:
    """A node's exit code: its first failing process's (one that exited by itself before one
    amldist stopped with a signal), 0 when all exited 0, None while one still runs."""
    failing = sorted((c for c in codes if c not in (None, 0)), key=lambda c: c < 0)
    if failing:
        return failing[0]
    return 0 if codes and all(c == 0 for c in codes) else None


def show_text(run: dict) -> str:
    rel = os.path.relpath
    duration = run.get("duration_seconds")
    lines = [f"name: {run['name']}", f"status: {run['status']}"
             + (f" (stopped by {run['stopped_by']})" if run.get("stopped_by") else ""),
             f"start: {run.get('start_time') or '-'}",
             f"duration: {duration:.1f}s" if isinstance(duration, (int, float)) else "duration: -"]
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    for node in run.get("nodes", []):
        lines.append(f"node {node['node']}: exit {exit_code_text(node['exit_code'])}")
    for entry in run.get("ranks", []):
        lines.append(f"  {entry['label']}: exit {exit_code_text(entry['exit_code'])}, log {rel(entry['log'])}")
    if run.get("launcher"):
        entry = run["launcher"]
        lines.append(f"  {entry['label']}: exit {exit_code_text(entry['exit_code'])}, log {rel(entry['log'])}")
    for name, output in run.get("outputs", {}).items():
        lines.append(f"output {name}: {rel(output['path'])}")
    if run.get("run_dir"):
        lines.append(f"run folder: {rel(run['run_dir'])}")
    return "\n".join(lines)


# --- logs ------------------------------------------------------------------------------------
def pick_logs(run: dict, rank: int | None) -> list[tuple[str, str]]:
    """(label, path) of the logs to print: one rank's, or every rank's."""
    ranks = run.get("ranks", [])
    if rank is None:
        return [(e["label"], e["log"]) for e in ranks]
    for entry in ranks:
        if entry.get("rank") == rank:
            return [(entry["label"], entry["log"])]
    if 0 <= rank < len(ranks):  # tensorflow's workers and parameter servers have no RANK: their order
        return [(ranks[rank]["label"], ranks[rank]["log"])]
    raise UserError(f"job {run['name']} has no rank {rank}", hint=f"its ranks are 0 to {len(ranks) - 1}")


def logs(run_root: str, name: str, *, rank: int | None = None, follow: bool = False, out=None) -> int:
    """Print the logs; with several, each line starts with ``[rank N]`` (as ``--stream`` prints them).
    ``follow`` keeps printing new lines until the run ends."""
    out = out or sys.stdout
    run = get_run(run_root, name)
    chosen = pick_logs(run, rank)
    prefix = len(chosen) > 1
    offsets = {path: 0 for _, path in chosen}
    while True:
        ended = describe(read_state(run["run_dir"]) or {}).get("status") != RUNNING if follow else True
        for label, path in chosen:
            offsets[path] = _copy_new(path, offsets[path], f"[{label}] " if prefix else "", out,
                                      whole=ended)
        if ended:
            return 0
        time.sleep(FOLLOW_POLL_SECONDS)


def _copy_new(path: str, offset: int, prefix: str, out, *, whole: bool) -> int:
    """Write the lines of ``path`` after ``offset`` (complete lines only unless ``whole``)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return offset
    if not whole:
        data = data[: data.rfind(b"\n") + 1]
    if data:
        text = data.decode("utf-8", "replace")
        out.write("".join(prefix + line + "\n" for line in text.splitlines()) if prefix else text)
        out.flush()
    return offset + len(data)


# --- cancel ----------------------------------------------------------------------------------
def cancel(run_root: str, name: str, *, wait: bool = True, timeout: float = 60.0, err=None) -> dict:
    """Stop a running run from any terminal: mark the request, then SIGTERM its supervisor, which
    stops every process (the grace, then SIGKILL) and records ``Canceled``. Returns the run as
    :func:`describe` gives it afterwards (still ``Running`` with ``wait=False``)."""
    err = err or sys.stderr
    run = get_run(run_root, name)
    if run["status"] != RUNNING:
        print(f"job {name} is already {run['status']}; nothing to cancel", file=err)
        return run
    state = read_state(run["run_dir"]) or {}
    if not run_state.supervisor_alive(state):  # it died between the two reads
        return get_run(run_root, name)
    with open(os.path.join(run["run_dir"], run_state.CANCEL_FILE), "w", encoding="utf-8") as fh:
        fh.write(f"{run_state.now_iso()} pid {os.getpid()}\n")
    try:
        os.kill(state["pid"], signal.SIGTERM)
    except ProcessLookupError:
        return get_run(run_root, name)
    except PermissionError:
        raise UserError(f"job {name} runs as another user (pid {state['pid']}); amldist cannot stop it",
                        exit_code=1) from None
    if not wait:
        return run
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = get_run(run_root, name)
        if run["status"] in TERMINAL:
            return run
        time.sleep(0.05)
    raise UserError(f"job {name} was sent SIGTERM but has not ended after {timeout:.0f}s",
                    hint=f"'amldist job show {name}' tells when it has", exit_code=1)


# --- download --------------------------------------------------------------------------------
def download(run_root: str, name: str, destination: str, *, output_name: str | None = None,
             all_outputs: bool = False) -> list[str]:
    """Copy what ``az ml job download`` would: the logs to ``artifacts/user_logs/``, and the named
    outputs (``all_outputs``, or the one ``output_name``) to ``named-outputs/<name>/``. Returns the
    paths written."""
    run = get_run(run_root, name)
    if run["status"] not in TERMINAL:
        raise UserError(f"job {name} is {run['status']}; download is allowed once it has ended "
                        f"({', '.join(TERMINAL)})", hint=f"'amldist job logs {name} --follow' waits for the end",
                        exit_code=1)
    outputs = run.get("outputs", {})
    if output_name is not None and output_name not in outputs:
        raise UserError(f"job {name} has no output {output_name!r}",
                        hint=f"its outputs: {', '.join(outputs) or 'none'}")
    written = []
    if output_name is None:
        target = os.path.join(destination, "artifacts", "user_logs")
        shutil.copytree(run["logs"], target, dirs_exist_ok=True)
        written.append(target)
    for out_name, output in outputs.items():
        if not (all_outputs or out_name == output_name) or not os.path.exists(output["path"]):
            continue
        target = os.path.join(destination, "named-outputs", out_name)
        if os.path.isdir(output["path"]):
            shutil.copytree(output["path"], target, dirs_exist_ok=True)
        else:
            os.makedirs(target, exist_ok=True)
            shutil.copy2(output["path"], target)
        written.append(target)
    return written
