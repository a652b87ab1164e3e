"""Where each placeholder of a command sits, as the shell will read it: its quoting, and whether
amldist can prove that any value there is an argument of an ordinary program.

Azure ML pastes a value's text into the command and hands the command to a shell. amldist
instead passes every value in the process environment and writes a variable reference in its
place, chosen for the quoting the placeholder sits in. A parameter expansion's result is never
parsed again as shell code by the shell that expands it, so there the value is the literal text
of an argument, provided that no program the command runs reads it as code.

That proof is an allow-list (:mod:`amldist.rules.shell_grammar`): a list of simple commands of
programs on a short written list, in a small grammar read completely. A placeholder there gets
its quoting and role from the grammar. Anywhere else, known or not, the placeholder is
``outside`` and takes only benign values; :class:`_Lexer` then only finds its quoting, to write
the benign value's reference (or paste it where no variable can be expanded): quotes,
``$'...'``, backslashes, comments, ``$(...)``, backticks, ``${...}``, ``$((...))``, ``((...))``,
``[[...]]`` and here-documents. A mistake of this lexer can change how a benign value is written,
never what a non-benign value may do. The spans come from :mod:`amldist.rules.placeholders`, the
one parser of the ``${{...}}`` syntax.

Each placeholder gets a :class:`Context`: ``quoting`` (``unquoted``, ``double``, ``single``,
``ansi``, ``heredoc``, ``comment``, or one where a variable cannot be written: ``escaped``,
``quoted-heredoc``, ``heredoc-word``), ``enclosing`` (a construct around it that the shell reads
again as code: ``backtick``, ``parameter``, ``arithmetic``, ``conditional``), ``role`` (from the
grammar: ``argument``, ``interpreter-code``, ``program``, ``outside``) and ``via`` (the program,
or why the command is not proven). :func:`Context.proven_safe` says whether any value is safe
there; elsewhere :mod:`amldist.rules.shell_values` admits only benign values.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache

from amldist.rules import shell_grammar as grammar

UNQUOTED, DOUBLE, SINGLE, ANSI, HEREDOC, COMMENT = "unquoted", "double", "single", "ansi", "heredoc", "comment"
ESCAPED, QUOTED_HEREDOC, HEREDOC_WORD, UNPLACED = "escaped", "quoted-heredoc", "heredoc-word", "unplaced"
# where a variable reference gives the value's text (single/ansi: close the quote, "${VAR}", reopen)
RENDERABLE = (UNQUOTED, DOUBLE, SINGLE, ANSI, HEREDOC, COMMENT)
QUOTING_TEXT = {
    ESCAPED: "right after a backslash",
    QUOTED_HEREDOC: "in a here-document with a quoted delimiter (never expanded)",
    HEREDOC_WORD: "in a here-document's delimiter",
    UNPLACED: "where amldist cannot tell how the shell reads it",
}
ENCLOSING_TEXT = {
    "backtick": "inside `...`, whose text the shell parses a second time",
    "parameter": "inside ${...}, where it becomes part of a shell expansion",
    "arithmetic": "in arithmetic ($((...)), ((...))), which bash evaluates as code",
    "conditional": "inside [[ ... ]], where bash evaluates arithmetic",
}


SAFE_ROLES = (grammar.ARGUMENT,)


@dataclass(frozen=True)
class Context:
    quoting: str
    role: str = grammar.OUTSIDE
    via: str = ""  # the program ("python train.py"), or why the command is not proven ("bash is not on the list")
    enclosing: str | None = None

    def proven_safe(self) -> bool:
        """True where no value can be read as code: a literal argument of a program on the allow-list,
        written as a variable reference in any quoting (:mod:`amldist.rules.shell_grammar`)."""
        return self.quoting in RENDERABLE and self.enclosing is None and self.role in SAFE_ROLES

    def describe(self) -> str:
        """Where the value goes, for messages."""
        if self.enclosing:
            return ENCLOSING_TEXT[self.enclosing]
        if self.role == grammar.OUTSIDE:
            return f"in {self.via or 'a command outside the grammar amldist proves safe'}"
        return grammar.describe(grammar.Slot(self.quoting, self.role, self.via))


WORD, ASSIGN, REDIRECT, HERESTRING, REDIRECT_IN = "word", "assign", "redirect", "herestring", "redirect-in"
_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "done", "fi"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_REDIRECT = re.compile(r"^[0-9]*(<<<|<|>|<<|>>|<&|>&|&>|&>>|<>|>\|)")
_HEREDOC = re.compile(r"<<(-?)[ \t]*")
_OPERATORS = ";&|\n"
# Runs of characters that no state of the scan treats specially, read in one step rather than one
# character at a time (the scan is about a sixth of validate's time): in a word, in double quotes, in single
# quotes and in a comment. The shell's special characters, `{`/`[` (legacy placeholders, `[[`), `#`
# and everything non-ASCII are read one at a time as before.
_PLAIN_IN = {"cmd": re.compile(r"[A-Za-z0-9_./:=,+@%^~-]+"), "double": re.compile(r'[^\\"$`]+'),
             "single": re.compile(r"[^']+"), "ansi": re.compile(r"[^'\\]+"), "comment": re.compile(r"[^\n]+")}
_DIRECT = {"cmd": UNQUOTED, "double": DOUBLE, "comment": COMMENT, "single": SINGLE, "ansi": ANSI}
_ENCLOSING = {"backtick", "parameter", "arithmetic", "conditional"}
@dataclass(eq=False)
class _Word:
    raw: str = ""
    holders: list = field(default_factory=list)  # placeholder starts inside this word
    kind: str = WORD  # WORD, ASSIGN, REDIRECT, HERESTRING


@dataclass(eq=False)
class _Command:
    words: list = field(default_factory=list)
    start: int = 0  # offset where it begins (pipes into a shell taint what comes before)
    piped: bool = False  # its standard input is the output of the command before it
    parent: tuple | None = None  # (command, word) that a $(...) or <(...) holding this command lands in
    stdin_holders: list = field(default_factory=list)  # placeholders in a here-document body for it


@dataclass
class _Frame:
    kind: str  # cmd, double, single, ansi, backtick, parameter, arithmetic, conditional, heredoc, comment
    closer: str = ""
    depth: int = 0  # open parentheses inside a cmd/arithmetic frame
    command: _Command | None = None  # cmd/backtick frames: the simple command being read
    word: _Word = field(default_factory=_Word)
    command_position: bool = True
    redirect_next: str = ""  # a detached redirection operator: the next word is its target
    heredoc: tuple | None = None  # (delimiter, quoted, strip_tabs, command) for a heredoc frame


@dataclass
class _Place:
    quoting: str
    enclosing: str | None
    command: _Command | None
    word: _Word | None  # None: on the standard input (a here-document body)


def _redirect_kind(operator: str) -> str:
    """A here-string is the command's input; ``< FILE`` names the file it reads as its input."""
    if operator.endswith("<<<"):
        return HERESTRING
    return REDIRECT_IN if operator.lstrip("0123456789") in ("<", "<>") else REDIRECT


