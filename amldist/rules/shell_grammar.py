"""The allow-list of the injection rule: where amldist can prove that the shell gives a value to a
program as literal argument text, whatever the value holds.

The proof covers only commands written in a small grammar that amldist reads completely:

- a **list**: simple commands joined by ``;``, ``&``, ``&&``, ``||``, ``|`` or a line break, with
  ``#`` comments; nothing else (no ``(...)``, ``{ ...; }``, ``if``/``for``/``while``/``case``, no
  functions, here-documents, here-strings, process substitutions, ``|&``, ``&>``, ``coproc``);
- a **simple command**: optional ``NAME=word`` prefixes without a value in them, the program, its
  words, and redirections ``<``, ``>``, ``>>``, ``>|`` to a word or ``N>&M`` / ``N<&M``;
- a **word**: plain characters (anything but blanks and ``|&;<>()$`\\"'{}``), ``\\x`` escapes,
  ``'...'``, ``"..."`` holding plain text, escapes, ``$NAME``/``${NAME}`` and
  placeholders, and unquoted ``$NAME``/``${NAME}``: no brace expansion, no ``$(...)``, backtick,
  arithmetic, special or positional parameter (``$_``, ``$1``, ``$@``) or ``${...}`` operator
  (``${X@P}`` evaluates its value); the program word is a literal without patterns;
- every simple command's **program is on the list** below (by its name, ``/usr/bin/python3.11``
  being ``python``), whatever it does with values, so no shell, evaluator, wrapper or unknown
  program is ever part of a proven command.

The list, and where each program takes a value (a placeholder anywhere else in a proven command,
its program word or options included, is not proven, and takes only benign values):

- ``python`` (any version): options ``-u -B -O -OO -E -s -S -I -b -q -d -v -R -P``, ``-W X``,
  ``-X X``, then a script, ``-m MODULE`` or ``-c CODE``: every word after the script or module
  is an argument; the code of ``-c`` is code (whatever program answers to ``python``, a copy of a
  shell included): benign values only, and ``validate`` warns. Without
  a script (``python``, ``python -``, ``python -i``) Python reads code from its input: not proven;
- ``torchrun`` and ``python -m torch.distributed.run``/``launch``, ``deepspeed`` (and
  ``python -m deepspeed.launcher.runner``), ``accelerate launch`` (and ``python -m
  accelerate.commands.launch``): their known options (a value there only in quotes, where argparse
  takes it as the option's value), then the script (or module): every later word is its argument.
  An option that makes them run a program that is not Python (``--no-python``), or one amldist does
  not know, takes the command out of the grammar; ``python -m mpi4py`` as python;
- ``mpirun``/``mpiexec`` and ``srun`` with their known options, running one of the above or a
  ``*.py`` script;
- ``echo cat ls mkdir cp mv rm touch head tail wc tee``: programs with no option that runs a program
  or reads code: every word is an argument;
- ``cd pwd export true sleep pip pip3 conda git wget curl tar unzip nvidia-smi``: may stand in a
  proven list, but a value among their words is not proven (``tar`` and ``git`` have options that
  run commands, ``cd`` chooses which script runs next).

Written by hand, in one linear pass: no maintained Python library parses shell with the quoting
of each offset (``shlex`` knows no ``$(...)``; bashlex is GPL). The property test in
``tests/attack/test_shell_oracle.py`` runs generated commands in real bash and dash against it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

UNQUOTED, DOUBLE, SINGLE, COMMENT = "unquoted", "double", "single", "comment"

ARGUMENT = "argument"  # a literal argument of a program on the list: any value
INTERPRETER_CODE = "interpreter-code"  # the code of python -c: code, whatever answers to `python`: benign only
PROGRAM = "program"  # the program or script position of a proven command: only a local path or a benign value
OUTSIDE = "outside"  # anywhere else: only benign values

ORDINARY = frozenset({"echo", "cat", "ls", "mkdir", "cp", "mv", "rm", "touch", "head", "tail", "wc", "tee"})
BYSTANDERS = frozenset({"cd", "pwd", "export", "true", "sleep", "pip", "pip3", "conda", "git", "wget", "curl", "tar",
                        "unzip", "nvidia-smi"})
_PYTHON = re.compile(r"python(?:[0-9]+(?:\.[0-9]+)*)?")
_PYTHON_FLAGS = re.compile(r"-(?:[uBOEsSIbqdvRP]+|OO)")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SCRIPT_PY = re.compile(r"[^*?\[\]]*\.py")


@dataclass(frozen=True)
class Launcher:
    """An argparse-style launcher: options with a value, flags, then the script and its arguments."""

    name: str
    values: frozenset
    flags: frozenset
    module_flags: frozenset = frozenset()
    quoted_values: bool = True  # argparse takes a quoted word after an option as its value


def _both(*names: str) -> frozenset:
    """``--nproc_per_node`` and ``--nproc-per-node``: torch accepts either spelling."""
    return frozenset({n for name in names for n in (name, name.replace("_", "-"))})


TORCHRUN = Launcher(
    "torchrun",
    _both("--nnodes", "--nproc_per_node", "--node_rank", "--master_addr", "--master_port", "--rdzv_backend",
          "--rdzv_endpoint", "--rdzv_id", "--rdzv_conf", "--max_restarts", "--monitor_interval", "--start_method",
          "--role", "--log_dir", "--redirects", "--tee", "--local_addr", "--logs_specs", "--local_ranks_filter",
          "--rdzv_timeout") | {"-r", "-t"},
    _both("--standalone", "--use_env", "--run_path"), _both("--module") | {"-m"})
DEEPSPEED = Launcher(
    "deepspeed",
    frozenset({"--num_gpus", "--num_nodes", "--hostfile", "-H", "--include", "-i", "--exclude", "-e", "--master_port",
               "--master_addr", "--launcher", "--node_rank", "--autotuning"}),
    frozenset({"--no_local_rank", "--force_multi", "--bind_cores_to_rank", "--enable_each_rank_log"}),
    frozenset({"--module"}))
ACCELERATE = Launcher(
    "accelerate launch",
    _both("--config_file", "--num_processes", "--num_machines", "--machine_rank", "--main_process_ip",
          "--main_process_port", "--mixed_precision", "--gpu_ids", "--dynamo_backend", "--rdzv_backend",
          "--deepspeed_config_file", "--zero_stage", "--gradient_accumulation_steps", "--num_cpu_threads_per_process"),
    _both("--multi_gpu", "--cpu", "--use_deepspeed", "--use_fsdp", "--debug", "--quiet") | {"-q"},
    _both("--module") | {"-m"})
MPIRUN = Launcher(
    "mpirun",
    frozenset({"-np", "-n", "--np", "-c", "-N", "--npernode", "-npernode", "-H", "-host", "--host", "-hostfile",
               "--hostfile", "-machinefile", "--machinefile", "--map-by", "-map-by", "--rank-by", "--bind-to",
               "-bind-to", "-x", "--wdir", "-wdir", "--output-filename", "-output-filename"}),
    frozenset({"--report-bindings", "--allow-run-as-root", "--oversubscribe", "--tag-output", "--timestamp-output",
               "-v", "--verbose", "--display-map", "-tag-output", "--display-allocation"}), quoted_values=False)
SRUN = Launcher(
    "srun",
    frozenset({"-n", "--ntasks", "-N", "--nodes", "-c", "--cpus-per-task", "--ntasks-per-node", "--gpus",
               "--gpus-per-task", "--gpus-per-node", "--gres", "--mpi", "--cpu-bind", "--mem", "-t", "--time", "-J",
               "--job-name", "-p", "--partition", "-o", "--output", "-e", "--error", "--nodelist", "-w"}),
    frozenset({"-l", "--label", "-K", "--kill-on-bad-exit", "--exclusive", "-u", "--unbuffered"}), quoted_values=False)
_MPI_ARITY_TWO = frozenset({"--mca", "-mca", "--gmca", "-gmca"})
LAUNCHER_MODULES = {"torch.distributed.run": TORCHRUN, "torch.distributed.launch": TORCHRUN,
                    "deepspeed.launcher.runner": DEEPSPEED, "accelerate.commands.launch": ACCELERATE}
PROGRAM_LAUNCHERS = {"torchrun": TORCHRUN, "deepspeed": DEEPSPEED, "mpirun": MPIRUN, "mpiexec": MPIRUN, "srun": SRUN}


@dataclass(frozen=True)
class Slot:
    """What the grammar proved for one placeholder: its quoting and role, ``via`` the program
    (``python train.py``) or the reason it is not proven."""

    quoting: str
    role: str
    via: str


class Outside(Exception):
    """The command leaves the grammar; the message says where (for the refusal's hint)."""


@dataclass(eq=False, slots=True)
class _Word:
    start: int
    parts: list  # literal text pieces
    holders: list  # [(placeholder start, quoting)]
    expands: bool = False  # holds $NAME: not a literal
    patterned: bool = False  # unquoted * ? [ : a pattern
    assignment: bool = False  # NAME=... with an unquoted NAME=
    target: bool = False  # a redirection's target

    first_holder: int = -1  # how many literal pieces come before the first placeholder

    def literal(self) -> str | None:
        if self.holders or self.expands:
            return None
        return "".join(self.parts)

    def literal_prefix(self) -> str:
        """The literal text before the first placeholder (``--lr=`` of ``--lr="${{inputs.lr}}"``)."""
        return "".join(self.parts[:self.first_holder])

    def hold(self, start: int, quoting: str) -> None:
        if not self.holders:
            self.first_holder = len(self.parts)
        self.holders.append((start, quoting))


_PLAIN = re.compile(r"[^\s|&;<>()$`\\\"'{}]+")
_NAME_EXPANSION = re.compile(r"\$(?:([A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+)|\{([A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+)\})")
_PATTERN = re.compile(r"[*?\[]")
_DOUBLE_PLAIN = re.compile(r'[^"\\$`]+')
_REDIRECT = re.compile(r"([0-9]*)(>>|>\||>&|<&|>|<)")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_OPERATOR = re.compile(r"&&|\|\||;|&|\||\n")
_BLANKS = re.compile(r"(?:[ \t]|\\\n)+")


class _Reader:
    """One pass over the text: the list's simple commands, each a list of words."""

    def __init__(self, text: str, spans: list[tuple[int, int]]):
        self.text = text
        self.spans = dict(spans)
        self.starts = sorted(self.spans)
        self.i = 0
        self.comments: list[int] = []  # placeholders inside comments

    def commands(self):
        """Each simple command's words in turn (a generator: a large command's words need not all live at once)."""
        text, words = self.text, []
        while True:
            blanks = _BLANKS.match(text, self.i)
            if blanks:
                self.i = blanks.end()
            if self.i >= len(text):
                break
            ch = text[self.i]
            if ch == "#":
                self._comment()
                continue
            operator = _OPERATOR.match(text, self.i)
            if operator:
                if text.startswith(("|&", ";;", "&>"), self.i):
                    raise Outside(f"{text[self.i:self.i + 2]!r}")
                if not words and operator.group() != "\n":
                    raise Outside(f"{operator.group()!r} without a command before it")
                if words:
                    yield words
                words = []
                self.i = operator.end()
                continue
            if ch in "<>" or (ch.isdigit() and _REDIRECT.match(text, self.i)):
                self._redirection(words)
                continue
            words.append(self._word())
        if words:
            yield words

    def _comment(self) -> None:
        end = self.text.find("\n", self.i)
        end = len(self.text) if end < 0 else end
        k = bisect.bisect_left(self.starts, self.i)
        while k < len(self.starts) and self.starts[k] < end:
            self.comments.append(self.starts[k])
            end = max(end, self.spans[self.starts[k]])
            k += 1
        self.i = end

    def _redirection(self, words: list) -> None:
        match = _REDIRECT.match(self.text, self.i)
        after = self.text[match.end():match.end() + 1]
        if after in ("<", "(") or (match.group(2) == "<" and after == ">") or self.text.startswith("<<", self.i):
            raise Outside("a here-document, here-string or process substitution")
        self.i = match.end()
        if match.group(2) in (">&", "<&"):
            target = re.compile(r"[0-9]+|-").match(self.text, self.i)
            if target is None:
                raise Outside(f"{match.group()!r} to anything but a file descriptor")
            self.i = target.end()
            return
        blanks = _BLANKS.match(self.text, self.i)
        if blanks:
            self.i = blanks.end()
        if self.i >= len(self.text) or self.text[self.i] in "\n;&|<>()":
            raise Outside(f"{match.group()!r} without a file")
        word = self._word()
        word.target = True
        words.append(word)

    def _word(self) -> _Word:
        text, spans = self.text, self.spans
        word = _Word(self.i, [], [])
        while self.i < len(text):
            i = self.i
            if i in spans:
                word.hold(i, UNQUOTED)
                self.i = spans[i]
                continue
            ch = text[i]
            plain = _PLAIN.match(text, i)
            if plain:
                end = self._before_placeholder(i, plain.end())
                piece = text[i:end]
                word.parts.append(piece)
                word.patterned = word.patterned or _PATTERN.search(piece) is not None
                if not word.parts[:-1] and not word.holders and _ASSIGNMENT.match(piece):
                    word.assignment = True
                self.i = end
            elif ch == "\\":
                if text.startswith("\\\n", i):
                    self.i += 2
                    continue
                if i + 1 in spans or i + 1 >= len(text):
                    raise Outside("a backslash before a placeholder")
                word.parts.append(text[i + 1])
                self.i += 2
            elif ch == "'":
                self._single(word)
            elif ch == '"':
                self._double(word)
            elif ch == "$":
                self._dollar(word)
            elif ch in " \t\n;&|<>":
                break
            else:
                raise Outside(f"{ch!r}" + (" (brace expansion)" if ch in "{}" else ""))
        if not word.parts and not word.holders and not word.expands and self.i == word.start:
            raise Outside(f"{text[self.i:self.i + 1]!r}")
        return word

    def _before_placeholder(self, i: int, end: int) -> int:
        k = bisect.bisect_right(self.starts, i)
        return min(end, self.starts[k]) if k < len(self.starts) else end

    def _holders_in(self, word: _Word, start: int, end: int, quoting: str) -> None:
        k = bisect.bisect_left(self.starts, start)
        while k < len(self.starts) and self.starts[k] < end:
            word.hold(self.starts[k], quoting)
            k += 1

    def _single(self, word: _Word) -> None:
        close = self.text.find("'", self.i + 1)
        if close < 0:
            raise Outside("an unclosed '")
        self._holders_in(word, self.i + 1, close, SINGLE)
        word.parts.append(self.text[self.i + 1:close])
        self.i = close + 1

    def _dollar(self, word: _Word) -> None:
        text, i = self.text, self.i
        if text.startswith("$'", i):
            raise Outside("$'...' (bash reads it as quotes, dash as $ and '...')")
        name = _NAME_EXPANSION.match(text, i)
        if name:
            word.expands = True
            self.i = name.end()
            return
        following = text[i + 1:i + 2]
        if following == "" or following in " \t\n;&|<>":
            word.parts.append("$")  # a lone $ is literal
            self.i += 1
            return
        raise Outside(f"the expansion {text[i:i + 3]!r}")

    def _double(self, word: _Word) -> None:
        text, spans = self.text, self.spans
        self.i += 1
        while True:
            i = self.i
            if i >= len(text):
                raise Outside('an unclosed "')
            if i in spans:
                word.hold(i, DOUBLE)
                self.i = spans[i]
                continue
            ch = text[i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\":
                if i + 1 in spans or i + 1 >= len(text):
                    raise Outside("a backslash before a placeholder")
                nxt = text[i + 1]
                word.parts.append(nxt if nxt in '"\\$`' else ("" if nxt == "\n" else "\\" + nxt))
                self.i += 2
            elif ch == "$":
                name = _NAME_EXPANSION.match(text, i)
                if name:
                    word.expands = True
                    self.i = name.end()
                elif text[i + 1:i + 2] in ('"', " ", "\t", "\n"):
                    word.parts.append("$")
                    self.i += 1
                else:
                    raise Outside(f"the expansion {text[i:i + 3]!r}")
            elif ch == "`":
                raise Outside("a backtick")
            else:
                end = self._before_placeholder(i, _DOUBLE_PLAIN.match(text, i).end())
                word.parts.append(text[i:end])
                self.i = end


def analyse(text: str, spans: list[tuple[int, int]]) -> dict[int, Slot] | str:
    """Each placeholder's :class:`Slot` by start offset, or, for a command outside the grammar,
    the reason (``'|&'``, ``a here-document``, ``bash is not on the list``)."""
    reader = _Reader(text, spans)
    slots: dict[int, Slot] = {}
    try:
        for words in reader.commands():
            _command(words, slots)
    except Outside as exc:
        return str(exc)
    slots.update((start, Slot(COMMENT, ARGUMENT, "a comment")) for start in reader.comments)
    return slots


def _command(words: list[_Word], slots: dict) -> None:
    """The slots of one simple command's placeholders (raises Outside)."""
    targets = [w for w in words if w.target]
    words = [w for w in words if not w.target]
    k = 0
    while k < len(words) and words[k].assignment:
        if words[k].holders:
            _set(slots, [words[k]], OUTSIDE, "an assignment, whose variable may choose what runs")
        k += 1
    if k == len(words):
        _set(slots, targets, ARGUMENT, "a redirection")
        return
    program = words[k].literal()
    if program is None or words[k].patterned:
        raise Outside("a program that is not a literal word")
    name = program.rsplit("/", 1)[-1]
    _set(slots, targets, ARGUMENT, f"a redirection of {name}")
    _program(name, words, k, slots)


def _program(name: str, words: list[_Word], k: int, slots: dict) -> None:
    if _PYTHON.fullmatch(name):
        _python(words, k + 1, slots, name)
    elif name in PROGRAM_LAUNCHERS:
        _launcher(PROGRAM_LAUNCHERS[name], words, k + 1, slots)
    elif name == "accelerate" and k + 1 < len(words) and words[k + 1].literal() == "launch":
        _launcher(ACCELERATE, words, k + 2, slots)
    elif name in ORDINARY:
        _set(slots, words[k + 1:], ARGUMENT, name)
    elif name in BYSTANDERS:
        _set(slots, words[k + 1:], OUTSIDE, f"an argument of {name}, which may run or choose programs with it")
    else:
        raise Outside(f"{name} is not on the list of programs amldist knows")


def _set(slots: dict, words: list[_Word], role: str, via: str) -> None:
    for word in words:
        for start, quoting in word.holders:
            slots[start] = Slot(quoting, role, via)


def _unproven(slots: dict, words: list[_Word], j: int, via: str, script: bool = False) -> None:
    """A value chooses the script, or may add options: the words from ``j`` on are not proven
    (the script position itself takes a local path, see :data:`PROGRAM`)."""
    word = words[j]
    role = PROGRAM if script and not word.literal_prefix() else OUTSIDE
    _set(slots, [word], role, via if role == PROGRAM else f"{via}'s options")
    _set(slots, words[j + 1:], OUTSIDE, f"a command whose script or options a value sets ({via})")


def _python(words: list[_Word], j: int, slots: dict, name: str) -> None:
    """``python [options] (SCRIPT | -m MODULE | -c CODE) ARGS...`` (see the module docstring)."""
    while j < len(words):
        word = words[j]
        text = word.literal()
        if word.holders:
            return _unproven(slots, words, j, name, script=not word.literal_prefix().startswith("-"))
        if text is None or word.patterned:
            raise Outside(f"{name} with a script or option that is not a literal word")
        if text in ("-m", "-c") or (text.startswith(("-m", "-c")) and len(text) > 2):
            inline = text[2:]
            rest = j + (1 if inline else 2)
            if text.startswith("-c"):
                if not inline and j + 1 < len(words):
                    _set(slots, [words[j + 1]], INTERPRETER_CODE, f"{name} -c")
                _set(slots, words[rest:], ARGUMENT, f"{name} -c")
                return None
            if not inline and j + 1 < len(words) and words[j + 1].holders:
                return _unproven(slots, words, j + 1, f"{name} -m", script=True)
            operand = inline or (words[j + 1].literal() if j + 1 < len(words) else None)
            if operand is None or not _MODULE.fullmatch(operand):
                raise Outside(f"{name} -m with a module that is not a literal name")
            return _module(name, operand, words, rest, slots)
        if text in ("-W", "-X"):
            if j + 1 < len(words) and words[j + 1].holders:
                return _unproven(slots, words, j + 1, name)
            j += 2
        elif text == "--" or _PYTHON_FLAGS.fullmatch(text):
            j += 1
        elif text.startswith("-"):
            raise Outside(f"{name} {text}: an option amldist does not know (-i and - read code from the input)")
        else:
            _set(slots, words[j + 1:], ARGUMENT, f"{name} {text}")
            return None
    raise Outside(f"{name} without a script reads code from its input")


def _module(name: str, module: str, words: list[_Word], j: int, slots: dict) -> None:
    if module in LAUNCHER_MODULES:
        _launcher(LAUNCHER_MODULES[module], words, j, slots)
    elif module == "mpi4py":
        _python(words, j, slots, f"{name} -m mpi4py")
    else:
        _set(slots, words[j:], ARGUMENT, f"{name} -m {module}")


def _launcher(launcher: Launcher, words: list[_Word], j: int, slots: dict) -> None:
    """Known options, then the program (mpirun, srun) or the script (the others), then its arguments."""
    module = False
    while j < len(words):
        word = words[j]
        text = word.literal() if not word.holders else word.literal_prefix()
        if text is None or word.patterned:
            raise Outside(f"a word of {launcher.name}'s options that is not a literal")
        if word.holders and "=" not in text:
            return _unproven(slots, words, j, launcher.name)
        if text == "--":
            j += 1
            break
        if not text.startswith("-"):
            break
        option, equals, _ = text.partition("=")
        if option in launcher.flags | launcher.module_flags and not equals:
            module |= option in launcher.module_flags
            j += 1
        elif option in launcher.values:
            value = word if equals else (words[j + 1] if j + 1 < len(words) else None)
            j += 1 if equals else 2
            if value is not None and not _option_value(launcher, value, slots):
                return _unproven(slots, words, j - 1, launcher.name)
        elif launcher is MPIRUN and option in _MPI_ARITY_TWO and not equals:
            if any(w.holders for w in words[j + 1:j + 3]):
                return _unproven(slots, words, j + 1, launcher.name)
            j += 3
        else:
            raise Outside(f"{launcher.name} {option}: an option amldist does not know")
    if j >= len(words):
        raise Outside(f"{launcher.name} without a script")
    return _launched(launcher, module, words, j, slots)


def _option_value(launcher: Launcher, word: _Word, slots: dict) -> bool:
    """A value in quotes after an argparse option is that option's value (proven); False where a
    value's words could become options or the script (everything after it is then unproven)."""
    if not word.holders:
        if word.literal() is None and not word.expands:
            raise Outside(f"a word of {launcher.name}'s options that is not a literal")
        return True
    if launcher.quoted_values and all(quoting in (DOUBLE, SINGLE) for _, quoting in word.holders):
        _set(slots, [word], ARGUMENT, f"the value of an option of {launcher.name}")
        return True
    return False


def _launched(launcher: Launcher, module: bool, words: list[_Word], j: int, slots: dict) -> None:
    if words[j].holders:
        return _unproven(slots, words, j, launcher.name, script=True)
    text = words[j].literal()
    if text is None or words[j].patterned:
        raise Outside(f"{launcher.name} running a program that is not a literal word")
    if launcher in (MPIRUN, SRUN):
        name = text.rsplit("/", 1)[-1]
        if _PYTHON.fullmatch(name):
            return _python(words, j + 1, slots, name)
        if name in ("torchrun", "deepspeed"):
            return _launcher(PROGRAM_LAUNCHERS[name], words, j + 1, slots)
        if name == "accelerate" and j + 1 < len(words) and words[j + 1].literal() == "launch":
            return _launcher(ACCELERATE, words, j + 2, slots)
        if not _SCRIPT_PY.fullmatch(text):
            raise Outside(f"{launcher.name} running {name}, which is not on the list")
    elif module and not _MODULE.fullmatch(text):
        raise Outside(f"{launcher.name} with a module that is not a literal name")
    _set(slots, words[j + 1:], ARGUMENT, f"{launcher.name} {text}")
    return None


def describe(slot: Slot) -> str:
    """Where a value goes, for messages."""
    if slot.role == OUTSIDE:
        return f"in {slot.via}"
    if slot.role == PROGRAM:
        return f"as the program {slot.via} runs, so the value chooses what runs"
    return f"as an argument of {slot.via}"
