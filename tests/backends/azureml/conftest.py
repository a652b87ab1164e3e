"""Fixtures for the Azure ML backend tests: a fake workspace, and no way out to the network."""

from __future__ import annotations

import socket

import pytest

import amldist.backends.azureml.backend as azureml_backend
from tests.backends.azureml.fake_azure import FakeAzure, FakeCredential

REAL_BACKEND = azureml_backend.AzureMLBackend  # taken before any test replaces it


def configured_backend(**defaults):
    """A subclass of the real AzureMLBackend whose constructor takes ``defaults`` (a fake credential, the
    fake transport): what a test puts where the registry loads the class from (it loads classes only)."""

    class Configured(REAL_BACKEND):
        def __init__(self, **settings):
            super().__init__(**{**defaults, **settings})

    return Configured


class NetworkBlocked(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Any socket connection fails the test (and is remembered, in case the SDK swallows the error)."""
    attempts: list = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise NetworkBlocked(f"a test tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert attempts == [], f"network connections attempted: {attempts}"


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No workspace from the caller's environment or folders: cwd is an empty temporary folder."""
    for name in ("AZUREML_ARM_SUBSCRIPTION", "AZUREML_ARM_RESOURCEGROUP", "AZUREML_ARM_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def fake_azure(monkeypatch, no_network, clean_env):
    """A FakeAzure wired into the real azure-ai-ml and azure-storage-blob clients.

    - ``MLClient`` gets it as ``transport=`` (azure-ai-ml passes its kwargs to every
      service client and to its own request pipeline);
    - azure-storage-blob clients are built by azure-ai-ml without our kwargs, so the
      default transport they would create (``RequestsTransport``) is replaced by it;
    - ``amldist.backends.azureml.backend.AzureMLBackend`` (what ``get_backend("azureml")``
      instantiates) is given the fake credential and transport.
    Run-history polling is made instant for --stream.
    """
    import azure.storage.blob._shared.base_client as blob_base
    from azure.ai.ml.operations._run_history_constants import RunHistoryConstants

    import amldist.backends.azureml.backend as azureml

    fake = FakeAzure()
    credential = FakeCredential()
    monkeypatch.setattr(blob_base, "RequestsTransport", lambda **kwargs: fake)
    monkeypatch.setattr(RunHistoryConstants, "_WAIT_COMPLETION_POLLING_INTERVAL_MIN", 0)
    monkeypatch.setattr(RunHistoryConstants, "_WAIT_COMPLETION_POLLING_INTERVAL_MAX", 0)
    monkeypatch.setattr(azureml, "AzureMLBackend", configured_backend(
        credential=credential, client_kwargs={"transport": fake}))
    fake.credential = credential
    yield fake
    assert fake.unexpected == [], f"requests the fake does not emulate: {[r.url for r in fake.unexpected]}"
