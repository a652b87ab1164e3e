"""What a simple command does with each of its words: the part of the injection rule that knows
programs.

A word is an argument of an ordinary program (``ARGUMENT``), unless the command hands it to a
reader of code. Programs are found by what they do, after quote removal (``"bash"`` is bash,
``/usr/bin/env`` is env):

- a **wrapper** runs the rest of its words as a command (``timeout``, ``env``, ``nice``,
  ``xargs``, ``mpirun``, ``torchrun``...). Its own options and operands cannot be told apart
  from the program in general (``timeout 60 X``, ``sudo -u bob X``), so every word after a
  wrapper is ``UNKNOWN`` until a word that names a known program (or a ``*.py``/``*.sh``/``./``
  script) is met; that program's rule then applies to what follows. Any later word naming a
  shell or evaluator starts shell code whatever came before (``find . -exec sh -c X``);
- a **shell** (``sh``, ``bash``, ``dash``...) reads the operand after ``-c`` as ``SHELL_CODE``
  (later operands are its positional parameters: arguments, unless the code expands some, as
  ``eval "$1"`` would); without ``-c`` its first operand is the script (a value there is the
  ``PROGRAM``); its standard input is always taken for code (the code may read and run it);
- a function or alias the command text defines runs its body: its words are ``SHELL_CODE``;
- an assignment to a variable that chooses what runs (``PATH``, ``PS4``, ``BASH_ENV``,
  ``LD_PRELOAD``..., :data:`CODE_VARIABLES`) is ``SHELL_CODE``;
- an **evaluator** reads all its words as code: ``eval``, ``trap``, ``alias``, ``source``/``.``,
  ``su``/``runuser``/``sg``/``sudo``/``doas``, ``flock``, ``script``, ``watch``, ``ssh``, ``parallel``;
- the **program position** (a value as the first word, or behind a wrapper) is ``PROGRAM``; a
  first word that is not a literal (``$SHELL -c X``) makes every later word ``UNKNOWN``;
- ``let`` and ``declare -i`` make their words arithmetic (``ARITHMETIC``);
- an **interpreter that is not a shell** (``python -c``, ``perl -e``, ``node -e``, ``awk``'s
  and ``sed``'s program) runs its code argument, on Azure ML exactly as here:
  ``INTERPRETER_CODE``, passed literally and warned about.

``SAFE_ROLES`` are the roles where any value is proven safe when written as a variable
reference. Standard library only.
"""

from __future__ import annotations

import re

WORD, ASSIGN, REDIRECT, HERESTRING = "word", "assign", "redirect", "herestring"  # kinds of words
REDIRECT_IN = "redirect-in"  # the file after <: what the command reads as its standard input

ARGUMENT = "argument"
STDIN = "stdin"  # data on the standard input of an ordinary program
ASSIGNMENT = "assignment"
INTERPRETER_CODE = "interpreter-code"
PROGRAM = "program"
SHELL_CODE = "shell-code"
UNKNOWN = "unknown"
ARITHMETIC = "arithmetic"
SAFE_ROLES = (ARGUMENT, STDIN, ASSIGNMENT, INTERPRETER_CODE)

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "fish", "csh", "tcsh", "yash", "posh"}
EVALUATORS = {"eval", "trap", "alias", "source", ".", "su", "runuser", "sg", "sudo", "doas", "flock", "script",
              "watch", "ssh", "parallel", "bind", "complete", "fc", "coproc"}
WRAPPERS = {"timeout", "env", "nice", "nohup", "xargs", "stdbuf", "setsid", "chrt", "taskset", "numactl", "ionice",
            "time", "command", "exec", "builtin", "chroot", "unshare", "nsenter", "strace", "ltrace", "busybox",
            "mpirun", "mpiexec", "orterun", "srun", "torchrun", "deepspeed", "horovodrun", "accelerate", "catchsegv",
            "cgexec", "systemd-run", "prlimit", "firejail", "valgrind", "caffeinate", "find"}
