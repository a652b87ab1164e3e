"""``amldist submit JOB --retry N`` on Azure ML: each attempt a job of its own, sharing one checkpoint folder.

The retry loop is the one every backend shares (:func:`amldist.diagnosis.retry.submit_with_retries`); what is
Azure ML's is here:

- **the checkpoint folder**: every attempt gets one more output, ``amldist_checkpoints`` (``uri_folder``,
  ``rw_mount``), at one fixed datastore path named after the first attempt,
  ``azureml://datastores/workspaceblobstore/paths/amldist/checkpoints/<first attempt>/`` (the workspace's
  default blob datastore, which every workspace has under that name), so attempt 2 mounts what attempt 1
  wrote. ``AMLDIST_CHECKPOINT_DIR`` (what :mod:`amldist.runtime.checkpoint` reads) is set by the command
  itself, ``export AMLDIST_CHECKPOINT_DIR=${{outputs.amldist_checkpoints}}; <command>``, because Azure ML
  substitutes ``${{outputs.x}}`` in a job's ``command`` only, never in its ``environment_variables``
  (microsoft/physical-ai-toolchain#855: the variable arrived as the literal text). A job whose own
  ``environment_variables`` set ``AMLDIST_CHECKPOINT_DIR`` keeps its value, as a local run does;
- **the link between attempts**: the job's properties ``amldist.attempt_of`` (the first attempt's name) and
  ``amldist.attempt`` (1, 2, ...). Properties, not tags: they cannot be edited after the job is created, and
  the service filters a job list by them (``jobs.list(properties="amldist.attempt_of=NAME")``), so ``job
  show`` finds the attempts in one request, not by reading the whole workspace;
- **the wait**: :func:`watch` asks ``MLClient.jobs.get`` every ``interval`` seconds until the job has ended;
  Ctrl-C there cancels the attempt (``jobs.begin_cancel``) and ends the retries.

Only a command job is retried: a pipeline's or a sweep's own steps are the service's to schedule, and
``--inject`` (the drill) acts on processes amldist starts, which an Azure ML job's are not.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time

from amldist.backends.azureml.jobs import call, cancel
from amldist.backends.azureml.records import ATTEMPT, ATTEMPT_OF, record_of
from amldist.backends.base import CANCEL_REQUESTED, CANCELED, JobRecord
from amldist.errors import UserError

OUTPUT = "amldist_checkpoints"
CHECKPOINT_VARIABLE = "AMLDIST_CHECKPOINT_DIR"  # amldist.runtime.checkpoint.ENV_DIR (the runtime stands alone)
POLL_SECONDS = 15.0  # between two jobs.get while an attempt runs: a job's state changes in minutes, not seconds
UNREACHABLE_POLLS = 40  # polls in a row that cannot reach Azure (10 minutes at 15 s) before the watch gives up


def checkpoint_path(first: str) -> str:
    """The datastore folder every attempt of the run whose first attempt is ``first`` mounts."""
    return f"azureml://datastores/workspaceblobstore/paths/amldist/checkpoints/{first}/"


def retrying(options) -> bool:
    """Whether ``options`` are those of an attempt of a retried run (``--retry``: the loop sets these)."""
    return bool(getattr(options, "checkpoints", False) or getattr(options, "checkpoint_dir", None))


def refuse(options, source: str, what: str | None = None) -> None:
    """One line for what Azure ML does not do: ``--inject`` at all, ``--retry`` for ``what`` (a pipeline...)."""
    if getattr(options, "inject", ()):
        raise UserError(f"{source}: --inject rehearses a failure on processes amldist starts (--local, --slurm); "
                        "an Azure ML job's processes run on the service's nodes", hint="rehearse the failure with "
                        "--local first; --retry N works on Azure ML")
    if what is not None and retrying(options):
        raise UserError(f"{source}: --retry resubmits a command job on Azure ML, and this is {what}",
                        hint="submit without --retry, or retry each command job on its own")


def as_attempt(job, options, source: str):
    """A copy of ``job`` (named already) as an attempt of a retried run: the checkpoint output at the shared
    path, the command that points AMLDIST_CHECKPOINT_DIR at it, and the properties that link the attempts."""
    job = copy.deepcopy(job)
    first = getattr(options, "attempt_of", None) or job.name
    outputs = dict(job.outputs or {})
    if OUTPUT in outputs:
        raise UserError(f"{source}: outputs.{OUTPUT} is the output --retry adds for the shared checkpoints",
                        hint="give that output another name")
    outputs[OUTPUT] = {"type": "uri_folder", "mode": "rw_mount",
                       "path": getattr(options, "checkpoint_dir", None) or checkpoint_path(first)}
    job.outputs = outputs
    if CHECKPOINT_VARIABLE not in (job.environment_variables or {}):  # the job's own value wins
        job.command = f"export {CHECKPOINT_VARIABLE}=${{{{outputs.{OUTPUT}}}}}; {job.command}"
    job.properties = {**(job.properties or {}), ATTEMPT_OF: first, ATTEMPT: str(getattr(options, "attempt", 1))}
    return job


def checkpoint_dir(record: JobRecord) -> str | None:
    """The shared checkpoint folder of ``record``'s run (its output's datastore path); None without one."""
    output = record.output(OUTPUT)
    return output.path if output is not None and output.path else None


def watch(client, workspace, name: str, *, interval: float = POLL_SECONDS, sleep=time.sleep, err=None) -> JobRecord:
    """Job ``name``'s record once it has ended, asking ``jobs.get`` every ``interval`` seconds (a line on stderr
    each time its status changes). Ctrl-C cancels the job and returns it Canceled, stopped by SIGINT; when the
    job had ended by itself meanwhile, the KeyboardInterrupt goes on (the retries end either way)."""
    err = err or sys.stderr
    said, missed = None, 0
    try:
        while True:
            record = poll(client, workspace, name)
            missed = 0 if record is not None else missed + 1
            if missed >= UNREACHABLE_POLLS:
                raise UserError(f"Azure could not be reached for {missed} polls in a row while watching job {name}; "
                                "it runs on, and no further attempt will be made", exit_code=1,
                                hint=f"'amldist job show {name}' says where it stands")
            if record is not None and record.status != said:
                print(f"job {name}: {record.status}", file=err)
                said = record.status
            if record is not None and record.ended:
                return record
            sleep(interval)
    except KeyboardInterrupt:
        print(f"interrupted: cancelling job {name}; no further attempt is made", file=err)
        record = cancel(client, workspace, name, wait=True)
        if record.status not in (CANCEL_REQUESTED, CANCELED):  # it had ended by itself: still no further attempt
            raise
        return dataclasses.replace(record, status=CANCELED, stopped_by="SIGINT")


def poll(client, workspace, name: str) -> JobRecord | None:
    """Job ``name``'s record now; None when Azure could not be reached this time (after azure-core's own
    retries: a laptop's network gone for a while must not end a watch of a week-long run). Any other failure
    is :func:`~amldist.backends.azureml.jobs.call`'s one line."""
    from azure.core.exceptions import ServiceRequestError, ServiceResponseError

    def get():
        try:
            return client.jobs.get(name)
        except (ServiceRequestError, ServiceResponseError):
            return None

    entity = call(get, workspace, name=name)
    return None if entity is None else record_of(entity)
