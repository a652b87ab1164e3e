"""The fake workspace of fake_logs.py, plus what ``amldist submit --retry`` asks of it: each job's status moving
along a script as it is polled (``jobs.get``), the run error Azure ML states for it (run history's details, where
a preemption is said), a job list filtered by the jobs' properties as the service filters it (``properties=
name=value,...``: the swagger's "Comma-separated list of user property names (and optionally values)"), and a
Ctrl-C arriving while one of the polls is on the wire."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from azure.core.exceptions import ServiceRequestError

from tests.backends.azureml.fake_logs import FakeLogsAzure

# Azure ML's run error for a job whose low-priority node was taken away, as users quote it
# (MicrosoftDocs/azure-docs#66288, microsoft/MLOpsPython#346): code UserError, the words say preemption.
PREEMPTED = ("AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. Check if the run has "
             "failed or restarted. Reason: Received pre-emption warning signal")
USER_FAILED = ("Execution failed. User process 'python' exited with status code 1. Please check log file "
               "'user_logs/std_log_process_0.txt' for error details.")


@dataclass
class FakeRetryAzure(FakeLogsAzure):
    scripts: dict = field(default_factory=dict)  # job name -> statuses its successive GETs report (the last sticks)
    errors: dict = field(default_factory=dict)  # job name -> (code, message) of its run error
    interrupt: tuple | None = None  # (job name, n): the n-th GET of that job raises KeyboardInterrupt (Ctrl-C)
    unreachable: dict = field(default_factory=dict)  # job name -> the GETs of it (1, 2...) that find no network
    _gets: dict = field(default_factory=dict)

    def script(self, name: str, statuses: tuple, *, error: tuple | None = None, logs: dict | None = None) -> None:
        self.scripts[name] = list(statuses)
        if error is not None:
            self.errors[name] = error
        if logs:
            self.add_logs(name, logs)

    def gets(self, name: str) -> int:
        return self._gets.get(name, 0)

    def _arm(self, rec):
        rest = rec.path[len(self.ws_path):] if rec.path.lower().startswith(self.ws_path.lower()) else None
        m = re.fullmatch(r"/jobs/([^/]+)", rest or "")
        if m and rec.method == "GET" and m.group(1) in self.jobs:
            name = m.group(1)
            self._gets[name] = self.gets(name) + 1
            if self.interrupt == (name, self.gets(name)):
                raise KeyboardInterrupt  # Ctrl-C while the poll is on the wire
            if self.gets(name) in self.unreachable.get(name, ()):
                raise ServiceRequestError("Failed to establish a new connection: [Errno 101] Network is unreachable")
            self._advance(name)
        if rest == "/jobs" and rec.method == "GET" and "properties" in rec.query:
            wanted = [item.split("=", 1) for item in rec.query["properties"].split(",")]
            found = [(n, b) for n, b in reversed(list(self.jobs.items()))
                     if all(k in b["properties"].get("properties", {}) and (len(kv) == 1 or
                            b["properties"]["properties"][k] == kv[1]) for kv in wanted for k in kv[:1])]
            return 200, {"value": [self._resource(f"/jobs/{n}", n, "jobs", b) for n, b in found]}, None
        return super()._arm(rec)

    def _advance(self, name: str) -> None:
        """One poll of job ``name`` (``jobs.get``, or run history's details as ``jobs.stream`` polls): one step
        along its script, unless a cancel ended it."""
        script = self.scripts.get(name)
        if script and self.jobs[name]["properties"]["status"] not in ("Canceled", "CancelRequested"):
            self.jobs[name]["properties"]["status"] = script.pop(0) if len(script) > 1 else script[0]

    def _data_plane(self, rec):
        m = re.search(r"/runs/([^/]+)/details$", rec.path)
        if m and rec.method == "GET" and m.group(1) in self.jobs:
            name = m.group(1)
            self._advance(name)
            details = {"runId": name, "status": self.jobs[name]["properties"]["status"], "warnings": []}
            if name in self.errors:
                code, message = self.errors[name]
                details["error"] = {"error": {"code": code, "message": message}}
            return 200, details, None
        return super()._data_plane(rec)
