"""The injection oracle (issue 24): generated commands with hostile values, rendered by amldist's own
renderer, and every command it accepts run in real bash and real dash.

Each command is a prefix, a wrapper, a sink and a suffix (:data:`PREFIXES`, :data:`WRAPPERS`,
:data:`SINKS`, :data:`SUFFIXES`: the payload classes of issue 24 and more), the placeholder in one
of several quotings, and a hostile value (:func:`hostile`: every value holds a payload that creates
the file ``S`` when any shell reads it as code). ``PATH`` starts with a folder of fake programs, so
that nothing real runs: the programs on amldist's list (python, torchrun, mpirun...) record their
argv and do nothing else; programs that might run their arguments (tmux, gdb -ex shell, prterun,
ssh, sudo...) are modelled at their worst, ``eval "$*"``. Shells, ``env``, ``timeout``, ``xargs``
and the rest are real.

The properties: no accepted command creates ``S``, in bash or in dash; where the placeholder sits in
quotes as an argument of a listed program, that program receives the value as one argument, exactly.
A refusal must be one line naming the input. Fast tier: a few hundred commands in the default suite;
long tier (``--attack-long``): at least 100,000 commands.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from amldist.engine.command import render
from amldist.errors import UserError
from amldist.rules import placeholders, shell_command, shell_values

SHELLS = [path for path in (shutil.which("bash"), shutil.which("dash")) if path]
V = "${{inputs.v}}"
RECORDERS = ["python", "python3", "python3.11", "torchrun", "deepspeed", "accelerate", "mpirun", "mpiexec", "srun"]
WORST = ["tmux", "gdb", "prterun", "ssh", "sudo", "su", "doas", "parallel", "watch", "setpriv", "firejail",
         "runuser", "script", "systemd-run", "strace", "busybox", "screen", "expect", "perl", "node", "ruby", "awk"]
NOOPS = ["pip", "pip3", "conda", "git", "wget", "curl", "nvidia-smi"]  # listed bystanders: nothing to fetch
PAYLOADS = ["; touch S", "$(touch S)", "`touch S`", "' ; touch S ; '", '" ; touch S ; "', "\ntouch S\n", "| touch S",
            "&& touch S", "${x:=$(touch S)}", "x; touch S #", "$(touch${IFS}S)", "\\\"; touch S; #", "touch S &",
            "\"`touch S`\"", "'$(touch S)'", ">(touch S)", "<(touch S)", "a\nEOF\ntouch S\n", "';touch S;'",
            "$(IFS=_;x=touch_S;$x)", "\\$(touch S)", "\"; touch S; \"", "-c 'touch S'", "--no-python sh -c 'touch S'",
            "-e 'touch S'", "$'\\x3b'touch S", "{touch,S}", "x\n:;touch S", "$(touch S)\\", "\\'; touch S; '\\"]
JUNK = "ab $`'\"\\;&|<>(){}*?[]#\n\t~!=-"
QUOTINGS = {"bare": "@@", "double": '"@@"', "single": "'@@'", "ansi": "$'@@'", "joined": "--x=@@",
            "joined-double": '--x="@@"', "mixed": 'a"@@"b', "doubled": '"@@" @@'}
# (template, whether the program that receives @@ records its argv)
SINKS = [
    ("python t.py --x {q}", True), ("python -u t.py {q}", True), ("python3 -m pkg.mod {q}", True),
    ("python3.11 -B -W ignore t.py a {q}", True), ("/usr/bin/python3 t.py {q}", False),
    ("torchrun --nproc_per_node 2 t.py {q}", True), ("torchrun --standalone --nnodes=1 t.py {q}", True),
    ("python -m torch.distributed.run --nproc-per-node 2 t.py {q}", True), ("deepspeed --num_gpus 2 t.py {q}", True),
    ("accelerate launch --num_processes 2 t.py {q}", True), ("mpirun -np 2 python t.py {q}", True),
    ("mpirun -np 2 --mca btl tcp ./t.py {q}", True), ("srun -n 2 python t.py {q}", True),
    ("srun --mpi=pmix torchrun t.py {q}", True), ("python -m mpi4py t.py {q}", True),
    ("torchrun --nproc_per_node {q} t.py", True), ("python t.py > {q}", False), ("echo {q}", False),
    ("cat {q} 2>/dev/null", False), ("python -c 'import sys' {q}", True), ("python -c {q}", True),
    ("python {q} t.py", True), ("python -m {q}", True), ("torchrun --no-python sh -c {q}", False),
    ("torchrun --no_py sh -c {q}", False), ("mpirun -np 2 sh -c {q}", False), ("srun --prolog=x python t.py {q}", True),
    ("bash -c {q}", False), ("sh -c {q}", False), ("eval {q}", False), ("{q}", False), ("trap {q} EXIT", False),
    ("bash <<< {q}", False), ("echo {q} | sh", False), ("echo {q} |& sh", False), ("echo {q} > >(sh)", False),
    ("exec 0<<<{q}; sh", False), ("coproc sh; echo {q} >&${{COPROC[1]}}", False),
    ("for x in {q}; do eval \"$x\"; done", False), ("echo {q}; eval \"$_\"", False), ("python t.py {q}; eval $_", True),
    ("{{sh,-c}} {q}", False), ("1f() {{ eval \"$1\"; }}; 1f {q}", False),
    ("shopt -s expand_aliases; BASH_ALIASES[p]=eval; p {q}", False), ("hash -p /bin/sh python; python -c {q}", True),
    ("X={q}; echo ${{X@P}}", False), ("compgen -W {q}", False), ("mapfile -C eval -c 1 <<< {q}", False),
    ("f() {{ local -a \"a=({q})\"; }}; f", False), ("setpriv sh -c {q}", False), ("prterun sh -c {q}", False),
    ("tmux new -d {q}", False), ("gdb -ex \"shell {q}\"", False), ("cp /bin/sh ./python; ./python -c {q}", False),
    ("ln -sf /bin/sh python; ./python t.py {q}", False), ("x=$(case a in a) echo {q};; esac); eval \"$x\"", False),
    ("cat <<'EOF' | sh\n{q}\nEOF", False), ("cat <<EOF\n{q}\nEOF", False), ("python - <<EOF\n{q}\nEOF", True),
    ("N={q}; echo $((N+1))", False), ("[[ {q} ]]", False), ("declare -i n={q}", False), ("let n={q}", False),
    ("printf -v {q} x", False), ("read -r x <<< {q}; eval \"$x\"", False), ("set -- {q}; eval \"$@\"", False),
    ("PS4={q}; set -x; :", False), ("python t.py `echo {q}`", True), ("python t.py $(echo {q})", True),
    ("python t.py \"$(echo {q})\"", True), ("echo ${{x:-{q}}}", False), ("python t.py {q} | sh", True),
    ("python t.py {q} | python t.py", True), ("python t.py {q} && python t.py || echo no", True),
    ("python t.py {q} &", True), ("python t.py {q} # c", True), ("python t.py # {q}", False),
    ("python t.py {q} 2>&1 | tee log", True), ("python t.py \\\n {q}", True),
    ("find . -maxdepth 0 -exec sh -c {q} \\;", False),
    ("echo {q} | xargs sh -c", False), ("xargs -0 sh -c < <(printf %s {q})", False), ("env -S {q}", False),
    ("python t.py {q} > >(sh)", True), ("time python t.py {q}", True), ("! python t.py {q}", True),
    ("{{ python t.py {q}; }}", True), ("(python t.py {q})", True), ("if python t.py {q}; then :; fi", True),
    ("case {q} in *) python t.py;; esac", False), ("python t.py <<< {q}", True), ("cd {q} && python t.py", True),
    ("tar xf a.tar --to-command={q}", False), ("git -c core.pager={q} log", False), ("PATH={q} python t.py", True),
]
WRAPPERS = ["", "", "", "timeout 20 ", "env ", "nice -n 1 ", "nohup ", "command ", "exec ", "setsid ", "stdbuf -oL ",
            "setpriv ", "prterun ", "builtin ", "xargs -0 ", "flock /tmp/oracle.lock ", "busybox ", "strace -f ",
            "sudo -u nobody ", "ssh host ", "X=1 ", "PATH=.:$PATH "]
PREFIXES = ["", "", "", "cd . && ", "X=1; ", "true; ", "set -e; ", "export A=1; ", "echo hi | ",
            "shopt -s expand_aliases; alias python=eval; ", "BASH_ALIASES[python]=eval; ", "hash -p /bin/sh python; ",
            "python() { eval \"$*\"; }; ", "exec 0<<<\"touch S\"; ", "trap 'eval \"$_\"' DEBUG; ", "set -- 'touch S'; ",
            "enable -n echo; ", "IFS=x; ", "# hi\n", "pip install -q x && ", "mkdir -p o && "]
SUFFIXES = ["", "", "", " | cat", " |& sh", " | sh", " > >(sh)", "; eval \"$_\"", " && echo ok", " 2>&1", " # c",
            "; sh -c \"$_\"", " | xargs sh -c", "\n", " &", " > out.txt", " | python t.py"]


# Commands near the grammar's edge: listed programs, prefixes and suffixes the grammar accepts or nearly does
NEAR_PREFIXES = ["", "cd . && ", "X=1 ", "export A=1; ", "true; ", "pip install -q x && ", "mkdir -p o && ", "# hi\n",
                 "echo a | ", "A=$HOME ", "A=\"$HOME\" B='x' ", "sleep 0; ", "echo $'a\\'b' && "]
NEAR_SUFFIXES = ["", " | cat", " && echo ok", " 2>&1", " # c", "\n", " &", " > out.txt", " | python t.py", " || true",
                 "; echo $HOME", " | tee log", " 2>/dev/null >&2", " >> o.txt", " < /dev/null", " \\\n --y 1",
                 " \"$HOME\" ${HOME}x", " '$(x)' \"\\$(x)\"", " a\\;b"]
SPELLINGS = {"python ": ["python ", "\"python\" ", "'python' ", "python3.11 ", "p\\ython ", "py\"th\"on "]}


NEAR_SHARE = [0.5]  # the long tier lowers it: each accepted command runs twice


def hostile(rng: random.Random) -> str:
    """A value that holds a payload creating S, with junk around it; never benign."""
    payload = rng.choice(PAYLOADS)
    junk = lambda: "".join(rng.choice(JUNK) for _ in range(rng.randrange(4)))
    return junk() + payload + junk()


def generate(rng: random.Random) -> tuple[str, str, str, bool]:
    """(command, value, quoting, expects argv): one generated case; half of them near the grammar's edge."""
    quoting = rng.choice(sorted(QUOTINGS))
    if rng.random() < NEAR_SHARE[0]:
        template, records = rng.choice([sink for sink in SINKS[:16] if sink[1]])
        for plain, spellings in SPELLINGS.items():
            if template.startswith(plain):
                template = rng.choice(spellings) + template[len(plain):]
        placed = template.format(q=QUOTINGS[quoting]).replace("@@", V)
        return rng.choice(NEAR_PREFIXES) + placed + rng.choice(NEAR_SUFFIXES), hostile(rng), quoting, records
    template, records = rng.choice(SINKS)
    placed = template.format(q=QUOTINGS[quoting]).replace("@@", V)
    command = rng.choice(PREFIXES) + rng.choice(WRAPPERS) + placed + rng.choice(SUFFIXES)
    return command, hostile(rng), quoting, records


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bin")
    for name in RECORDERS:
        stub = folder / name
        stub.write_text('#!/bin/sh\n{ printf "%s\\0" "${0##*/}" "$@"; printf "\\1"; } >> "$ORACLE_LOG"\n')
        stub.chmod(0o755)
    for name in WORST:
        stub = folder / name
        stub.write_text('#!/bin/sh\neval "$*"\n')
        stub.chmod(0o755)
    for name in NOOPS:
        stub = folder / name
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    return str(folder)


