"""The fake workspace of fake_azure.py, plus what a pipeline submission needs: components.

``jobs.create_or_update(pipeline)`` registers each step's code and (anonymous) component before
the PUT of the pipeline job; this fake records them like the code and environment versions.
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from azure.core.credentials import AccessToken, AccessTokenInfo

from tests.backends.azureml.fake_azure import TENANT, FakeAzure, FakeCredential


def b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


class PipelineCredential(FakeCredential):
    """FakeCredential, plus the Azure ML audience: a pipeline's submission checks that the token it
    gets for ``https://ml.azure.com/.default`` is meant for Azure ML (``aud``)."""

    def _token(self, scopes) -> str:
        claims = {"tid": TENANT, "oid": "tester"}
        if any("ml.azure.com" in scope for scope in scopes):
            claims["aud"] = "https://ml.azure.com"
        return ".".join((b64({"alg": "none", "typ": "JWT"}), b64(claims), "sig"))

    def get_token(self, *scopes, **kwargs):
        self.calls += 1
        return AccessToken(self._token(scopes), int(time.time()) + 3600)

    def get_token_info(self, *scopes, options=None):
        self.calls += 1
        return AccessTokenInfo(self._token(scopes), int(time.time()) + 3600)


@dataclass
class FakePipelineAzure(FakeAzure):
    components: dict = field(default_factory=dict)  # (name, version) -> body as PUT

    def _arm(self, rec):
        rest = rec.path[len(self.ws_path):] if rec.path.lower().startswith(self.ws_path.lower()) else None
        m = re.fullmatch(r"/computes/([^/]+)", rest or "")
        if m and rec.method == "GET":  # the pipeline's compute is checked before the steps are registered
            return 200, {"id": self.ws_path + rest, "name": m.group(1), "location": "eastus",
                         "type": "Microsoft.MachineLearningServices/workspaces/computes",
                         "properties": {"computeType": "AmlCompute", "provisioningState": "Succeeded",
                                        "properties": {"vmSize": "Standard_D4s_v3", "scaleSettings": {
                                            "minNodeCount": 0, "maxNodeCount": 4}}}}, None
        m = re.fullmatch(r"/components/([^/]+)/versions/([^/]+)", rest or "")
        if m and rec.method == "PUT":
            self.components[m.groups()] = rec.json()
        if m and rec.method in ("PUT", "GET"):
            if m.groups() not in self.components:
                return 404, {"error": {"code": "ResourceNotFound", "message": "component version not found"}}, None
            return 200, self._resource(rest, m.group(2), "components/versions", self.components[m.groups()]), None
        return super()._arm(rec)

    def code_assets(self) -> dict:
        """{code asset name: {path inside it: bytes}} for every code version registered."""
        out = {}
        for (name, _), body in self.codes.items():
            prefix = urlsplit(body["properties"]["codeUri"]).path.lstrip("/") + "/"
            out[name] = {k[len(prefix):]: v for k, v in self.blobs.items() if k.startswith(prefix)}
        return out