INTERPRETERS = {"python": ("-c",), "pypy": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval",
                "-p", "--print"), "nodejs": ("-e", "--eval", "-p", "--print"), "Rscript": ("-e",), "php": ("-r",),
                "lua": ("-e",), "julia": ("-e", "--eval"), "awk": (), "gawk": (), "mawk": (), "sed": ("-e",),
                "jq": (), "tclsh": (), "R": ("-e",)}
_PROGRAM_TEXT = {"awk", "gawk", "mawk", "sed"}  # the first operand is the program text unless -f/-e
_ORDINARY = {"echo", "printf", "cat", "ls", "cp", "mv", "mkdir", "rm", "touch", "tee", "head", "tail", "wc", "sort",
             "grep", "tar", "gzip", "unzip", "wget", "curl", "git", "pip", "pip3", "nvidia-smi", "ln", "chmod",
             "test", "[", "true", "false", "sleep", "date", "hostname", "conda", "java", "dotnet", "make", "cmake"}
_LAUNCHER_MODULES = {"torch.distributed.run", "torch.distributed.launch", "deepspeed", "deepspeed.launcher.runner",
                     "accelerate.commands.launch", "mpi4py", "horovod.runner.launch"}
_SCRIPT = re.compile(r"(^\.{0,2}/[^/].*|\.(py|sh|bash|pl|rb|js|R|jl))$")
_VERSION = re.compile(r"^(python|pypy|perl|ruby|php|lua|julia|pip)[0-9.]*$")


def literal(raw: str) -> str | None:
    """A word's text after quote removal, or None when it is not a literal (an expansion, a
    placeholder, an unquoted pattern)."""
    if "\0" in raw:  # a placeholder or an expansion, quoted or not
        return None
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch in "\0$`*?" or (ch == "[" and "]" in raw[i:]):  # an expansion or a pattern
            return None
        if ch == "\\":
            out.append(raw[i + 1:i + 2])
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            end = len(raw) if end < 0 else end
            out.append(raw[i + 1:end])
            i = end + 1
        elif ch == '"':
            i = _double(raw, i + 1, out)
            if i < 0:
                return None
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _double(raw: str, i: int, out: list) -> int:
    while i < len(raw) and raw[i] != '"':
        if raw[i] in "\0$`":
            return -1
        if raw[i] == "\\" and raw[i + 1:i + 2] in ('"', "\\", "$", "`"):
            i += 1
        out.append(raw[i:i + 1])
        i += 1
    return i + 1


def program_name(text: str) -> str:
    """``/usr/bin/python3.11`` -> ``python``: the name the rules below know it by."""
    name = text.rsplit("/", 1)[-1]
    version = _VERSION.match(name)
    return version.group(1) if version else name


def describe(role: str, via: str) -> str:
    return {
        PROGRAM: f"as the program to run{' (behind ' + via + ')' if via else ''}, so the value chooses the command",
        SHELL_CODE: f"where {via or 'a shell'} reads it as shell code",
        UNKNOWN: f"in a command amldist cannot follow ({via}), which may run it as code",
        ARITHMETIC: f"where bash evaluates it as arithmetic ({via})" if via else "in arithmetic",
        INTERPRETER_CODE: f"as code for {via}",
        ASSIGNMENT: "in an assignment",
        STDIN: "on the standard input of a program",
    }.get(role, "as an argument of a program")


