"""What the service says about a run's end, weighed beside its logs: a run the platform itself took away.

A preempted node leaves nothing in the ranks' logs that names the preemption (its processes are killed; the
others then lose their peer), but the service that ran the job knows: Azure ML's run error reads
``AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. ... Reason: Received
pre-emption warning signal`` (as users quote it from low-priority clusters: MicrosoftDocs/azure-docs#66288,
microsoft/MLOpsPython#346), with the code ``UserError`` although no user code failed, so the words decide,
never the code. A backend hands that text over as :attr:`amldist.backends.base.RunLogs.service_error`; when
it says the node was preempted, that is the cause, whatever a rank's log shows afterwards.
"""

from __future__ import annotations

import re

from amldist.diagnosis.drill import ENDED_BY
from amldist.diagnosis.signatures import Finding

# The platform's own words for a node taken away, and nothing broader: Azure ML's run error can quote the end of a
# user's traceback, whose text may say "preempted" about anything.
PREEMPTED = re.compile(r"\bPreemptionError\b|Nodes of this job got pre-?empted")
# what to do is the drill's and Slurm's advice for a preemption, said once (amldist.diagnosis.drill.ENDED_BY)
PREEMPTED_HINT = "the platform preempted the job's node (a low-priority or spot VM): not your code; " + \
    ENDED_BY["preempted"][2]


def service_cause(found, result):
    """``result`` (a Diagnosis) with the service's word as its cause when ``found.service_error`` says the run's
    node was preempted; ``result`` as it is otherwise (the logs decide)."""
    said = " ".join(str(getattr(found, "service_error", None) or "").split())
    if found.status != "Failed" or not PREEMPTED.search(said):
        return result
    # the platform took a node, not a rank: a rank the logs blame only lost its peers
    result.rank, result.evidence = None, "the service's run error"
    result.finding = Finding("preempted", f"the service: {said[:500]}", PREEMPTED_HINT)
    return result
