"""The engine under every backend that starts the job's processes itself (local, Slurm): command
rendering, launcher layouts, the run folder, the code copy, and the hardened readers and writers of
what a run leaves. It stands below :mod:`amldist.backends` and never imports a backend."""
