"""``amldist job diagnose`` for any backend, through the contract: the backend hands over the run's logs
(:meth:`amldist.backends.base.Backend.run_logs`: in place, or downloaded into a temporary folder), the
diagnosis reads them. Nothing here knows a backend's files: a new backend is diagnosed as soon as it can
download its logs in Azure ML's layout.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile

from amldist.diagnosis import azure, collectives, local
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.drill import injected_cause, platform_cause
from amldist.diagnosis.logs import job_context, load_job_file
from amldist.diagnosis.local import frame_place, users_path
from amldist.diagnosis.service import service_cause


def diagnose_job(backend, name: str, *, vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of ``backend``'s job ``name`` (a pipeline: its failed step that started first)."""
    with tempfile.TemporaryDirectory(prefix="amldist-diagnose-") as folder:
        return diagnose_logs(backend.run_logs(name, folder), vm_size=vm_size)


def diagnose_logs(found, *, vm_size: str | None = None) -> Diagnosis:
    """The diagnosis of the logs a backend handed over (a :class:`~amldist.backends.base.RunLogs`)."""
    if not found.ranks and found.folder is None:  # a pipeline none of whose steps failed
        return Diagnosis(found.name, found.status, found.backend)
    job = dict(found.spec) if found.spec is not None else load_job_file(found.spec_file or "")
    if found.folder is not None:
        per_node = ((job.get("distribution") or {}).get("process_count_per_instance")
                    if isinstance(job.get("distribution"), dict) else None)
        logs = azure.collect(found.folder, per_node if isinstance(per_node, int) else None)
        recorded = {r.rank: r for r in found.ranks if r.rank is not None}
        for log in logs:
            log.log = os.path.relpath(log.log, found.folder)  # the path inside the job's artifacts
            entry = recorded.get(log.rank)
            if entry is not None and log.exit_code is None:
                log.exit_code = entry.exit_code
            if entry is not None and log.node is None:
                log.node = entry.node
    else:
        logs = local.rank_logs(found)
    result = diagnose(logs, job_context(job, len(logs), vm_size), job=found.name, status=found.status,
                      backend=found.backend, evidence=evidence_of(found))
    result.step = found.step
    if result.finding is not None and found.code_copy:  # the user's own file, not the run folder's copy
        copy, source = found.code_copy, found.code_source
        result.finding = dataclasses.replace(result.finding, line=users_path(result.finding.line, copy, source),
                                             frame=users_path(result.finding.frame, copy, source))
    return injected_cause(found, platform_cause(found, service_cause(found, result)))


def evidence_of(found):
    """The ranks' Flight Recorder dumps and error files: where the backend says, else found in a download."""
    if found.evidence_dir:
        return collectives.read_folder(found.evidence_dir)
    folder = collectives.find_folder(found.folder) if found.folder is not None else None
    return collectives.read_folder(folder) if folder else None


def explain_failure(run_dir: str) -> tuple[str, str] | None:
    """(rank label, "signature: line") for a failed local job's culprit, as its ``error:`` line and status.json
    say it (``amldist submit --local`` passes this to the local backend); None when the diagnosis names none."""
    from amldist.backends import get_backend

    result = diagnose_job(get_backend("local", run_root=os.path.dirname(run_dir)), os.path.basename(run_dir))
    if result.rank is None or result.finding is None:
        return None
    where = frame_place(result.finding.frame)
    line = re.sub(r"^amldist\.runtime: stall: |; every rank writes its Python stack.*$", "", result.finding.line)
    return result.rank.label, f"{result.finding.signature}: {line[:300]}" + (
        f" (at {where})" if where and where not in line else "")
