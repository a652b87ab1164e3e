"""The adapter to azure-ai-ml: a spec's SDK entity and REST body, and the code snapshot that is uploaded.

It sits above the model (``amldist.model`` names no Azure type and imports nothing of azure-ai-ml);
azure-ai-ml itself is imported inside the functions only, so importing this package stays cheap.
``amldist.to_azure(job)`` is the public door (it was ``job.to_azure()`` while the model knew Azure).
"""

from __future__ import annotations

from amldist.azure_sdk.entities import rest_body, to_azure

__all__ = ["rest_body", "to_azure"]
