"""The fault drill's grammar (amldist.rules.faults) and the retry policy (amldist.diagnosis.retry): pure rules."""

from __future__ import annotations

import pytest

from amldist.diagnosis.retry import RetryPolicy, attempt_name, cause_class, parse_retry_on
from amldist.errors import UserError
from amldist.rules.faults import check_targets, parse_fault


@pytest.mark.parametrize("text, kind, target, after, extra", [
    ("preempt:node=1,after=30", "preempt", 1, 30.0, {"grace": 10.0}),
    ("preempt:node=0,after=2.5,grace=1", "preempt", 0, 2.5, {"grace": 1.0}),
    ("kill:rank=3,after=0", "kill", 3, 0.0, {}),
    ("hang:rank=2,after=12", "hang", 2, 12.0, {}),
    ("slow:rank=1,factor=4", "slow", 1, 0.0, {"factor": 4.0}),
])
def test_every_fault_kind_is_read(text, kind, target, after, extra):
    fault = parse_fault(text)
    assert (fault.kind, fault.target, fault.after) == (kind, target, after)
    assert all(getattr(fault, k) == v for k, v in extra.items())
    assert parse_fault(fault.text()) == fault  # what records show reads back as the same fault


@pytest.mark.parametrize("text, says", [
    ("explode:rank=1,after=1", "unknown fault 'explode'"),
    ("preempt", "unknown fault"),
    ("preempt:rank=1,after=1", "'rank=1' is not one of"),
    ("kill:rank=1,rank=2,after=1", "each once"),
    ("kill:rank=1", "after missing"),
    ("kill:rank=²,after=1", "not a plain decimal number"),
    ("kill:rank=1,after=1e9", "not a plain decimal number"),
    ("kill:rank=1,after=-1", "not a plain decimal number"),
    ("kill:rank=1.5,after=1", "whole number"),
    ("kill:rank=100000,after=1", "below 100000"),
    ("kill:rank=1,after=999999999", "at most 604800"),
    ("slow:rank=1,factor=0.5", "factor is from 1 to 100"),
    ("slow:rank=1,factor=1000", "factor is from 1 to 100"),
    ("kill:rank=1,after=1\nrm -rf /", "not a plain decimal number"),
])
def test_a_wrong_fault_is_one_line_naming_the_part(text, says):
    with pytest.raises(UserError) as caught:
        parse_fault(text)
    assert says in str(caught.value) and "\n" not in str(caught.value).replace(text, "")


def test_a_target_the_job_lacks_is_one_line():
    check_targets([parse_fault("preempt:node=1,after=1")], nodes=2, ranks=[0, 1, 2, 3], where="job.yml")
    with pytest.raises(UserError, match="the job has 2 node"):
        check_targets([parse_fault("preempt:node=2,after=1")], nodes=2, ranks=[0, 1], where="job.yml")
    with pytest.raises(UserError, match="ranks 0 to 3"):
        check_targets([parse_fault("kill:rank=4,after=1")], nodes=2, ranks=[0, 1, 2, 3], where="job.yml")
    with pytest.raises(UserError, match="no numbered ranks"):  # TensorFlow's tasks
        check_targets([parse_fault("hang:rank=0,after=1")], nodes=2, ranks=[None, None], where="job.yml")


def test_the_code_is_never_retried_and_each_class_has_its_own_budget():
    policy = RetryPolicy(1, parse_retry_on("preemption,node,hang"))
    ok, why = policy.decide("python-exception")
    assert not ok and "a failure of the training code" in why
    assert policy.decide("injected-preempt")[0] is True
    assert policy.decide("injected-kill") == (False, policy.decide("injected-kill")[1])  # shares the node budget
    assert policy.decide("stall")[0] is True  # hang: a budget of its own
    assert policy.decide("collective-timeout")[0] is False  # spent
    only_default = RetryPolicy(3)
    ok, why = only_default.decide("stall")
    assert not ok and "does not include hang" in why
    assert cause_class("no-such-signature") == "other"
    from amldist.diagnosis.known_lines import NODE_FAULTS
    node_faults = [k.name for k in NODE_FAULTS if k.scope == "node"]
    assert node_faults and all(cause_class(name, "node") == "node" for name in node_faults)  # InfiniBand, ECC, Xid
    assert RetryPolicy(1).decide("ib-completion-error", "node")[0] is True


@pytest.mark.parametrize("text", ["user", "preemption,user", "weather", ","])
def test_retry_on_takes_only_classes_that_may_be_retried(text):
    with pytest.raises(UserError):
        parse_retry_on(text)


def test_attempts_are_named_after_the_first():
    assert attempt_name("train_1", 1) == "train_1" and attempt_name("train_1", 3) == "train_1-attempt3"