def calls(log: str) -> list[list[str]]:
    """The argv of each recorded call (the program's name first)."""
    if not os.path.exists(log):
        return []
    with open(log, encoding="utf-8", errors="surrogateescape") as fh:
        return [record.split("\0")[:-1] for record in fh.read().split("\1") if record]


def attempt(command: str, value: str):
    """amldist's rendering of one case: (rendered, failures); rendered None when refused."""
    try:
        return render(command, {"inputs.v": value}), []
    except UserError as exc:
        message = str(exc)
        if "inputs.v" not in message or "\n" in message:
            return None, [(command, value, "a refusal that is not one line naming the input", message)]
        return None, []


def check_run(case, rendered, shell: str, cwd: str) -> list:
    """The failures of one run of an accepted case, from what it left in ``cwd``."""
    command, value, quoting, records = case
    failures = []
    if os.path.exists(os.path.join(cwd, "S")):
        failures.append((command, value, shell, "the value ran"))
    if records and quoting in ("double", "single", "joined-double") and _proven_argument(command):
        expected = value if quoting != "joined-double" else "--x=" + value
        recorded = calls(os.path.join(cwd, ".argv"))
        if not any(expected in argv[1:] for argv in recorded):
            failures.append((command, value, shell, f"no listed program got the value as one argument: {recorded}"))
    return failures


