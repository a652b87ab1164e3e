"""The service's word on a run's end (amldist/diagnosis/service.py): a preemption it names is the cause, and only
the platform's own words count."""

from __future__ import annotations

import pytest

from amldist.backends.base import RunLogs
from amldist.diagnosis.analysis import Diagnosis
from amldist.diagnosis.service import service_cause
from amldist.diagnosis.signatures import Finding, RankLog

# As users quote Azure ML's run error from low-priority clusters (MicrosoftDocs/azure-docs#66288)
PREEMPTED = ("UserError: AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. Check if the "
             "run has failed or restarted. Reason: Received pre-emption warning signal")


def logs_said() -> Diagnosis:
    """What rank 0's log alone says after its peer's node went away."""
    rank = RankLog(label="rank 0", rank=0, node=0, log="user_logs/std_log_process_00.txt", text="")
    return Diagnosis("j", "Failed", "azureml", rank=rank, finding=Finding("gloo-peer-closed", "peer closed", "-"))


def test_a_preemption_the_service_names_is_the_cause_and_no_rank_is_blamed():
    result = service_cause(RunLogs("j", "Failed", "azureml", service_error=PREEMPTED), logs_said())
    assert (result.finding.signature, result.rank, result.exit_code) == ("preempted", None, 0)
    assert result.finding.line == f"the service: {PREEMPTED}"


@pytest.mark.parametrize("said, status", [
    ("UserError: Execution failed. User process 'python' exited with status code 1. Error: RuntimeError: the "
     "reader was preempted by another worker", "Failed"),  # the user's own text quoted in the run error
    (None, "Failed"),
    (PREEMPTED, "Completed"),  # Azure ML restarted it after the preemption, and it completed
])
def test_anything_else_leaves_the_logs_answer(said, status):
    before = logs_said()
    before.status = status
    result = service_cause(RunLogs("j", status, "azureml", service_error=said), before)
    assert (result.finding.signature, result.rank.label) == ("gloo-peer-closed", "rank 0")
