"""The Azure ML backend: a job sent to a workspace through azure-ai-ml (see ``backend``)."""
