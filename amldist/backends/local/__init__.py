"""The local backend: a job run on this machine with Azure ML's launcher environment (see ``plan``)."""