def run_case(number, case, shells, fake_bin, root) -> tuple[str, list]:
    """Render one case; run it with ``SHELL -c`` in every shell when accepted. Returns (outcome, failures)."""
    command, value, _, _ = case
    rendered, failures = attempt(command, value)
    if rendered is None:
        return "refused", failures
    assert not shell_values.is_benign(value)
    for shell in shells:
        cwd = os.path.join(root, f"{number}-{os.path.basename(shell)}")
        os.makedirs(cwd)
        env = {"PATH": fake_bin + os.pathsep + os.environ["PATH"], "ORACLE_LOG": os.path.join(cwd, ".argv"),
               "HOME": cwd, **rendered.env}
        try:  # the command exactly as a run gives it to the shell; `wait` for what it starts in the background
            subprocess.run([shell, "-c", rendered.command + "\nwait"], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
        except subprocess.TimeoutExpired:
            failures.append((command, value, shell, "timed out"))
        failures += check_run(case, rendered, shell, cwd)
        shutil.rmtree(cwd, ignore_errors=True)
    return "ran", failures


def run_batch(batch, shell: str, fake_bin: str, root: str) -> list:
    """The long tier's way to run many accepted cases: one shell process runs each case's command in
    a subshell of its own (its own folder, HOME, log and value), as ``SHELL -c`` would parse it (the
    grammar has no construct whose meaning differs between the two). A batch that does not reach its
    end is run again case by case."""
    lines = []
    for number, case, rendered in batch:
        cwd = os.path.join(root, f"{number}-{os.path.basename(shell)}")
        os.makedirs(cwd)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in
                           {"HOME": cwd, "ORACLE_LOG": os.path.join(cwd, ".argv"), **rendered.env}.items())
        lines.append(f"cd {shlex.quote(cwd)} && (export {exports}\n{rendered.command}\nwait\n)"
                     " </dev/null >/dev/null 2>&1")
    lines.append("echo ORACLE_DONE")
    try:
        done = subprocess.run([shell, "-c", "\n".join(lines)], env={"PATH": fake_bin + os.pathsep + os.environ["PATH"]},
                              cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        finished = "ORACLE_DONE" in done.stdout
    except subprocess.TimeoutExpired:
        finished = False
    failures = []
    for number, case, rendered in batch:
        cwd = os.path.join(root, f"{number}-{os.path.basename(shell)}")
        if finished or os.path.exists(os.path.join(cwd, "S")):
            failures += check_run(case, rendered, shell, cwd)
        shutil.rmtree(cwd, ignore_errors=True)
    if not finished:  # a case ended (or hung) the shell: each one on its own
        for number, case, _ in batch:
            failures += run_case(f"again-{number}", case, [shell], fake_bin, root)[1]
    return failures


def _proven_argument(command: str) -> bool:
    refs = placeholders.references(command, placeholders.V2)
    found = shell_command.contexts(command, [(r.start, r.end) for r in refs], quoting=False)
    return bool(found) and all(context.proven_safe() for context in found.values())


def run_oracle(count: int, seed: int, fake_bin, root, *, batched: bool = False) -> dict:
    rng = random.Random(seed)
    tally = {"commands": 0, "refused": 0, "ran": 0, "failures": []}
    accepted = []
    for number in range(count):
        case = generate(rng)
        tally["commands"] += 1
        if not batched:
            outcome, failures = run_case(number, case, SHELLS, fake_bin, root)
            tally[outcome] += 1
            tally["failures"] += failures
            continue
        rendered, failures = attempt(case[0], case[1])
        tally["failures"] += failures
        tally["refused" if rendered is None else "ran"] += 1
        if rendered is not None:
            accepted.append((number, case, rendered))
    batches = [accepted[i:i + 200] for i in range(0, len(accepted), 200)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        for failures in pool.map(lambda job: run_batch(job[0], job[1], fake_bin, root),
                                 [(batch, shell) for batch in batches for shell in SHELLS]):
            tally["failures"] += failures
    return tally


def test_no_accepted_command_runs_a_hostile_value_in_bash_or_dash(tmp_path, fake_bin, attack_long):
    count = 100_000 if attack_long else 120
    NEAR_SHARE[0] = 0.25 if attack_long else 0.5
    tally = run_oracle(count, 20261127, fake_bin, str(tmp_path), batched=attack_long)
    print(f"oracle: {tally['commands']} commands, {tally['ran']} accepted and run in {len(SHELLS)} shells, "
          f"{tally['refused']} refused, {len(tally['failures'])} failures")
    assert tally["commands"] == count and tally["ran"] >= count // 8, tally  # the generator reaches the grammar
    assert not tally["failures"], tally["failures"][:10]


def test_the_oracle_can_fail_pasted_payloads_do_run(tmp_path, fake_bin):
    """The same generator, each value pasted as Azure ML pastes it: many commands run the payload."""
    rng = random.Random(7)
    ran = 0
    for number in range(60):
        command, value, _, _ = generate(rng)
        cwd = tmp_path / str(number)
        cwd.mkdir()
        subprocess.run([SHELLS[0], "-c", command.replace(V, value)], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=20, env={"PATH": fake_bin + os.pathsep + os.environ["PATH"],
                                                            "ORACLE_LOG": str(cwd / ".argv")})
        ran += (cwd / "S").exists()
    assert ran >= 10


def test_every_listed_sink_takes_a_hostile_value_as_one_argument(tmp_path, fake_bin):
    """Each sink on the list, double-quoted, gets every payload as exactly one argument (not refused)."""
    for number, (template, records) in enumerate(SINKS[:16]):
        command = template.format(q='"' + V + '"')
        for payload in PAYLOADS[:8]:
            outcome, failures = run_case(f"{number}-{PAYLOADS.index(payload)}", (command, payload, "double", records),
                                         SHELLS, fake_bin, str(tmp_path))
            assert outcome == "ran" and not failures, (command, payload, failures)
