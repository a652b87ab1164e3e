"""An Azure ML job (an azure-ai-ml ``Job`` entity) as the :class:`~amldist.backends.base.JobRecord`
every backend gives, and its text for ``amldist job show``."""

from __future__ import annotations

from datetime import datetime, timezone

from amldist.backends.base import STATUSES, UNKNOWN, JobRecord, OutputRecord

# The job properties that link the attempts of a retried run (amldist.backends.azureml.retries)
ATTEMPT_OF, ATTEMPT = "amldist.attempt_of", "amldist.attempt"


def _time(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def _parse_time(text) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def record_of(job, *, stream_interrupted: bool = False) -> JobRecord:
    """An azure-ai-ml job as the record every backend gives (``show --format json`` prints ``to_json()``)."""
    properties = dict(getattr(job, "properties", None) or {})
    started = _parse_time(properties.get("StartTimeUtc"))
    ended = _parse_time(properties.get("EndTimeUtc"))
    created = getattr(getattr(job, "creation_context", None), "created_at", None)
    duration = None
    if started is not None:
        duration = round(((ended or datetime.now(timezone.utc)) - started).total_seconds(), 3)
    outputs = tuple(OutputRecord(name, getattr(output, "path", None), getattr(output, "type", None))
                    for name, output in (getattr(job, "outputs", None) or {}).items())
    status = getattr(job.status, "value", job.status)
    details = {"display_name": getattr(job, "display_name", None), "experiment": getattr(job, "experiment_name", None),
               "compute": getattr(job, "compute", None), "created": _time(created),
               "studio_url": getattr(job, "studio_url", None)}
    if stream_interrupted:
        details["stream_interrupted"] = True
    if properties.get(ATTEMPT_OF):  # an attempt of a retried run, as amldist.diagnosis.retry reads them
        number = str(properties.get(ATTEMPT) or "1")
        details["attempt"] = {"number": int(number) if number.isdigit() else 1, "of": str(properties[ATTEMPT_OF])}
    return JobRecord(name=job.name, backend="azureml", kind="pipeline" if getattr(job, "type", None) == "pipeline"
                     else "job", status=status if status in STATUSES else UNKNOWN, start_time=_time(started),
                     end_time=_time(ended), duration_seconds=duration, outputs=outputs,
                     url=getattr(job, "studio_url", None), details=details)


def show_text(job: JobRecord) -> str:
    duration = job.duration_seconds
    lines = [f"name: {job.name}", f"status: {job.status}",
             f"start: {job.start_time or job.details.get('created') or '-'}",
             f"duration: {duration:.1f}s" if isinstance(duration, (int, float)) else "duration: -"]
    lines += [f"step {step.name}: {step.status} (job {step.job})" for step in job.steps]
    if job.details.get("compute"):
        lines.append(f"compute: {job.details['compute']}")
    for output in job.outputs:
        lines.append(f"output {output.name}: {output.path or '(set when the job writes it)'}")
    lines.append(f"studio: {job.url or '-'}")
    lines.append("per-rank exit codes: in the logs ('amldist job logs NAME' or the studio's Outputs + logs)")
    return "\n".join(lines)
