"""Slurm's client programs (``sbatch``, ``squeue``, ``scontrol``, ``sacct``, ``scancel``), each called
one way, with one clear line when it is missing or refuses.

The cluster is whichever these programs reach: the machine's ``slurm.conf``, or the one ``SLURM_CONF``
names (how amldist is pointed at another cluster, and how the tests reach theirs).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from amldist.errors import UserError

TIMEOUT = 60  # seconds; slurmctld answers in milliseconds when it is up

# squeue's compact states -> Azure ML's words (amldist.backends.base.STATUSES)
QUEUE_STATES = {
    "PD": "Queued", "CF": "Preparing", "R": "Running", "CG": "Finalizing", "S": "Paused", "ST": "Paused",
    "RQ": "Queued", "RF": "Queued", "RS": "Queued", "RH": "Queued", "RD": "Queued", "SI": "Running",
    "SO": "Finalizing", "RV": "Running",
}
# scontrol's / sacct's final states -> Azure ML's words, and why when it is not the command's own end
FINAL_STATES = {
    "COMPLETED": ("Completed", None), "FAILED": ("Failed", None), "CANCELLED": ("Canceled", None),
    "TIMEOUT": ("Failed", "the job ran past its time limit (--time / limits.timeout)"),
    "NODE_FAIL": ("Failed", "a node of the job failed"), "BOOT_FAIL": ("Failed", "a node of the job failed to boot"),
    "OUT_OF_MEMORY": ("Failed", "a task ran out of memory"), "DEADLINE": ("Failed", "the job missed its deadline"),
    "PREEMPTED": ("Failed", "the job was preempted"),
}


def tool(name: str) -> str:
    """The path of Slurm's program ``name``; a UserError naming what to do when it is not on PATH."""
    found = shutil.which(name)
    if found is None:
        raise UserError(f"{name} was not found on PATH: --slurm needs Slurm's client programs on this machine",
                        hint="run amldist on a login node of the cluster, or install the client "
                        "(apt-get install slurm-wlm) and set SLURM_CONF to the cluster's slurm.conf")
    return found


def call(name: str, *args: str, env=None, check: bool = True) -> subprocess.CompletedProcess:
    """Run Slurm's ``name`` with ``args``; with ``check`` a refusal is a UserError with Slurm's own words."""
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):  # Slurm itself retries a missing file for 60 s before saying so
        no_cluster(name, "cannot stat file")
    try:
        done = subprocess.run([tool(name), *args], capture_output=True, text=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise UserError(f"{name} did not answer in {TIMEOUT} s: is slurmctld up?",
                        hint="sinfo shows whether the cluster answers") from None
    if check and done.returncode != 0:
        no_cluster(name, done.stderr)
        raise UserError(f"{name} failed: {first_error(done.stderr) or f'exit code {done.returncode}'}")
    return done


# Slurm's words when it reaches no controller, and what they mean to a user: no cluster is configured here
NO_CLUSTER = (
    ("Could not establish a configuration source", "this machine has no slurm.conf and no DNS record names a "
     "controller"),
    ("cannot stat file", "SLURM_CONF names a file that does not exist"),
    ("Unable to process configuration file", "the slurm.conf it read is not a valid configuration"),
    ("Unable to contact slurm controller", "the controller its slurm.conf names does not answer"),
)


def no_cluster(name: str, stderr: str) -> None:
    """A UserError saying that no cluster is configured or reachable, when Slurm's own words say so: then
    --partition/--time are not the problem, where amldist points Slurm is."""
    why = next((meaning for words, meaning in NO_CLUSTER if words.lower() in stderr.lower()), None)
    if why is not None:
        raise UserError(f"{name} reached no Slurm cluster: {why}", exit_code=2,
                        hint="run amldist on a login node of the cluster, or set SLURM_CONF to the cluster's "
                        "slurm.conf (with munge's key installed); sinfo shows whether a controller answers")


def first_error(text: str) -> str:
    """Slurm's message without its ``sbatch: error:`` prefix (the first line that says something)."""
    for line in text.splitlines():
        words = line.split("error:", 1)[-1].strip() if "error:" in line else line.strip()
        if words:
            return words
    return ""


def submit(script_path: str, env: dict, extra=()) -> str:
    """``sbatch --parsable [EXTRA] SCRIPT``: the job id; a refusal is one line naming the reason."""
    done = call("sbatch", "--parsable", *extra, script_path, env=env, check=False)
    if done.returncode != 0:
        no_cluster("sbatch", done.stderr)
        reason = first_error(done.stderr) or f"exit code {done.returncode}"
        hint = ("sinfo lists the partitions" if "partition" in reason.lower() else
                "sacctmgr show assoc lists your accounts" if "account" in reason.lower() else
                "check --partition/--account/--time and the job's size against sinfo")
        raise UserError(f"Slurm refused the job: {reason}", hint=hint, exit_code=1)
    return done.stdout.strip().split(";")[0]


def queue_state(job_id: str) -> str | None:
    """The job's compact state in ``squeue`` (PD, R, CG...), None when it has left the queue."""
    done = call("squeue", "-h", "-j", job_id, "-o", "%t", check=False)
    state = done.stdout.strip().splitlines()
    return state[0].strip() if done.returncode == 0 and state else None


def final_state(job_id: str) -> str | None:
    """The job's end state from ``scontrol`` (while slurmctld keeps it, MinJobAge) or ``sacct`` (with
    accounting); None when neither knows it."""
    done = call("scontrol", "show", "job", job_id, "-o", check=False)
    for word in done.stdout.split() if done.returncode == 0 else ():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    if shutil.which("sacct"):
        done = call("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State", check=False)
        lines = done.stdout.split()
        if done.returncode == 0 and lines:
            return lines[0].split()[0]  # "CANCELLED by 0" -> CANCELLED
    return None


def cancel(job_id: str) -> None:
    call("scancel", job_id)


def environment(base: dict, added: dict) -> dict:
    """sbatch's environment: the cleaned shell's, the plan's variables, and where the cluster is."""
    kept = {k: os.environ[k] for k in ("SLURM_CONF",) if k in os.environ}
    return {**base, **added, **kept}