def _ends_word(ch: str) -> bool:
    return ch in " \t" or ch in _OPERATORS or ch in "()<>"


class _Lexer:
    """A small shell lexer: the simple commands and words of a command, and where each span is."""

    def __init__(self, text: str, spans: list[tuple[int, int]]):
        self.text = text
        self.spans = dict(spans)
        self.starts = sorted(self.spans)
        self.commands: list[_Command] = []
        self.i = 0
        self.stack = [self._cmd_frame("cmd")]
        self.pending: list[tuple] = []  # here-documents whose bodies come next
        self.places: dict[int, _Place] = {}

    # -- commands and words ---------------------------------------------------------------
    def _new_command(self, parent=None, piped=False) -> _Command:
        command = _Command(start=self.i, piped=piped, parent=parent)
        self.commands.append(command)
        return command

    def _cmd_frame(self, kind: str, closer: str = "", parent=None) -> _Frame:
        return _Frame(kind, closer=closer, command=self._new_command(parent))

    def _finish_word(self, frame: _Frame) -> None:
        word = frame.word
        if not word.raw:
            return
        frame.word = _Word()
        if frame.redirect_next:
            word.kind = _redirect_kind(frame.redirect_next)
            frame.redirect_next = ""
        elif operator := _REDIRECT.match(word.raw):
            if operator.end() == len(word.raw):  # detached: the target is the next word
                frame.redirect_next = word.raw
                return
            word.kind = _redirect_kind(operator.group(1))
        elif frame.command_position and _ASSIGNMENT.match(word.raw):
            word.kind = ASSIGN
        elif frame.command_position and word.raw in _KEYWORDS and not word.holders:
            return
        else:
            frame.command_position = False
        frame.command.words.append(word)

    def _end_command(self, frame: _Frame, piped: bool = False) -> None:
        self._finish_word(frame)
        frame.redirect_next = ""
        frame.command_position = True
        frame.command = self._new_command(frame.command.parent, piped)

    def _owner(self) -> tuple | None:
        """(command, word) the cursor's text belongs to; word None: a here-document body (stdin)."""
        for frame in reversed(self.stack):
            if frame.kind in ("cmd", "backtick"):
                return frame.command, frame.word
            if frame.kind == "heredoc":
                return frame.heredoc[3], None
        return None

    def _open_substitution(self, kind: str, closer: str, advance: int) -> None:
        """``$(``, a backtick or ``<(``: a new command whose output lands in the current word."""
        parent = self._owner()
        self.i += advance
        self.stack.append(self._cmd_frame(kind, closer, parent))

    # -- the scan ------------------------------------------------------------------------
    def run(self) -> dict[int, _Place]:
        text, spans, stack, handlers = self.text, self.spans, self.stack, {}
        while self.i < len(text):
            if self.i in spans:
                self._placeholder()
                continue
            top = stack[-1]
            handler = handlers.get(top.kind)
            if handler is None:
                handler = handlers[top.kind] = getattr(self, "_in_" + top.kind)
            handler(top, text[self.i])
        for frame in self.stack:
            if frame.kind in ("cmd", "backtick"):
                self._finish_word(frame)
        return self.places

    def _placeholder(self) -> None:
        start = self.i
        self.i = self.spans[start]
        top = self.stack[-1]
        quoting = _DIRECT.get(top.kind, UNQUOTED)
        if top.kind == "heredoc":
            quoting = QUOTED_HEREDOC if top.heredoc[1] else HEREDOC
        enclosing = next((f.kind for f in reversed(self.stack) if f.kind in _ENCLOSING), None)
        if any(f.kind == "heredoc" and f.heredoc[1] for f in self.stack[:-1]):
            quoting = QUOTED_HEREDOC
        if quoting in (UNQUOTED, DOUBLE, HEREDOC) and self._escaping_backslash(start):
            quoting = ESCAPED
        owner = self._owner()
        if owner is None:
            self.places[start] = _Place(quoting, enclosing, None, None)
        elif owner[1] is None:  # a here-document body: the standard input of its command
            self.places[start] = _Place(quoting, enclosing, owner[0], None)
        else:
            owner[1].raw += "\0"
            owner[1].holders.append(start)
            self.places[start] = _Place(quoting, enclosing, owner[0], owner[1])

    def _skip_escape(self) -> None:
        """Step over a backslash and the character it escapes, unless that is a placeholder
        (which then reads as escaped)."""
        self.i += 1 if self.i + 1 in self.spans else 2

    def _plain_run(self, kind: str) -> str:
        """The run of plain characters at the cursor (at least its first), never past a placeholder;
        the cursor moves past it."""
        i = self.i
        match = _PLAIN_IN[kind].match(self.text, i)
        end = match.end() if match else i + 1
        after = bisect.bisect_right(self.starts, i)  # the next placeholder starts after i: end stays > i
        if after < len(self.starts):
            end = min(end, self.starts[after])
        self.i = end
        return self.text[i:end]

    def _escaping_backslash(self, pos: int) -> bool:
        count = 0
        while pos - count - 1 >= 0 and self.text[pos - count - 1] == "\\":
            count += 1
        return count % 2 == 1

    def _expansion(self, frame: _Frame) -> bool:
        """``$(``, ``$((``, ``${`` or a backtick at the cursor: open its frame."""
        text, i = self.text, self.i
        if text.startswith("$((", i):
            self.stack.append(_Frame("arithmetic", closer="))"))
            self.i += 3
        elif text.startswith("$(", i):
            self._open_substitution("cmd", ")", 2)
        elif text.startswith("${", i):
            self.stack.append(_Frame("parameter", closer="}"))
            self.i += 2
        elif text[i] == "`":
            self._open_substitution("backtick", "`", 1)
        else:
            return False
        return True

    def _in_cmd(self, frame: _Frame, ch: str) -> None:
        text, i = self.text, self.i
        if ch == "\\":
            if text.startswith("\\\n", i):
                self.i += 2  # a line continuation
                return
            frame.word.raw += text[i:i + 2]
            self._skip_escape()
        elif frame.kind == "backtick" and ch == "`":
            self._close_substitution(frame)
        elif ch == "#" and not frame.word.raw:
            self.stack.append(_Frame("comment"))
            self.i += 1
        elif ch in "'\"" or text.startswith("$'", i):
            quote = "ansi" if ch == "$" else "single" if ch == "'" else "double"
            frame.word.raw += ch
            self.stack.append(_Frame(quote, closer=ch))
            self.i += 2 if quote == "ansi" else 1
        elif ch == "$" or ch == "`":
            frame.word.raw += ch
            if not self._expansion(frame):
                self.i += 1
        elif not frame.word.raw and text.startswith("((", i):
            self.stack.append(_Frame("arithmetic", closer="))"))
            self.i += 2
        elif not frame.word.raw and text.startswith("[[", i) and (i + 2 >= len(text) or text[i + 2] in " \t\n"):
            self.stack.append(_Frame("conditional", closer="]]"))
            self.i += 2
        else:
            self._in_cmd_operators(frame, ch)

    def _in_cmd_operators(self, frame: _Frame, ch: str) -> None:
        text, i = self.text, self.i
        heredoc = _HEREDOC.match(text, i)
        if heredoc and not text.startswith("<<<", i):
            self._heredoc_operator(frame, heredoc)
        elif ch in "<>" and text.startswith("(", i + 1) and not frame.word.raw:
            self._finish_word(frame)  # <(...) / >(...): a file name whose contents a command writes or reads
            frame.word.raw = "\0"
            self._open_substitution("cmd", ")", 2)
        elif ch == "(":
            self._finish_word(frame)
            self._end_command(frame, piped=frame.command.piped and not frame.command.words)  # `| (read x; ...)`
            frame.depth += 1
            self.i += 1
        elif ch == ")":
            if frame.depth == 0 and frame.closer == ")":
                self._close_substitution(frame)
                return
            frame.depth = max(0, frame.depth - 1)
            self._end_command(frame)
            self.i += 1
        elif ch in _OPERATORS:
            pipe = ch == "|" and text[i + 1:i + 2] != "|" and text[i - 1:i] != "|"
            self._end_command(frame, piped=pipe)
            self.i += 1
            if ch == "\n" and self.pending:
                self._start_heredoc()
        elif ch in "<>":
            self._finish_word(frame)
            frame.word.raw = ch  # a redirection operator
            self.i += 1
            while self.i < len(text) and text[self.i] in "<>&|":
                frame.word.raw += text[self.i]
                self.i += 1
        elif ch in " \t":
            self._finish_word(frame)
            self.i += 1
        else:
            frame.word.raw += self._plain_run("cmd")

    _in_backtick = _in_cmd

    def _close_substitution(self, frame: _Frame) -> None:
        self._finish_word(frame)
        self.stack.pop()
        self.i += 1

    def _heredoc_operator(self, frame: _Frame, match: re.Match) -> None:
        self._finish_word(frame)
        pos = match.end()
        word = ""
        quoted = False
        while pos < len(self.text) and not _ends_word(self.text[pos]) and self.text[pos] != "\n":
            if pos in self.spans:
                self.places[pos] = _Place(HEREDOC_WORD, None, frame.command, None)
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
        self.pending.append((word, quoted, match.group(1) == "-", frame.command))
        self.i = pos

    def _start_heredoc(self) -> None:
        self.stack.append(_Frame("heredoc", heredoc=self.pending.pop(0)))
        self._heredoc_line_start()

    def _heredoc_line_start(self) -> None:
        """At the start of a body line: the delimiter line ends the here-document."""
        frame = self.stack[-1]
        delimiter, _, strip, _ = frame.heredoc
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
        self._plain_run("comment")

    def _in_single(self, frame: _Frame, ch: str) -> None:
        if ch == "'":
            self._word_text(ch)
            self.i += 1
            self.stack.pop()
        else:
            self._word_text(self._plain_run(frame.kind))  # `single`, or `ansi` read up to a backslash

    def _in_ansi(self, frame: _Frame, ch: str) -> None:
        if ch == "\\":
            self._word_text(self.text[self.i:self.i + 2])
            self._skip_escape()
            return
        self._in_single(frame, ch)

    def _word_text(self, text: str) -> None:
        """Quoted text is part of the word being read (for comparing words after quote removal)."""
        frame = self.stack[-2] if len(self.stack) > 1 else None
        if frame is not None and frame.kind in ("cmd", "backtick"):
            frame.word.raw += text

    def _in_double(self, frame: _Frame, ch: str) -> None:
        if ch == "\\":
            self._word_text(self.text[self.i:self.i + 2])
            self._skip_escape()
        elif ch == '"':
            self._word_text(ch)
            self.i += 1
            self.stack.pop()
        elif ch in "$`":
            self._word_text(ch)  # not a literal word any more
            if not self._expansion(frame):
                self.i += 1
        else:
            self._word_text(self._plain_run("double"))

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


