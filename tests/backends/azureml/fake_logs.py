"""The fake workspace of fake_jobs.py, plus what ``MLClient.jobs.download`` asks for a job's logs:
the run's data (no named outputs), the default and artifact datastores with a SAS token, and the
artifact container's blobs under ``ExperimentRun/dcid.<job>/`` (listed, then each one read)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from tests.backends.azureml.fake_azure import API_HOST, BLOB_HOST, STORAGE_ACCOUNT
from tests.backends.azureml.fake_jobs import FakeJobsAzure

CONTAINER = "azureml"  # the artifact store's container


@dataclass
class FakeLogsAzure(FakeJobsAzure):
    artifacts: dict = field(default_factory=dict)  # job name -> {path under the run's folder: text}

    def add_logs(self, job: str, files: dict) -> None:
        self.artifacts[job] = dict(files)
        for path, text in files.items():
            self.blobs[f"{CONTAINER}/ExperimentRun/dcid.{job}/{path}"] = text.encode("utf-8")

    def send(self, request, **kwargs):
        response = super().send(request, **kwargs)
        url = urlsplit(request.url)
        if request.method == "GET" and url.hostname == BLOB_HOST and "comp=" not in url.query and response.status_code == 200:
            # azure-storage-blob reads a download as a stream (an object it adds `properties` to)
            chunks = Chunks(response._content, response)
            response._stream_download_generator = lambda *args, **kw: chunks
            size = len(response._content)
            response.headers["Content-Range"] = f"bytes 0-{max(size - 1, 0)}/{size}"
            response.headers.update({"Content-Length": str(size), "x-ms-blob-type": "BlockBlob", "ETag": '"0x1"',
                                     "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"})
            response.status_code = 206 if size else 200
        return response

    def _datastore(self, name: str) -> dict:
        return {"id": f"{self.ws_path}/datastores/{name}", "name": name,
                "type": "Microsoft.MachineLearningServices/workspaces/datastores",
                "properties": {"datastoreType": "AzureBlob", "accountName": STORAGE_ACCOUNT,
                               "containerName": CONTAINER, "endpoint": "core.windows.net", "protocol": "https",
                               "isDefault": name == "workspaceblobstore",
                               "credentials": {"credentialsType": "Sas", "secrets": {"secretsType": "Sas"}}}}

    def _arm(self, rec):
        rest = rec.path[len(self.ws_path):] if rec.path.lower().startswith(self.ws_path.lower()) else None
        if rest == "/datastores" and rec.method == "GET":
            return 200, {"value": [self._datastore("workspaceblobstore")]}, None
        m = re.fullmatch(r"/datastores/([^/]+)", rest or "")
        if m and rec.method == "GET":
            return 200, self._datastore(m.group(1)), None
        m = re.fullmatch(r"/datastores/([^/]+)/listSecrets", rest or "")
        if m and rec.method == "POST":
            return 200, {"secretsType": "Sas", "sasToken": "sv=2021&sig=fake"}, None
        return super()._arm(rec)

    def _data_plane(self, rec):
        if rec.path.endswith("/rundata") and rec.method == "POST":
            run_id = rec.json().get("runId")
            return 200, {"runMetadata": {"runId": run_id, "outputs": {}}}, None
        m = re.search(r"/runs/([^/]+)/children$", rec.path)
        if m and rec.method == "GET":
            children = [{"runId": n, "status": b["properties"]["status"], "runType": "azureml.StepRun",
                         "displayName": b["properties"].get("displayName"),
                         "startTimeUtc": b["properties"].get("properties", {}).get("StartTimeUtc")}
                        for n, b in self.jobs.items() if b.get("parent") == m.group(1)]
            return 200, {"value": children, "continuationToken": None}, None
        return super()._data_plane(rec)

    def _blob(self, rec):
        if rec.method == "GET" and rec.query.get("comp") == "list" and "sig" in rec.query:
            container = rec.path.strip("/")
            prefix = rec.query.get("prefix", "")
            names = sorted(k[len(container) + 1:] for k in self.blobs
                           if k.startswith(container + "/") and k[len(container) + 1:].startswith(prefix))
            return 200, listing(container, prefix, names, self.blobs), {"Content-Type": "application/xml"}
        return super()._blob(rec)


class Chunks:
    """A downloaded blob's body as azure-core's stream download gives it: iterable, attributes allowed."""

    def __init__(self, body: bytes, response):
        self.body = body
        self.response = response
        self.content_length = len(body)

    def __iter__(self):
        yield self.body

    def __next__(self):
        raise StopIteration


def listing(container: str, prefix: str, names: list, blobs: dict) -> bytes:
    """A List Blobs answer (EnumerationResults XML) for ``names``."""
    items = "".join(
        f"<Blob><Name>{escape(name)}</Name><Properties><Content-Length>{len(blobs[f'{container}/{name}'])}"
        "</Content-Length><BlobType>BlockBlob</BlobType><Last-Modified>Mon, 01 Jan 2024 00:00:00 GMT"
        "</Last-Modified><Etag>0x1</Etag></Properties><Metadata /></Blob>" for name in names)
    return (f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="https://{BLOB_HOST}/" '
            f'ContainerName="{container}"><Prefix>{escape(prefix)}</Prefix><Blobs>{items}</Blobs>'
            "<NextMarker /></EnumerationResults>").encode("utf-8")
