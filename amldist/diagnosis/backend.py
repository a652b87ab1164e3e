"""``amldist job diagnose`` for any backend, through the contract: the backend hands over the run's logs
(:meth:`amldist.backends.base.Backend.run_logs`: in place, or downloaded into a temporary folder), the
diagnosis reads them. Nothing here knows a backend's files: a new backend is diagnosed as soon as it can
download its logs in Azure ML's layout.
"""

from __future__ import annotations

import os
import tempfile

from amldist.diagnosis import azure, local
from amldist.diagnosis.analysis import Diagnosis, diagnose
from amldist.diagnosis.drill import injected_cause
from amldist.diagnosis.logs import job_context, load_job_file


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
                      backend=found.backend)
    result.step = found.step
    return injected_cause(found, result)
