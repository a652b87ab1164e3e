"""``amldist job diagnose``: from what a failed or stalled job left (every rank's log, exit code and
end time) to the first rank that failed, its cause and the spec field to change.

- ``signatures``: the known failures, one pure function each, in one ordered table;
- ``collectives``: which rank broke the job, from what every rank's collectives were (the Flight Recorder's
  dumps the runtime shim leaves, or NCCL's watchdog lines): a mismatch, a rank behind or ahead;
- ``analysis``: that first, else which rank failed first (by time), and why: :func:`analysis.diagnose`;
- ``logs``: log tails, timestamps, Open MPI's report, the job's context (VM size, variables);
- ``local``: a local run folder (a pipeline: its failed step); ``azure``: an Azure ML job's logs
  through ``MLClient.jobs.download``; ``report``: text and JSON.
"""
