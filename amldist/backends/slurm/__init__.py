"""The ``slurm`` backend: ``amldist submit job.yml --slurm`` runs the same job on a Slurm cluster
(:mod:`amldist.backends.slurm.backend`)."""
