"""A fake Azure ML workspace at the HTTP boundary: an azure-core transport that answers.

The real ``MLClient`` (and the azure-storage-blob client it uses for code uploads)
build real requests; :class:`FakeAzure` records each one and answers as the ARM
and blob services would, from a small in-memory state. Any host or call it does not
know raises :class:`UnexpectedRequest`, so a test can never reach the network.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from azure.core.credentials import AccessToken, AccessTokenInfo
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest._http_response_impl import HttpResponseImpl
from azure.core.utils import CaseInsensitiveDict

ARM_HOST = "management.azure.com"
STORAGE_ACCOUNT = "fakestorage"
BLOB_HOST = f"{STORAGE_ACCOUNT}.blob.core.windows.net"
API_HOST = "eastus.api.azureml.ms"  # the workspace's data plane (discovery, run history)


class UnexpectedRequest(AssertionError):
    """A request the fake service does not emulate (raised inside the SDK call)."""


TENANT = "11111111-2222-3333-4444-555555555555"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


class FakeCredential:
    """A token credential that never talks to Entra ID; its token is an unsigned JWT with a tenant."""

    token = ".".join((_b64({"alg": "none", "typ": "JWT"}), _b64({"tid": TENANT, "oid": "tester"}), "sig"))

    def __init__(self):
        self.calls = 0

    def get_token(self, *scopes, **kwargs):
        self.calls += 1
        return AccessToken(self.token, int(time.time()) + 3600)

    def get_token_info(self, *scopes, options=None):
        self.calls += 1
        return AccessTokenInfo(self.token, int(time.time()) + 3600)


@dataclass
class Recorded:
    method: str
    url: str
    headers: dict
    body: bytes

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def path(self) -> str:
        return unquote(urlsplit(self.url).path)

    @property
    def query(self) -> dict:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.url).query).items()}

    def json(self):
        return json.loads(self.body.decode("utf-8"))


class _Closable:
    def close(self):
        pass


def _response(request, status: int, body: bytes, headers: dict | None):
    """A complete (already read) azure-core response, usable by old and new pipelines."""
    all_headers = CaseInsensitiveDict({"Content-Type": "application/json", **(headers or {})})
    response = HttpResponseImpl(
        request=request, internal_response=_Closable(), status_code=status,
        reason=_REASONS.get(status, "Status"), content_type=all_headers["Content-Type"],
        headers=all_headers, stream_download_generator=None,
    )
    response._content = body  # the whole body is known: no streaming
    return response


_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 404: "Not Found"}


def _read_body(request) -> bytes:
    for attr in ("content", "data", "body"):
        data = getattr(request, attr, None)
        if data is None:
            continue
        if isinstance(data, bytes):
            return data
        if isinstance(data, str):
            return data.encode("utf-8")
        if hasattr(data, "read"):
            return data.read()
        if isinstance(data, (dict, list)):
            return json.dumps(data).encode("utf-8")
        return b"".join(bytes(chunk) for chunk in data)
    return b""


def _arm_error(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


@dataclass
class FakeAzure(HttpTransport):
    """The fake workspace; pass it as ``transport=`` (and see :func:`patch_storage`)."""

    subscription: str = "00000000-0000-0000-0000-000000000000"
    resource_group: str = "rg"
    workspace: str = "ws"
    requests: list = field(default_factory=list)
    unexpected: list = field(default_factory=list)
    blobs: dict = field(default_factory=dict)  # "container/blob path" -> bytes
    blob_metadata: dict = field(default_factory=dict)  # "container/blob path" -> {name: value}
    codes: dict = field(default_factory=dict)  # (name, version) -> body as PUT
    environments: dict = field(default_factory=dict)  # (name, version) -> body as PUT
    jobs: dict = field(default_factory=dict)  # name -> body as PUT plus the service's fields
    run_statuses: tuple = ("Running", "Completed")  # what successive run-history polls report
    run_log: str = "rank 0: epoch 1 loss 0.5\n"
    _polls: dict = field(default_factory=dict)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def open(self):
        pass

    def close(self):
        pass

    # --- what tests look at ------------------------------------------------------------------
    def find(self, method: str, pattern: str) -> list:
        """Recorded requests with this method whose path matches ``pattern`` (a regex)."""
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    def job_puts(self) -> list:
        return self.find("PUT", r"/jobs/[^/]+$")

    def uploaded_code(self) -> dict:
        """{path inside the code asset: bytes} for the code version that was registered."""
        (body,) = [b for b in self.codes.values()]
        prefix = urlsplit(body["properties"]["codeUri"]).path.lstrip("/") + "/"
        return {k[len(prefix):]: v for k, v in self.blobs.items() if k.startswith(prefix)}

    def send(self, request, **kwargs):
        rec = Recorded(request.method, request.url, dict(request.headers), _read_body(request))
        self.requests.append(rec)
        if rec.host == ARM_HOST:
            status, body, headers = self._arm(rec)
        elif rec.host == BLOB_HOST:
            status, body, headers = self._blob(rec)
        elif rec.host == API_HOST:
            status, body, headers = self._data_plane(rec)
        else:
            status = None
        if status is None:
            # Recorded too: the SDK swallows some errors (e.g. while adding the tenant id).
            self.unexpected.append(rec)
            raise UnexpectedRequest(f"unexpected request: {rec.method} {rec.url}")
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        return _response(request, status, data, headers)

    # --- Azure Resource Manager: the workspace's assets and jobs ---------------------------
    @property
    def ws_path(self) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
                f"/providers/Microsoft.MachineLearningServices/workspaces/{self.workspace}")

    def _arm(self, rec: Recorded):
        if not rec.path.lower().startswith(self.ws_path.lower()):
            return None, None, None
        rest = rec.path[len(self.ws_path):]
        if rest == "" and rec.method == "GET":
            return 200, self._workspace(), None
        m = re.fullmatch(r"/codes/([^/]+)/versions", rest)
        if m and rec.method == "GET":
            return 200, {"value": []}, None  # no code asset with this hash yet
        m = re.fullmatch(r"/codes/([^/]+)/versions/([^/]+)/startPendingUpload", rest)
        if m and rec.method == "POST":
            # The service lends a fresh temporary container with a SAS token for it.
            blob_uri = f"https://{BLOB_HOST}/{uuid.uuid4()}"
            return 200, {
                "blobReferenceForConsumption": {
                    "blobUri": blob_uri,
                    "storageAccountArmId": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + STORAGE_ACCOUNT,
                    "credential": {"credentialType": "SAS", "sasUri": blob_uri + "?sv=2021&sig=fake"},
                },
                "pendingUploadId": m.group(1),
                "pendingUploadType": "TemporaryBlobReference",
            }, None
        for kind, store in (("codes", self.codes), ("environments", self.environments)):
            m = re.fullmatch(rf"/{kind}/([^/]+)/versions/([^/]+)", rest)
            if m and rec.method == "PUT":
                store[m.groups()] = rec.json()
            if m and rec.method in ("PUT", "GET"):
                if m.groups() not in store:
                    return 404, _arm_error("ResourceNotFound", f"{kind[:-1]} version not found"), None
                return 200, self._resource(rest, m.group(2), f"{kind}/versions", store[m.groups()]), None
        m = re.fullmatch(r"/jobs/([^/]+)", rest)
        if m and rec.method == "PUT":
            body = rec.json()
            body["properties"]["status"] = "NotStarted"
            body["properties"]["services"] = {
                "Studio": {"jobServiceType": "Studio", "endpoint": self.studio_url(m.group(1))},
                "Tracking": {"jobServiceType": "Tracking", "endpoint": "azureml://fake.api.azureml.ms/mlflow"},
            }
            self.jobs[m.group(1)] = body
        if m and rec.method in ("PUT", "GET"):
            if m.group(1) not in self.jobs:
                return 404, _arm_error("UserError", f"job {m.group(1)} not found"), None
            return (201 if rec.method == "PUT" else 200), self._resource(rest, m.group(1), "jobs", self.jobs[m.group(1)]), None
        return None, None, None

    def _workspace(self) -> dict:
        return {
            "id": self.ws_path, "name": self.workspace, "location": "eastus", "kind": "Default",
            "type": "Microsoft.MachineLearningServices/workspaces",
            "properties": {
                "friendlyName": self.workspace, "discoveryUrl": f"https://{API_HOST}/discovery",
                "workspaceId": "99999999-9999-9999-9999-999999999999",
                "storageAccount": f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
                                  f"/providers/Microsoft.Storage/storageAccounts/{STORAGE_ACCOUNT}",
                "mlFlowTrackingUri": f"azureml://{API_HOST}/mlflow/v1.0{self.ws_path}",
            },
        }

    def studio_url(self, job_name: str) -> str:
        # Without the tenant: azure-ai-ml appends "&tid=" from the caller's token itself.
        return f"https://ml.azure.com/runs/{job_name}?wsid={self.ws_path}"

    def _resource(self, rest: str, name: str, kind: str, body: dict) -> dict:
        return {
            "id": self.ws_path + rest,
            "name": name,
            "type": f"Microsoft.MachineLearningServices/workspaces/{kind}",
            "properties": body.get("properties", {}),
            "systemData": {"createdAt": "2024-01-01T00:00:00Z", "createdBy": "tester", "createdByType": "User"},
        }

    # --- The workspace's data plane: discovery and run history (for --stream) --------------
    def _data_plane(self, rec: Recorded):
        if rec.path == "/discovery" and rec.method == "GET":
            base = f"https://{API_HOST}"
            return 200, {"api": base, "catalog": base, "experimentation": base, "history": base,
                         "modelmanagement": base, "pipelines": base, "studio": "https://ml.azure.com"}, None
        m = re.fullmatch(r"/history/v1\.0" + re.escape(self.ws_path) + r"/runs/([^/]+)/details", rec.path,
                         flags=re.IGNORECASE)
        if m and rec.method == "GET" and m.group(1) in self.jobs:
            name = m.group(1)
            # Each poll moves the run one step along `run_statuses`; the last one sticks.
            step = self._polls.get(name, 0)
            self._polls[name] = step + 1
            status = self.run_statuses[min(step, len(self.run_statuses) - 1)]
            log_blob = f"azureml/ExperimentRun/dcid.{name}/user_logs/std_log_process_0.txt"
            self.blobs[f"logs/{log_blob}"] = self.run_log.encode("utf-8")
            details = {"runId": name, "status": status, "warnings": [],
                       "logFiles": {"user_logs/std_log_process_0.txt": f"https://{BLOB_HOST}/logs/{log_blob}?sig=fake"}}
            if status == "Failed":
                details["error"] = {"error": {"code": "UserError", "message": "rank 1 exited with code 3"}}
            return 200, details, None
        return None, None, None

    # --- Blob storage: the code snapshot upload --------------------------------------------
    def _blob(self, rec: Recorded):
        if "sig" not in rec.query:
            return 403, {"error": "no SAS"}, {"x-ms-error-code": "AuthenticationFailed"}
        key = rec.path.lstrip("/")
        comp = rec.query.get("comp")
        if rec.method == "HEAD" and comp is None:
            if key not in self.blobs:
                return 404, b"", {"x-ms-error-code": "BlobNotFound"}
            headers = {f"x-ms-meta-{k}": v for k, v in self.blob_metadata.get(key, {}).items()}
            headers.update({"Content-Length": str(len(self.blobs[key])), "x-ms-blob-type": "BlockBlob"})
            return 200, b"", headers
        if rec.method == "GET" and comp is None:
            if key not in self.blobs:
                return 404, b"", {"x-ms-error-code": "BlobNotFound"}
            return 200, self.blobs[key], {"Content-Type": "text/plain"}
        if rec.method == "PUT" and comp is None:
            self.blobs[key] = rec.body
            self.blob_metadata[key] = {k[len("x-ms-meta-"):]: v for k, v in rec.headers.items()
                                       if k.lower().startswith("x-ms-meta-")}
            return 201, b"", {"ETag": '"0x1"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
        if rec.method == "PUT" and comp == "metadata":
            if key not in self.blobs:
                return 404, b"", {"x-ms-error-code": "BlobNotFound"}
            self.blob_metadata[key] = {k[len("x-ms-meta-"):]: v for k, v in rec.headers.items()
                                       if k.lower().startswith("x-ms-meta-")}
            return 200, b"", {"ETag": '"0x2"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
        return None, None, None
