"""Slurm's client programs (``sbatch``, ``squeue``, ``scontrol``, ``sacct``, ``scancel``), each called
one way, with one clear line when it is missing or refuses.

The cluster is whichever these programs reach: the machine's ``slurm.conf``, or the one ``SLURM_CONF``
names (how amldist is pointed at another cluster, and how the tests reach theirs).

A job id is data: only what ``sbatch --parsable`` answered, checked to be one (digits, an array suffix
at most, :func:`is_job_id`), ever reaches ``squeue``, ``scontrol``, ``sacct`` or ``scancel``, always
glued to its option (``--jobs=ID``) or after ``--``. And an id is used for a run only when Slurm itself
says the job is that run's: every job amldist submits carries the run's marker as its ``--comment``
(:func:`run_marker`, made from the run folder's path, never read from a file), and a job whose comment
is another is not the run's, whatever its id (so an id rewritten in ``slurm.json`` names nothing).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess

from amldist.errors import UserError

TIMEOUT = 60  # seconds; slurmctld answers in milliseconds when it is up
CARRIED = "AMLDIST_V_"  # the prefix the job's variables travel under (environment)
JOB_ID = re.compile(r"^[0-9]{1,12}(_[0-9]{1,9})?\Z")  # \Z: "$" would let a final newline in

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


def is_job_id(text) -> bool:
    """Whether ``text`` is a Slurm job id as ``sbatch --parsable`` gives it: digits, an array suffix at most."""
    return isinstance(text, str) and bool(JOB_ID.match(text))


def run_marker(run_dir: str) -> str:
    """The comment every Slurm job of the run in ``run_dir`` carries: a digest of the run folder's path
    (its parent resolved, so another spelling of the same folder gives the same marker)."""
    where = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(run_dir))), os.path.basename(run_dir))
    return "amldist-run-" + hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def submit(script_path: str, env: dict, extra=(), cwd: str | None = None) -> str:
    """``sbatch --parsable [EXTRA] SCRIPT`` run in ``cwd``: the job id; a refusal is one line naming the reason."""
    try:
        done = subprocess.run([tool("sbatch"), "--parsable", *extra, script_path], capture_output=True, text=True,
                              env=env, timeout=TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise UserError(f"sbatch did not answer in {TIMEOUT} s: is slurmctld up?",
                        hint="sinfo shows whether the cluster answers") from None
    if done.returncode != 0:
        no_cluster("sbatch", done.stderr)
        reason = first_error(done.stderr) or f"exit code {done.returncode}"
        hint = ("sinfo lists the partitions" if "partition" in reason.lower() else
                "sacctmgr show assoc lists your accounts" if "account" in reason.lower() else
                "check --partition/--account/--time and the job's size against sinfo")
        raise UserError(f"Slurm refused the job: {reason}", hint=hint, exit_code=1)
    job_id = done.stdout.strip().split(";")[0]
    if not is_job_id(job_id):
        raise UserError(f"sbatch answered {done.stdout.strip()[:60]!r}, not a job id", exit_code=1)
    return job_id


def queue_state(job_id: str, marker: str) -> str | None:
    """The run's job's compact state in ``squeue`` (PD, R, CG...); None when it has left the queue, or when
    the job of that id is not the run's (its comment is not ``marker``)."""
    if not is_job_id(job_id):
        return None
    done = call("squeue", "-h", f"--jobs={job_id}", "-o", "%t|%k", check=False)
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        state, _, comment = line.strip().partition("|")
        if comment == marker:
            return state
    return None


def final_state(job_id: str, marker: str, name: str) -> str | None:
    """The run's job's end state from ``scontrol`` (while slurmctld keeps it, MinJobAge) or ``sacct`` (with
    accounting); None when neither knows it, or when the job of that id is not the run's."""
    if not is_job_id(job_id):
        return None
    done = call("scontrol", "show", "job", job_id, "-o", check=False)
    words = done.stdout.split() if done.returncode == 0 else []
    if words:
        fields = dict(w.split("=", 1) for w in words if "=" in w)
        return fields.get("JobState") if fields.get("Comment") == marker else None
    if shutil.which("sacct"):  # accounting keeps the name always, the comment only with job_comment stored
        done = call("sacct", "-n", "-X", "-P", f"--jobs={job_id}", "-o", "State,JobName,Comment", check=False)
        for line in done.stdout.splitlines() if done.returncode == 0 else ():
            state, job_name, comment = (line.split("|") + ["", ""])[:3]
            if job_name == name and comment in ("", marker) and state:
                return state.split()[0]  # "CANCELLED by 0" -> CANCELLED
    return None


def jobs_of(marker: str) -> list[str]:
    """The ids of this user's queued or running jobs that carry ``marker`` (a run whose id was never
    recorded: its submission was interrupted)."""
    done = call("squeue", "-h", "--me", "-o", "%i|%k", check=False)
    found = []
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        job_id, _, comment = line.strip().partition("|")
        if comment == marker and is_job_id(job_id):
            found.append(job_id)
    return found


def cancel(job_id: str, marker: str) -> bool:
    """``scancel`` the run's job ``job_id``, only when Slurm says it carries ``marker``; whether it was sent."""
    if queue_state(job_id, marker) is None:
        return False
    call("scancel", "--", job_id)
    return True


def environment(base: dict, added: dict) -> dict:
    """sbatch's own environment: the cleaned shell's and where the cluster is. The job's variables (the
    spec's ``environment_variables``, the inputs' values, PATH) travel as ``AMLDIST_V_<NAME>``, names sbatch
    and srun never read, and become ``NAME`` inside each task (:mod:`amldist.backends.slurm.script`): an
    ``SBATCH_TIMELIMIT`` in a spec can never change the job's options."""
    kept = {k: os.environ[k] for k in ("SLURM_CONF",) if k in os.environ}
    carried = {f"{CARRIED}{k}": v for k, v in added.items()}
    return {**{k: v for k, v in base.items() if not k.startswith(CARRIED)}, **carried, **kept}


UNUSABLE = ("down", "drain", "fail", "maint", "futr", "inval", "unk")  # sinfo's states of nodes that run nothing


def usable_nodes(partition: str | None) -> list[str]:
    """The names of the nodes of ``partition`` (all the cluster's when None) that can run a job now (not down,
    drained, failed...), from ``sinfo``; [] when sinfo does not answer."""
    args = ["-h", "-N", "-o", "%N %t"] + ([f"--partition={partition}"] if partition else [])
    done = call("sinfo", *args, check=False)
    found: list[str] = []
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        name, _, state = line.strip().partition(" ")
        if name and name not in found and not state.lower().startswith(UNUSABLE):
            found.append(name)
    return found
