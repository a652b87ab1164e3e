"""Retries that know why a run failed: ``amldist submit FILE --local --retry N [--retry-on CAUSES]``.

A failed attempt is diagnosed (:mod:`amldist.diagnosis`), and its cause falls in one class:

- ``preemption``: the node was taken away (a ``preempt`` fault of the drill; on Slurm, ``PREEMPTED``; on Azure
  ML, the run error's ``PreemptionError``: :mod:`amldist.diagnosis.service`);
- ``node``: the machine, not the code (a process killed from outside, InfiniBand, ECC/Xid, host OOM; on Slurm,
  ``NODE_FAIL``);
- ``hang``: a stall or a collective that timed out, or the job's ``limits.timeout`` (on Slurm, its time limit);
- ``user``: the code or its arguments (a Python exception, CUDA out of memory, a wrong setting the
  diagnosis names a spec field for): never retried, whatever ``--retry`` says;
- ``other``: a failure the diagnosis cannot attribute.

``--retry N`` gives ``preemption`` and ``node`` together a budget of N more attempts. ``--retry-on``
names the classes that may be retried (default ``preemption,node``; ``hang`` and ``other`` may be
added, ``user`` may not); each class beyond the first two has its own budget of N, so a hang that
recurs cannot spend the preemption budget, nor the reverse. Every attempt is a job of its own,
named ``<first>-attempt<k>``, whose record says which run it retries (``attempt``); all attempts
share one checkpoint folder (``AMLDIST_CHECKPOINT_DIR``, under the first attempt's run folder), so a
script using :mod:`amldist.runtime.checkpoint` resumes. The drill's faults apply to the first attempt
only: a drill rehearses one failure and the recovery from it. The final status is the last attempt's.
``amldist job cancel`` of any attempt, from another terminal, cancels the attempt running and stops the
retries, also between two attempts (:func:`cancel_attempts`); the final status is then ``Canceled``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amldist.errors import UserError

CLASSES = ("preemption", "node", "hang", "user", "other")
DEFAULT_ON = ("preemption", "node")
SHARED = {"preemption": "preemption/node", "node": "preemption/node"}  # one budget for these two
# What a diagnosis signature says about the cause (signatures not listed: "other"). A node fault is known by
# the signature's own scope ("node": InfiniBand, ECC, Xid, a lost GPU... in amldist.diagnosis.known_lines), not
# listed here again.
SIGNATURE_CLASS = {
    "injected-preempt": "preemption", "preempted": "preemption",
    "injected-kill": "node", "node-failure": "node", "oom-killed": "node", "bus-error": "node",
    "injected-hang": "hang", "time-limit": "hang", "stall": "hang", "collective-timeout": "hang",
    "never-joined": "hang", "hung": "hang",
    "python-exception": "user", "cuda-oom": "user", "duplicate-gpu": "user", "address-in-use": "user",
    "fabric-check": "user", "nccl-ib-disabled": "user", "collective-mismatch": "user", "left-early": "user",
    "rank-not-set": "user", "ddp-model-mismatch": "user", "ddp-unused-parameters": "user",
    "cuda-device-assert": "user", "process-group-not-initialized": "user", "nccl-invalid-usage": "user",
}


def cause_class(signature: str | None, scope: str | None = None) -> str:
    """The class of a diagnosed failure: a node-scoped signature is a node fault, else the table above."""
    return "node" if scope == "node" else SIGNATURE_CLASS.get(signature or "", "other")


def parse_retry_on(text: str | None) -> tuple[str, ...]:
    """``--retry-on`` as classes; ``user`` and unknown names are one line."""
    if not text:
        return DEFAULT_ON
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if "user" in names:
        raise UserError("--retry-on user: a failure in the training code is never retried (it would fail again)",
                        hint="fix the code; --retry-on takes preemption, node, hang, other")
    unknown = [n for n in names if n not in CLASSES]
    if unknown or not names:
        raise UserError(f"--retry-on {text!r}: {', '.join(unknown) or 'no class'} is not a cause class",
                        hint="--retry-on takes a comma list of preemption, node, hang, other")
    return names


@dataclass
class RetryPolicy:
    """What ``--retry``/``--retry-on`` allow, and what has been spent (see the module docstring)."""

    budget: int
    on: tuple[str, ...] = DEFAULT_ON
    spent: dict = field(default_factory=dict)

    def decide(self, signature: str | None, scope: str | None = None) -> tuple[bool, str]:
        """(retry?, the one line that says why) for a failed attempt whose diagnosis is ``signature`` (of
        ``scope``: "node" for a node's hardware or fabric)."""
        cls = cause_class(signature, scope)
        what = f"the failure was diagnosed as {signature or 'an unknown cause'} ({cls})"
        if cls == "user":
            return False, f"not retried: {what}, a failure of the training code; a retry would fail again"
        if cls not in self.on:
            return False, f"not retried: {what}; --retry-on {','.join(self.on)} does not include {cls}"
        pool = SHARED.get(cls, cls)
        if self.spent.get(pool, 0) >= self.budget:
            return False, f"not retried: {what}, and the {pool} budget of --retry {self.budget} is spent"
        self.spent[pool] = self.spent.get(pool, 0) + 1
        return True, f"retrying: {what} (attempt {sum(self.spent.values()) + 1}, {pool} retry " \
                     f"{self.spent[pool]} of {self.budget})"


CANCELED_BY = "amldist job cancel"
CANCELED_LINE = "the retries were canceled by 'amldist job cancel'"


def attempt_name(first: str, number: int) -> str:
    return first if number == 1 else f"{first}-attempt{number}"


def submit_with_retries(source, policy: RetryPolicy, *, err=None, **kwargs):
    """:func:`amldist.backends.submit.submit` again while the policy allows (see the module docstring);
    returns the last attempt's Submission. A dry run, a success, a cancellation or a refusal ends it."""
    import sys
    from dataclasses import replace

    from amldist.backends.base import CANCELED, FAILED
    from amldist.backends.submit import submit

    err = err or sys.stderr
    done = submit(source, checkpoints=True, err=err, **kwargs)
    if done.record is None:
        return done
    record = done.backend.wait_for_end(done.record)
    shared = done.backend.checkpoint_dir_of(record)
    if shared is None:  # the contract: a backend with no shared checkpoint folder does not retry
        return done
    first, number = record, 1
    while record.status == FAILED:
        signature, line, scope, node = diagnosed_failure(done.backend, record)
        retry, why = policy.decide(signature, scope)
        print(f"attempt {number} ({record.name}) failed: {line}", file=err)
        print(why, file=err)
        if not retry:
            break
        if done.backend.retries_canceled(first):  # `amldist job cancel` came after this attempt ended
            print(f"{CANCELED_LINE}: no attempt after {record.name} starts", file=err)
            return replace(done, record=replace(record, status=CANCELED, stopped_by=CANCELED_BY))
        number += 1
        # the node a preemption or node fault struck: the backend may keep the next attempt off it
        struck = node if cause_class(signature, scope) in SHARED else None
        extra = done.backend.retry_options(record, signature, scope, node=struck)
        done = submit(source, err=err, **{**kwargs, **extra, "name": attempt_name(first.name, number), "inject": (),
                                          "attempt_of": first.name, "attempt": number, "checkpoint_dir": shared})
        record = done.backend.wait_for_end(done.record)
    if record.status == CANCELED and done.backend.retries_canceled(first):
        print(f"{CANCELED_LINE}: {record.name} was stopped and no further attempt starts", file=err)
    return replace(done, record=record)


def diagnosed_failure(backend, record) -> tuple[str | None, str, str | None, int | None]:
    """(the diagnosed signature of a failed run, one line for it, the signature's scope, the node the diagnosis
    names: the failing rank's, None when it names none)."""
    from amldist.diagnosis.backend import diagnose_job

    d = diagnose_job(backend, record.name)
    node = d.rank.node if d.rank is not None else None
    if d.finding is None:
        said = d.rank.label + " failed for a reason not named" if d.rank is not None else "no cause found"
        return None, said, None, node
    where = f"{d.rank.label}: " if d.rank is not None else ""
    line = f"{where}{d.finding.signature}: {d.finding.line}"[:300]
    return d.finding.signature, line, getattr(d.finding, "scope", None), node


def attempts_of(backend, record) -> list:
    """Every attempt of the run ``record`` belongs to (first to last), or [] when it was never retried."""
    found = _group(backend, (record.details.get("attempt") or {}).get("of") or record.name)
    return found if len(found) > 1 else []


def _group(backend, first: str) -> list:
    found = [r for r in backend.list_attempts(first)
             if r.name == first or (r.details.get("attempt") or {}).get("of") == first]
    return sorted(found, key=lambda r: (r.details.get("attempt") or {}).get("number", 1))


def cancel_attempts(backend, name: str, *, wait: bool = True):
    """``amldist job cancel NAME``: (the records of the attempts canceled, whether the retries were stopped).

    A run without ``--retry``, or whose retries are over (its last attempt completed or was canceled), is canceled
    alone. An attempt of a run under ``--retry`` (any attempt's name: its record names the first) stops the
    retries first (:meth:`~amldist.backends.base.Backend.cancel_retries`, which the retry loop reads right before
    it starts an attempt), and only then cancels every attempt still running. An attempt the loop started before
    the stop was recorded is then either seen running here or reads the stop itself once it runs (locally: the
    supervisor, right after status.json says it runs), and the loop starts none after it: a cancel in the gap
    between two attempts ends the retries too."""
    from amldist.backends.base import CANCELED, COMPLETED

    record = backend.show(name)
    first = (record.details.get("attempt") or {}).get("of")
    group = _group(backend, first) if first else []
    if not group or group[-1].status in (COMPLETED, CANCELED):  # no retries, or they are over: nothing to stop
        return [backend.cancel(name, wait=wait)], False
    stopped = backend.cancel_retries(record if first == record.name else backend.show(first))
    running = [a for a in _group(backend, first) if not a.ended]
    return [backend.cancel(a.name, wait=wait) for a in running] or [record], stopped


def attempts_lines(backend, record) -> list[str]:
    """``job show``'s block for a retried run: each attempt, its status and, when it failed, its diagnosis."""
    attempts = attempts_of(backend, record)
    lines = ["attempts:"] if attempts else []
    for number, attempt in enumerate(attempts, start=1):
        cause = f": {diagnosed_failure(backend, attempt)[1]}" if attempt.status == "Failed" else ""
        lines.append(f"  {number}. {attempt.name}: {attempt.status}{cause}")
    if record.details.get("attempt") and backend.retries_canceled(attempts[0] if attempts else record):
        lines.append(f"{CANCELED_LINE}: no further attempt started")
    return lines
