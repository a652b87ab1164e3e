"""Evidence for ``amldist job diagnose`` from every rank, without the user decorating anything.

``init_distributed()`` calls :func:`arm` before it forms the group. From then on:

- PyTorch's Flight Recorder is on (``TORCH_FR_BUFFER_SIZE``, :data:`FR_ENTRIES` entries unless the job sets
  it; 0 turns it off): a ring buffer in C++ of this rank's last collectives, each with its sequence number,
  operation and sizes. It records gloo's collectives too (checked on torch 2.13 on CPU), so a mismatch or a
  rank that is behind can be told from the dumps of the ranks alone;
- when the rank fails (an exception nobody caught: ``sys.excepthook``; a collective's timeout is one), is
  stopped by the stall watchdog, or exits while its group is still up (it never called ``destroy()``: it
  left while the others may still wait for it; :func:`before_teardown`), it writes, once:

  - ``rank_NN.fr.json``: the Flight Recorder's dump as JSON (``_dump_fr_trace_json``, no stack traces;
    JSON and not torch's pickle, so reading a job's files never runs code), and
  - ``rank_NN.error.json``: why it ended (``reason``: exception, stall, exit), the exception's type
    and message, the innermost frame of the user's code (``file``, ``line``, ``function``), the time and pid.

Where: ``AMLDIST_EVIDENCE_DIR`` (a local run sets it to ``user_logs/amldist/`` of its run folder, next to the
logs); on Azure ML, where it is unset, ``logs/amldist/`` in the working directory, a folder Azure ML uploads
with the job's logs; elsewhere nothing is written. Writing never raises: evidence must not change how a
rank fails. A rank killed by a signal writes nothing: SIGTERM keeps its default action, since a Python
handler runs only when the main thread returns to Python, and a rank blocked in a collective would then
outlive the launcher's SIGTERM until its SIGKILL. The other ranks' dumps still say where they were.

Standard library only at import; torch is imported inside :func:`fr_json` only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

EVIDENCE_VAR = "AMLDIST_EVIDENCE_DIR"
EVIDENCE_FOLDER = "amldist"  # a local run: user_logs/amldist/ of its run folder
FR_VAR = "TORCH_FR_BUFFER_SIZE"
FR_ENTRIES = 2000  # a few hundred bytes each: bounded, and enough to span many steps of a training loop
AZURE_DIR = os.path.join("logs", EVIDENCE_FOLDER)
LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3", "amldist/runtime/", "<frozen ", "<string>")

_state = {"rank": None, "folder": None, "written": False, "previous_hook": None}
_lock = threading.Lock()


def folder_for(environ) -> str | None:
    """Where this rank's evidence goes (see the module docstring), None for nowhere."""
    named = environ.get(EVIDENCE_VAR, "").strip()
    if named:
        return named
    if environ.get("AZUREML_RUN_ID"):
        return os.path.abspath(AZURE_DIR)
    return None


def arm(rank: int, environ=None) -> None:
    """Turn the Flight Recorder on (before the group is formed: torch reads the variable then) and install the
    hooks that write the evidence. Called by init_distributed(); a second call only updates the rank."""
    environ = os.environ if environ is None else environ
    environ.setdefault(FR_VAR, str(FR_ENTRIES))
    first = _state["rank"] is None
    _state["rank"], _state["folder"] = rank, folder_for(environ)
    if not first or _state["folder"] is None:
        return
    _state["previous_hook"] = sys.excepthook
    sys.excepthook = _excepthook


def user_frame(tb) -> dict | None:
    """The innermost frame of the traceback ``tb`` that is the user's code (else the innermost)."""
    frames = traceback.extract_tb(tb) if tb is not None else []
    chosen = next((f for f in reversed(frames) if not any(part in f.filename for part in LIBRARY)), None)
    chosen = chosen or (frames[-1] if frames else None)
    return None if chosen is None else {"file": chosen.filename, "line": chosen.lineno, "function": chosen.name}


def stack_frame(frame) -> dict | None:
    """The innermost frame of a live stack (``frame``, the innermost) that is the user's code."""
    innermost = frame
    while frame is not None and any(part in frame.f_code.co_filename for part in LIBRARY):
        frame = frame.f_back
    frame = frame or innermost
    if frame is None:
        return None
    return {"file": frame.f_code.co_filename, "line": frame.f_lineno, "function": frame.f_code.co_name}


def fr_json() -> str | None:
    """This process's Flight Recorder as JSON, or None (off, no group, a torch without it)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or os.environ.get(FR_VAR, "0").strip() in ("", "0"):
        return None
    try:
        from torch._C._distributed_c10d import _dump_fr_trace_json

        raw = _dump_fr_trace_json(includeCollectives=True, onlyActive=False)
    except Exception:  # an older torch, or a build without it: the error file still says why the rank ended
        return None
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def write(reason: str, *, exc: BaseException | None = None, frame: dict | None = None, detail: str = "") -> None:
    """Write this rank's evidence once (the first reason wins: an exception, then the exit it causes)."""
    folder, rank = _state["folder"], _state["rank"]
    if folder is None or rank is None:
        return
    with _lock:
        if _state["written"]:
            return
        _state["written"] = True
    try:
        os.makedirs(folder, exist_ok=True)
        trace = fr_json()
        if trace is not None:
            _write_file(os.path.join(folder, f"rank_{rank:02d}.fr.json"), trace)
        error = {"rank": rank, "reason": reason, "time": round(time.time(), 3), "pid": os.getpid(),
                 "exception": type(exc).__name__ if exc is not None else None,
                 "message": str(exc)[:2000] if exc is not None else detail[:2000], "frame": frame}
        _write_file(os.path.join(folder, f"rank_{rank:02d}.error.json"), json.dumps(error))
    except Exception:  # never let evidence change how the rank fails
        pass


def _write_file(path: str, text: str) -> None:
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(partial, path)  # a reader never sees half a file


def _excepthook(kind, value, tb) -> None:
    if not issubclass(kind, KeyboardInterrupt):
        write("exception", exc=value, frame=user_frame(tb))
    previous = _state["previous_hook"] or sys.__excepthook__
    previous(kind, value, tb)


def before_teardown() -> None:
    """At exit, before the group is torn down (process_group's exit hook calls it first): a rank leaving while
    its group is still up (it never called destroy()) may leave the others waiting, so it writes its evidence."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_initialized():
        write("exit", detail="the process exited while its process group was still up (no destroy())",
              frame=None)