def contexts(text: str, spans: list[tuple[int, int]], *, quoting: bool = True) -> dict[int, Context]:
    """The :class:`Context` of each placeholder span ``(start, end)`` in ``text``, by start offset.

    A command in the grammar gets everything from :func:`amldist.rules.shell_grammar.analyse`;
    for one outside it the lexer finds each placeholder's quoting, unless ``quoting`` is False
    (``validate`` needs only the verdict: a benign value or not). The answer depends on the text
    alone, so it is kept: a component that many pipeline steps use is read once."""
    return dict(_contexts(text, tuple(spans), quoting))


@lru_cache(maxsize=256)
def _contexts(text: str, spans: tuple, quoting: bool) -> tuple:
    slots = grammar.analyse(text, list(spans))
    if isinstance(slots, dict):
        return tuple((start, Context(slot.quoting, slot.role, slot.via) if (slot := slots.get(start)) else
                      Context(UNPLACED)) for start, _ in spans)
    places = _Lexer(text, sorted(spans)).run() if quoting else {}
    found = []
    for start, _ in spans:
        place = places.get(start)
        found.append((start, Context(place.quoting if place else UNPLACED, grammar.OUTSIDE,
                                     f"a command outside the grammar amldist proves safe ({slots})",
                                     place.enclosing if place else None)))
    return tuple(found)
