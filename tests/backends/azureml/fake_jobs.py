"""The fake workspace of fake_azure.py, plus what ``amldist job`` asks of it: listing jobs,
cancelling one (a long-running operation: 202, then its Location answers 200), and the job's
state as the service moves it (``set_status``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tests.backends.azureml.fake_azure import ARM_HOST, FakeAzure


@dataclass
class FakeJobsAzure(FakeAzure):
    canceled: list = field(default_factory=list)  # names of jobs a cancel was sent for

    def set_status(self, name: str, status: str, *, start: str | None = None, end: str | None = None) -> None:
        properties = self.jobs[name]["properties"]
        properties["status"] = status
        times = properties.setdefault("properties", {})
        if start:
            times["StartTimeUtc"] = start
        if end:
            times["EndTimeUtc"] = end

    def _arm(self, rec):
        rest = rec.path[len(self.ws_path):] if rec.path.lower().startswith(self.ws_path.lower()) else None
        if rest == "/jobs" and rec.method == "GET":
            return 200, {"value": [self._resource(f"/jobs/{name}", name, "jobs", body)
                                   for name, body in reversed(list(self.jobs.items()))]}, None
        m = re.fullmatch(r"/jobs/([^/]+)/cancel", rest or "")
        if m and rec.method == "POST":
            if m.group(1) not in self.jobs:
                return 404, {"error": {"code": "UserError", "message": f"job {m.group(1)} not found"}}, None
            self.canceled.append(m.group(1))
            self.set_status(m.group(1), "Canceled")
            operation = f"https://{ARM_HOST}{self.ws_path}/operations/cancel-{m.group(1)}?api-version=2023-02-01-preview"
            return 202, b"", {"Location": operation, "Retry-After": "0"}
        if rest is not None and rest.startswith("/operations/cancel-") and rec.method == "GET":
            return 200, b"", None
        return super()._arm(rec)
