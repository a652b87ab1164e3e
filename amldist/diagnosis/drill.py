"""A run the fault drill struck (``amldist submit --inject``, :mod:`amldist.rules.faults`) failed because of the
fault, never because of the script: the first fault that fired is the cause, on the first process it struck.
A run the platform itself ended (``RunLogs.ended_by``: Slurm's PREEMPTED or NODE_FAIL) failed because of that,
unless the drill struck first."""

from __future__ import annotations

from amldist.diagnosis.analysis import Diagnosis
from amldist.diagnosis.signatures import Finding

INJECTED_HINTS = {  # what the drill rehearsed, and what a real run should do about it
    "preempt": "a drill: the node was preempted (SIGTERM, then SIGKILL after the grace period); save checkpoints "
               "(amldist.runtime.checkpoint) and resubmit with --retry N to resume",
    "kill": "a drill: a process was killed from outside (SIGKILL), as a failed node would; --retry N resubmits",
    "hang": "a drill: a rank was frozen (SIGSTOP); set limits.timeout so a hang ends, and --retry-on hang",
    "slow": "a drill: a rank was slowed; the others waited for it in every collective",
}


def injected_cause(found, result: Diagnosis) -> Diagnosis:
    """``result`` with the drill's first fired fault as its cause when ``found`` (a RunLogs) recorded one."""
    fired = [f for f in getattr(found, "faults", ()) or () if f.get("fired_at") is not None and f.get("processes")]
    if not fired or found.status != "Failed":
        return result
    fault = min(fired, key=lambda f: f["fired_at"])
    struck = [log for log in result.ranks if log.label in fault["processes"]]
    result.rank = struck[0] if struck else result.rank
    result.finding = Finding(f"injected-{fault['kind']}", f"--inject {fault['text']} fired at "
                             f"{fault.get('seconds') or 0:.1f} s on {', '.join(fault['processes'])}",
                             INJECTED_HINTS.get(fault["kind"], "the fault drill ended the run"))
    return result


ENDED_BY = {  # RunLogs.ended_by -> (signature, what happened, what to do, scope)
    "preempted": ("preempted", "the job was preempted (its nodes were given to another job)",
                  "save checkpoints (amldist.runtime.checkpoint) and resubmit with --retry N to resume", "rank"),
    "node-failure": ("node-failure", "a node of the job failed (the scheduler lost it)",
                     "resubmit with --retry N: a retry keeps the job off a failed node where it can", "node"),
    "time-limit": ("time-limit", "the job reached its time limit (with --retry its tasks got SIGTERM before it)",
                   "raise limits.timeout (or --time), or save on SIGTERM (GraceHook) and --retry N --retry-on hang to "
                   "go on in a new attempt", "rank"),
}


def platform_cause(found, result: Diagnosis) -> Diagnosis:
    """``result`` with what the platform said ended the run (``found.ended_by``) as its cause, when it said so:
    the ranks' own exits then only followed it."""
    known = ENDED_BY.get(getattr(found, "ended_by", None) or "")
    if known is None or found.status != "Failed":
        return result
    signature, what, hint, scope = known
    result.finding = Finding(signature, f"{found.backend or 'the backend'}: {what}", hint, scope=scope)
    if result.rank is None and result.ranks:  # every rank was ended together: the report names the first
        result.rank = result.ranks[0]
    return result