class Roles:
    """The role of every word of one simple command (``words``: objects with ``raw``, ``kind``,
    ``holders``); ``stdin`` says what the program does with its standard input."""

    def __init__(self, words: list, arithmetic: bool, defined: frozenset = frozenset()):
        self.words = words
        self.arithmetic = arithmetic
        self.defined = defined  # functions and aliases the command text defines: their bodies are code
        self.roles: dict[int, tuple[str, str]] = {}
        self.stdin = (STDIN, "")
        for word in words:
            if word.kind == ASSIGN:
                self.roles[id(word)] = self._assignment(word)
        plain = [w for w in words if w.kind == WORD]
        if plain:
            self._program(plain, 0, "")
        elif any(w.kind in (HERESTRING, REDIRECT_IN) for w in words):  # `done <<< X`: the loop may `read` it
            self.stdin = (ASSIGNMENT, "the input of a compound command")
        self._shells_after_wrappers(plain)

    def _assignment(self, word) -> tuple[str, str]:
        name = re.split(r"[+\[=]", word.raw, maxsplit=1)[0]
        if name in CODE_VARIABLES or name.startswith("BASH_FUNC_"):
            return SHELL_CODE, f"{name}, which chooses what runs"
        if self.arithmetic:
            return ARITHMETIC, "a variable later read in arithmetic"
        return ASSIGNMENT, ""

    def of(self, word) -> tuple[str, str]:
        if word is None:
            return self.stdin
        if word.kind == HERESTRING:
            return self.stdin
        if word.kind == REDIRECT_IN and self.stdin[0] not in SAFE_ROLES:  # bash < FILE: the value names the code
            return PROGRAM, f"{self.stdin[1]} <"
        if word.kind == REDIRECT_IN and self.stdin[0] == ASSIGNMENT:  # read x < <(echo X): into a variable
            return self.stdin
        return self.roles.get(id(word), (ARGUMENT, ""))

    def _set(self, words: list, start: int, role: str, via: str) -> None:
        for word in words[start:]:
            self.roles[id(word)] = (role, via)

    def _program(self, words: list, k: int, via: str) -> None:
        word = words[k]
        text = literal(word.raw)
        if text is None:
            shown = "the value" if word.holders else word.raw.replace("\0", "…")
            self.roles[id(word)] = (PROGRAM, via) if word.holders else (UNKNOWN, shown)
            self._set(words, k + 1, UNKNOWN, f"the program is {shown}")
            self.stdin = (SHELL_CODE, f"the program {shown}")
            return
        name = program_name(text)
        if text in self.defined:  # a function or alias of this command: its body may evaluate anything
            self._set(words, k + 1, SHELL_CODE, f"{text}, defined in the command")
            self.stdin = (SHELL_CODE, text)
        elif name in SHELLS:
            self._shell(words, k, name)
        elif name in EVALUATORS:
            self._set(words, k + 1, SHELL_CODE, name)
            self.stdin = (SHELL_CODE, name)
        elif name in WRAPPERS:
            self._wrapped(words, k + 1, name if name != "find" else "find -exec", find=name == "find")
        elif name in ("let",):
            self._set(words, k + 1, ARITHMETIC, "let")
        elif name in _SETTERS or (name == "printf" and any(literal(w.raw) == "-v" for w in words[k + 1:])):
            self._set(words, k + 1, ASSIGNMENT, name)  # the value goes into a variable
            self.stdin = (ASSIGNMENT, name)
        elif name in ("declare", "typeset", "local", "export", "readonly"):
            self._declare(words, k, name)
        elif name in INTERPRETERS:
            self._interpreter(words, k, name)

    def _wrapped(self, words: list, k: int, via: str, find: bool = False) -> None:
        """After a wrapper: UNKNOWN until a known program (see the module docstring)."""
        if via == "xargs":  # its standard input becomes the words of the command it runs
            self.stdin = (SHELL_CODE, "xargs")
        for j in range(k, len(words)):
            text = literal(words[j].raw)
            if find:
                if text in ("-exec", "-execdir", "-ok", "-okdir") and j + 1 < len(words):
                    self._program(words, j + 1, via)
                    return
                continue
            if text is not None and (program_name(text) in _KNOWN or _SCRIPT.search(text)):
                self._program(words, j, via)
                return
            self.roles[id(words[j])] = (UNKNOWN, f"an argument of {via} before the program it runs")
            if text is None and not words[j].holders:
                self._set(words, j + 1, UNKNOWN, f"{via} runs {words[j].raw.replace(chr(0), '…')}")
                return

    def _shell(self, words: list, k: int, name: str) -> None:
        code, j = False, k + 1
        while j < len(words):
            text = literal(words[j].raw)
            if words[j].holders or text is None:
                break
            if text == "--" or not text.startswith(("-", "+")) or text in ("-", "+"):
                j += text == "--"
                break
            code |= not text.startswith("--") and "c" in text[1:]
            j += 2 if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
        for i in range(k + 1, min(j, len(words))):
            self.roles[id(words[i])] = (SHELL_CODE, name)  # a value among the shell's own options
        self.stdin = (SHELL_CODE, name)  # its code (or a shell it starts) may read the standard input as code
        if j >= len(words):
            return
        if code:
            self.roles[id(words[j])] = (SHELL_CODE, f"{name} -c")
            if "$" in words[j].raw or "`" in words[j].raw:  # code that expands "$1", "$@": may evaluate them
                self._set(words, j + 1, SHELL_CODE, f"a positional parameter of {name} -c code that expands them")
        else:
            computed = words[j].holders or literal(words[j].raw) is None  # bash <(...), bash "$S"
            self.roles[id(words[j])] = (PROGRAM, name) if computed else (ARGUMENT, "")

    def _interpreter(self, words: list, k: int, name: str) -> None:
        options = INTERPRETERS[name]
        j = k + 1
        while j < len(words):
            text = literal(words[j].raw)
            if text is not None and name == "python" and text == "-m" and j + 1 < len(words):
                module = literal(words[j + 1].raw)
                if module in _LAUNCHER_MODULES:
                    self._wrapped(words, j + 2, f"python -m {module}")
                return
            if text in options or (name == "python" and text and re.fullmatch(r"-[A-Za-z]*c", text)):
                if j + 1 < len(words):
                    self.roles[id(words[j + 1])] = (INTERPRETER_CODE, f"{name} {text}")
                return
            if text is None or not text.startswith("-") or text == "-":
                break
            if name in _PROGRAM_TEXT and text == "-f":
                return
            j += 1
        if j < len(words) and name in _PROGRAM_TEXT | {"jq", "tclsh"}:
            self.roles[id(words[j])] = (INTERPRETER_CODE, name)
        if j >= len(words) or literal(words[j].raw) == "-":
            self.stdin = (INTERPRETER_CODE, name)

    def _declare(self, words: list, k: int, name: str) -> None:
        flags = "".join(literal(w.raw) or "" for w in words[k + 1:] if (literal(w.raw) or "").startswith("-"))
        role = (ARITHMETIC, f"{name} -i") if "i" in flags else (
            (ARITHMETIC, "a variable later read in arithmetic") if self.arithmetic else (ASSIGNMENT, ""))
        for word in words[k + 1:]:
            if word.holders and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word.raw):
                self.roles.setdefault(id(word), role if self._assignment(word)[0] != SHELL_CODE
                                      else self._assignment(word))
            elif word.holders:
                self.roles.setdefault(id(word), (ARITHMETIC, f"{name}: a variable name"))

    def _shells_after_wrappers(self, words: list) -> None:
        """Belt and braces: behind a wrapper, any later word naming a shell or evaluator starts
        shell code, whatever the options in between meant."""
        if not words or program_name(literal(words[0].raw) or "") not in WRAPPERS:
            return
        for j, word in enumerate(words):
            name = program_name(literal(word.raw) or "")
            if j and (name in SHELLS or name in EVALUATORS):
                for later in words[j + 1:]:
                    if self.roles.get(id(later), (ARGUMENT,))[0] in SAFE_ROLES:
                        self.roles[id(later)] = (SHELL_CODE, f"{name} behind a wrapper")
                self.stdin = (SHELL_CODE, name)
                return


_SETTERS = {"read", "mapfile", "readarray", "getopts", "set"}
# variables whose value chooses what runs: assigning a value to one is not an ordinary assignment
CODE_VARIABLES = {"PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV", "PATH", "LD_PRELOAD",
                  "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "NODE_OPTIONS",
                  "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "CDPATH", "EXECIGNORE", "HISTFILE"}
_KNOWN = SHELLS | EVALUATORS | WRAPPERS | set(INTERPRETERS) | _ORDINARY | {"let", "declare", "typeset", "local",
                                                                          "export", "readonly"}
