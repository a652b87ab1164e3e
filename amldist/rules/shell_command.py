"""Where each placeholder of a command sits, as the shell will read it.

Azure ML pastes a value's text into the command and hands the command to a shell. For a
benign value (no shell metacharacters) that gives well-defined arguments; for any other value
it is a command injection. amldist instead passes every value in the process environment and
writes a variable reference in its place, chosen for the quoting context the placeholder sits
in. A parameter expansion's result is never parsed again as shell code (no command
substitution, no quote removal), so no value can run a command; it is still split into words
where it is unquoted, as the pasted text would be on Azure ML.

This module finds those contexts: :func:`contexts` lexes the command (quotes, ``$'...'``,
backslashes, comments, ``$(...)``, backticks, ``${...}``, ``$((...))``, ``((...))``,
``[[...]]``, here-documents) and reports, for each placeholder span, one of the names below.
The spans come from :mod:`amldist.rules.placeholders`, the one parser of the ``${{...}}``
syntax; this module never looks for placeholders itself. It is hand-written because no
maintained Python library reports the quoting context at an offset: ``shlex`` does not know
``$(...)``, arithmetic or here-documents, and bashlex (GPL) gives a tree of words without
their quoting.

Contexts where a variable reference is safe and gives what Azure ML gives a benign value:

- ``unquoted``: an argument (``--lr ${{inputs.lr}}``); ``${VAR}`` is split into words
  like the pasted text, and a word with ``*``, ``?`` or ``[`` is matched against file names
  exactly as the pasted text would be (globbing is kept: ``set -f`` would also turn off the
  job's own patterns such as ``data/*.csv``);
- ``double``: inside ``"..."``; ``"...${VAR}..."`` keeps it one word;
- ``heredoc``: the body of a here-document with an unquoted delimiter (expanded like ``"..."``);
- ``comment``: after ``#``; nothing runs either way.

Contexts that are refused (:data:`REFUSED` says why), because there the shell would read the
value as code or a variable reference could not give Azure ML's text: ``single`` (``'...'``;
often a nested ``bash -c '...'``), ``ansi`` (``$'...'``), ``escaped`` (right after a ``\\``),
``backtick``, ``parameter`` (inside ``${...}``), ``arithmetic`` and ``conditional`` (bash
evaluates arithmetic in them, and array subscripts in arithmetic run commands),
``quoted-heredoc`` (a body that is never expanded), ``command-name`` (the value would be the
program to run) and ``shell-code`` (an argument of ``eval`` or of ``sh``/``bash -c``, which
read it as shell code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

UNQUOTED, DOUBLE, HEREDOC, COMMENT = "unquoted", "double", "heredoc", "comment"
COMMAND_NAME = "command-name"
SAFE = (UNQUOTED, DOUBLE, HEREDOC, COMMENT)
REFUSED = {
    "single": "inside '...' quotes, where a shell variable is not expanded (and a nested shell would read the value as code)",
    "ansi": "inside $'...' quotes, where a shell variable is not expanded",
    "escaped": "right after a backslash, which would escape the value's first character",
    "backtick": "inside `...`, whose text the shell parses a second time",
    "parameter": "inside ${...}, where the value would become part of a shell expansion",
    "arithmetic": "in arithmetic ($((...)), ((...)), let, declare -i), where bash evaluates the value as code",
    "conditional": "inside [[ ... ]], where bash evaluates arithmetic in the value",
    "quoted-heredoc": "in a here-document with a quoted delimiter, which is never expanded",
    COMMAND_NAME: "as the program to run, so the value would choose the command",
    "shell-code": "in an argument that eval or 'sh -c' reads as shell code",
    "heredoc-word": "in a here-document's delimiter",
    "unplaced": "where amldist cannot tell how the shell would read it",
}
SAFE_HINT = "use it as an argument, unquoted (--x ${{inputs.NAME}}) or in double quotes (\"${{inputs.NAME}}\")"

_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash"}
_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "exec", "command",
             "builtin", "nohup", "env"}  # the next word is still a command name
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_REDIRECT = re.compile(r"^[0-9]*(<|>|<<|>>|<&|>&|&>|&>>|<>|>\|)")
_HEREDOC = re.compile(r"<<(-?)[ \t]*")
_OPERATORS = ";&|\n"
_DECLARE = {"declare", "typeset", "local", "export", "readonly"}  # with -i, values are arithmetic
_DIRECT = {"cmd": UNQUOTED, "double": DOUBLE, "comment": COMMENT}  # other frames name their own context
_ENCLOSING_REFUSED = {"single", "ansi", "backtick", "parameter", "arithmetic", "conditional"}


@dataclass
class _Frame:
    kind: str  # cmd, double, single, ansi, backtick, parameter, arithmetic, conditional, heredoc
    closer: str = ""
    depth: int = 0  # open parentheses inside a cmd/arithmetic frame
    # command-context state (kind == "cmd" or "backtick")
    command_position: bool = True
    words: list[str] = field(default_factory=list)  # the words of the current simple command
    word: str = ""  # the word being read (placeholders count as "\0")
    heredoc: tuple | None = None  # (delimiter, quoted, strip_tabs) for a heredoc frame


def _ends_word(ch: str) -> bool:
    return ch in " \t" or ch in _OPERATORS or ch in "()<>"


class _Lexer:
    """A small shell lexer that answers one question: what context is each span in."""

    def __init__(self, text: str, spans: list[tuple[int, int]]):
        self.text = text
        self.spans = dict(spans)
        self.stack = [_Frame("cmd")]
        self.pending: list[tuple[str, bool, bool]] = []  # here-documents whose bodies come next
        self.found: dict[int, str] = {}
        self.i = 0

    # -- words of the current simple command (for command names, eval and sh -c) --------------
    def _cmd(self) -> _Frame | None:
        top = self.stack[-1]
        return top if top.kind in ("cmd", "backtick") else None

    def _finish_word(self, frame: _Frame) -> None:
        if not frame.word:
            return
        word = frame.word
        frame.word = ""
        if frame.command_position:
            if _REDIRECT.match(word) or _ASSIGNMENT.match(word) or word in _KEYWORDS:
                return
            frame.command_position = False
        frame.words.append(word)

    def _end_command(self, frame: _Frame) -> None:
        self._finish_word(frame)
        frame.words = []
        frame.command_position = True

    def _nearest_cmd(self) -> _Frame | None:
        for frame in reversed(self.stack):
            if frame.kind in ("cmd", "backtick"):
                return frame
        return None  # a here-document's body

    def _command_context(self, frame: _Frame | None, kind: str) -> str:
        """``kind``, unless the command the placeholder belongs to makes it a command name,
        shell code (eval, sh -c) or arithmetic (let, declare -i)."""
        if frame is None:
            return kind
        if frame.kind == "backtick":
            return "backtick"
        word = frame.word
        if frame.command_position and not (_ASSIGNMENT.match(word) or _REDIRECT.match(word)):
            return COMMAND_NAME
        words = frame.words
        if words:
            name = words[0].rsplit("/", 1)[-1]
            flags = [w for w in words[1:] if w.startswith("-") and not w.startswith("--")]
            if name == "eval" or (name in _SHELLS and any("c" in w for w in flags)):
                return "shell-code"
            if name == "let" or (name in _DECLARE and any("i" in w for w in flags)):
                return "arithmetic"
        return kind

    # -- the scan ------------------------------------------------------------------------
    def run(self) -> dict[int, str]:
        text = self.text
        while self.i < len(text):
            if self.i in self.spans:
                self._placeholder()
                continue
            top = self.stack[-1]
            handler = getattr(self, "_in_" + top.kind.replace("-", "_"))
            handler(top, text[self.i])
        return self.found

    def _placeholder(self) -> None:
        start = self.i
        self.i = self.spans[start]
        top = self.stack[-1]
        kind = _DIRECT.get(top.kind, top.kind)
        if top.kind == "heredoc":
            kind = "quoted-heredoc" if top.heredoc[1] else HEREDOC
        for frame in self.stack[:-1]:  # an enclosing context that re-reads its text wins
            if frame.kind in _ENCLOSING_REFUSED or (frame.kind == "heredoc" and frame.heredoc[1]):
                kind = "quoted-heredoc" if frame.kind == "heredoc" else frame.kind
                self.found[start] = kind
                return
        if kind in (UNQUOTED, DOUBLE):
            kind = self._command_context(self._nearest_cmd(), kind)
        if top.kind in ("cmd", "backtick"):
            top.word += "\0"
        if kind in SAFE + (COMMAND_NAME, "shell-code") and kind != COMMENT and self._escaping_backslash(start):
            kind = "escaped"
        self.found[start] = kind

    def _skip_escape(self) -> None:
        """Step over a backslash and the character it escapes, unless that is a placeholder
        (which then reads as escaped)."""
        self.i += 1 if self.i + 1 in self.spans else 2

    def _escaping_backslash(self, pos: int) -> bool:
        count = 0
        while pos - count - 1 >= 0 and self.text[pos - count - 1] == "\\":
            count += 1
        return count % 2 == 1

    def _expansion(self, frame: _Frame) -> bool:
        """``$(``, ``$((``, ``${``, ``$'`` or a backtick at the cursor: open its frame."""
        text, i = self.text, self.i
        if text.startswith("$((", i):
            self.stack.append(_Frame("arithmetic", closer="))"))
            self.i += 3
        elif text.startswith("$(", i):
            self.stack.append(_Frame("cmd", closer=")"))
            self.i += 2
        elif text.startswith("${", i):
            self.stack.append(_Frame("parameter", closer="}"))
            self.i += 2
        elif text[i] == "`":
            self.stack.append(_Frame("backtick", closer="`"))
            self.i += 1
        else:
            return False
        return True

    def _in_cmd(self, frame: _Frame, ch: str) -> None:
        text, i = self.text, self.i
        if ch == "\\":
            if text.startswith("\\\n", i):
                self.i += 2  # a line continuation
                return
            frame.word += text[i:i + 2]
            self._skip_escape()
            return
        if frame.kind == "backtick" and ch == "`":
            self._finish_word(frame)
            self.stack.pop()
            self.i += 1
            self._mark_word()
            return
        if ch == "#" and not frame.word:
            self.stack.append(_Frame("comment"))
            self.i += 1
            return
        if ch == "'":
            frame.word += "'"
            self.stack.append(_Frame("single"))
            self.i += 1
            return
        if text.startswith("$'", i):
            frame.word += "$'"
            self.stack.append(_Frame("ansi"))
            self.i += 2
            return
        if ch == '"':
            frame.word += '"'
            self.stack.append(_Frame("double"))
            self.i += 1
            return
        if ch == "$" or ch == "`":
            frame.word += ch
            if self._expansion(frame):
                return
            self.i += 1
            return
        if not frame.word and text.startswith("((", i):
            self.stack.append(_Frame("arithmetic", closer="))"))
            self.i += 2
            return
        if not frame.word and text.startswith("[[", i) and (i + 2 >= len(text) or text[i + 2] in " \t\n"):
            self.stack.append(_Frame("conditional", closer="]]"))
            self.i += 2
            return
        heredoc = _HEREDOC.match(text, i)
        if heredoc and not text.startswith("<<<", i):
            self._heredoc_operator(frame, heredoc)
            return
        if ch == "(":
            self._end_command(frame)
            frame.depth += 1
            self.i += 1
            return
        if ch == ")":
            if frame.depth == 0 and frame.closer == ")":
                self._finish_word(frame)
                self.stack.pop()
                self.i += 1
                self._mark_word()
                return
            frame.depth = max(0, frame.depth - 1)
            self._end_command(frame)
            self.i += 1
            return
        if ch in _OPERATORS:
            self._end_command(frame)
            self.i += 1
            if ch == "\n" and self.pending:
                self._start_heredoc()
            return
        if ch in " \t":
            self._finish_word(frame)
        elif ch in "<>":
            self._finish_word(frame)
            frame.word = ch  # a redirection: its target is not a command name
            self.i += 1
            while self.i < len(text) and text[self.i] in "<>&|":
                frame.word += text[self.i]
                self.i += 1
            return
        else:
            frame.word += ch
        self.i += 1

    _in_backtick = _in_cmd

    def _mark_word(self) -> None:
        """An expansion just closed: it is part of the word around it."""
        frame = self._cmd()
        if frame is not None:
            frame.word += "\0"

    def _heredoc_operator(self, frame: _Frame, match: re.Match) -> None:
        self._finish_word(frame)
        pos = match.end()
        word = ""
        quoted = False
        while pos < len(self.text) and not _ends_word(self.text[pos]) and self.text[pos] != "\n":
            if pos in self.spans:
                self.found[pos] = "heredoc-word"
                pos = self.spans[pos]
                continue
            ch = self.text[pos]
            if ch in "'\"":
                quoted = True
                close = self.text.find(ch, pos + 1)
                close = len(self.text) if close < 0 else close
                word += self.text[pos + 1:close]
                pos = close + 1
            elif ch == "\\":
                quoted = True
                word += self.text[pos + 1:pos + 2]
                pos += 2
            else:
                word += ch
                pos += 1
        self.pending.append((word, quoted, match.group(1) == "-"))
        frame.word = "<<"  # redirection words never make a command name
        self._finish_word(frame)
        self.i = pos

    def _start_heredoc(self) -> None:
        delimiter, quoted, strip = self.pending.pop(0)
        self.stack.append(_Frame("heredoc", heredoc=(delimiter, quoted, strip)))
        self._heredoc_line_start()

    def _heredoc_line_start(self) -> None:
        """At the start of a body line: the delimiter line ends the here-document."""
        frame = self.stack[-1]
        delimiter, _, strip = frame.heredoc
        end = self.text.find("\n", self.i)
        line = self.text[self.i:] if end < 0 else self.text[self.i:end]
        if (line.lstrip("\t") if strip else line) == delimiter:
            self.stack.pop()
            self.i = len(self.text) if end < 0 else end + 1
            if self.pending:
                self._start_heredoc()

    def _in_heredoc(self, frame: _Frame, ch: str) -> None:
        quoted = frame.heredoc[1]
        if not quoted and ch == "\\":
            self._skip_escape()
        elif not quoted and ch in "$`" and self._expansion(frame):
            return
        else:
            self.i += 1
        if ch == "\n" and self.stack[-1] is frame:
            self._heredoc_line_start()

    def _in_comment(self, frame: _Frame, ch: str) -> None:
        if ch == "\n":
            self.stack.pop()  # the newline itself ends the command in the frame below
            return
        self.i += 1

    def _in_single(self, frame: _Frame, ch: str) -> None:
        self.i += 1
        if ch == "'":
            self.stack.pop()

    def _in_ansi(self, frame: _Frame, ch: str) -> None:
        if ch == "\\":
            self._skip_escape()
            return
        self.i += 1
        if ch == "'":
            self.stack.pop()

    def _in_double(self, frame: _Frame, ch: str) -> None:
        if ch == "\\":
            self._skip_escape()
        elif ch == '"':
            self.i += 1
            self.stack.pop()
        elif ch in "$`" and self._expansion(frame):
            return
        else:
            self.i += 1

    def _in_parameter(self, frame: _Frame, ch: str) -> None:
        if ch == "}":
            self.i += 1
            self.stack.pop()
        else:
            self._quotes_escapes_expansions(frame, ch)

    def _quotes_escapes_expansions(self, frame: _Frame, ch: str) -> None:
        """One step inside ``${...}`` or ``[[ ... ]]``: both read quotes, escapes and expansions alike."""
        if ch == "\\":
            self._skip_escape()
        elif ch == "'":
            self.stack.append(_Frame("single"))
            self.i += 1
        elif ch == '"':
            self.stack.append(_Frame("double"))
            self.i += 1
        elif ch in "$`" and self._expansion(frame):
            return
        else:
            self.i += 1

    def _in_arithmetic(self, frame: _Frame, ch: str) -> None:
        if ch == "(":
            frame.depth += 1
        elif ch == ")":
            if frame.depth == 0 and self.text.startswith("))", self.i):
                self.i += 2
                self.stack.pop()
                self._mark_word()
                return
            frame.depth = max(0, frame.depth - 1)
        elif ch in "$`" and self._expansion(frame):
            return
        self.i += 1

    def _in_conditional(self, frame: _Frame, ch: str) -> None:
        if self.text.startswith("]]", self.i):
            self.i += 2
            self.stack.pop()
        else:
            self._quotes_escapes_expansions(frame, ch)


def contexts(text: str, spans: list[tuple[int, int]]) -> dict[int, str]:
    """The context of each placeholder span ``(start, end)`` in ``text``, by start offset."""
    return _Lexer(text, sorted(spans)).run()
