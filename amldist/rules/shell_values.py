"""Which value may go where in a shell command, and where Azure ML's shell would read it
differently: one rule, used by the local and Slurm backends (refuse, warn) and by ``validate``
(warn about the contexts, and about the defaults and values written in the spec).

- **Proven safe** (:meth:`amldist.rules.shell_command.Context.proven_safe`, the allow-list of
  :mod:`amldist.rules.shell_grammar`): any value, passed as a variable reference, arrives as its
  literal text. When Azure ML's shell would read the pasted text as more than that
  (:func:`azure_reading`), the local run still passes the text and warns, naming the input, what
  Azure ML would do and the fix.
- **Everywhere else**, whatever the command does: only a **benign** value is accepted, one made of
  ``A-Za-z0-9_./:=,+@%-`` and spaces (:data:`BENIGN`). It holds no quote, expansion, operator,
  redirection, pattern or line break, so every shell reads it as the same words pasted or
  expanded: exactly Azure ML's text. Any other value is refused, naming the input (never
  showing the value: it may be a secret). A local path amldist made may also name the script of
  a proven command (it is written as one quoted word).
- The code of ``python -c`` is code whatever program answers to ``python``: benign values only, and
  ``validate`` warns that the value runs as code, on Azure ML as here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amldist.rules import shell_grammar
from amldist.rules.shell_command import ANSI, COMMENT, DOUBLE, HEREDOC, RENDERABLE, SINGLE, UNQUOTED, Context

BENIGN_CHARACTERS = "letters, digits, spaces and _ . / : = , + @ % -"
BENIGN = re.compile(r"[A-Za-z0-9_./:=,+@%-]*(?: [A-Za-z0-9_./:=,+@%-]*)*")
# What bash arithmetic would run if a script used the value as a variable name: refused everywhere,
# since every value also lies in the environment, where arithmetic could reach it by name.
SUBSCRIPT_COMMAND = re.compile(r"\[.*?(\$\(|`)", re.S)


def is_benign(value: str) -> bool:
    return BENIGN.fullmatch(value) is not None


@dataclass(frozen=True)
class Verdict:
    """What to do with one value at one placeholder: ``refused`` (a message) or pass it, with
    ``warning`` (a message) when Azure ML would read it differently (``diverges``) or run it as code."""

    refused: str | None = None
    warning: str | None = None
    hint: str | None = None
    diverges: bool = False  # the warning is that Azure ML's shell reads more than the text a local run passes


def check(name: str, value: str, context: Context, *, is_path: bool = False) -> Verdict:
    """The verdict for ``value`` of ``inputs.<name>`` (or ``outputs.<name>``) at ``context``."""
    ref = "${{" + name + "}}"
    if not context.proven_safe():
        if context.role == shell_grammar.PROGRAM and is_path and context.quoting in RENDERABLE:
            return Verdict()  # a local path amldist made names the script of a proven command, as one quoted word
        if is_benign(value):
            return Verdict()
        return Verdict(
            refused=f"the command uses {ref} {context.describe()}; there amldist passes only a value made of "
                    f"{BENIGN_CHARACTERS}, and this value has other characters",
            hint=f"pass it as an argument of a program on amldist's list (python t.py --x \"{ref}\"), or give a "
                 "value without shell characters")
    if is_path:
        return Verdict()  # a local path: Azure ML passes its own mount path there, not this text
    reading = azure_reading(value, context)
    if reading is None:
        return Verdict()
    return Verdict(warning=f"{name}: Azure ML's shell would read the value as more than its text ({reading}); "
                           "a local run passes the literal text", hint=fix(ref, value, context), diverges=True)


INTERPRETER_HINT = "pass the value as an argument of the script (sys.argv) or an environment variable instead"


def interpreter_warning(ref: str, context: Context) -> str:
    return (f"the command uses {ref} as code for {context.via}: whatever the value says runs, on Azure ML as locally; "
            f"a local run accepts there only values made of {BENIGN_CHARACTERS}")


def context_warning(ref: str, context: Context) -> str | None:
    """``validate``'s warning for a placeholder outside the proven-safe contexts (None: proven safe)."""
    if context.role == shell_grammar.INTERPRETER_CODE:
        return interpreter_warning(ref, context)
    if context.proven_safe():
        return None
    return (f"the command uses {ref} {context.describe()}: a local run accepts there only values made of "
            f"{BENIGN_CHARACTERS}, and on Azure ML any other value would run as shell code")


_UNQUOTED = [
    (re.compile(r"[;&|\n]"), "it would end the command there and run the rest as another command"),
    (re.compile(r"\$\(|`"), "it would run a command substitution"),
    (re.compile(r"[<>]"), "it would redirect input or output"),
    (re.compile(r"['\"\\]"), "its quotes or backslashes would be read as shell quoting"),
    (re.compile(r"\$"), "it would expand a shell variable"),
    (re.compile(r"[()]"), "its parentheses are shell syntax"),
    (re.compile(r"(^|\s)#"), "it would start a comment"),
]
_QUOTED = {
    DOUBLE: [(re.compile(r'"'), "its \" would end the double quotes"),
             (re.compile(r"\$\(|`"), "it would run a command substitution"),
             (re.compile(r"\$"), "it would expand a shell variable"),
             (re.compile(r"\\"), "its backslashes would escape characters")],
    SINGLE: [(re.compile(r"'"), "its ' would end the single quotes")],
    ANSI: [(re.compile(r"'"), "its ' would end the $'...' quotes"),
           (re.compile(r"\\"), "its backslashes would be read as escapes")],
    HEREDOC: [(re.compile(r"\$\(|`"), "it would run a command substitution"),
              (re.compile(r"\$"), "it would expand a shell variable"),
              (re.compile(r"\\"), "its backslashes would escape characters")],
    COMMENT: [(re.compile(r"\n"), "a line break would end the comment and run the rest as a command")],
}


def azure_reading(value: str, context: Context) -> str | None:
    """What Azure ML's shell would do with the pasted text beyond reading it literally, or None.
    Splitting an unquoted value into words, and matching patterns, happen alike here and there."""
    if context.quoting == UNQUOTED:
        rules = _UNQUOTED
    else:
        rules = _QUOTED.get(context.quoting, [])
    return next((what for pattern, what in rules if pattern.search(value)), None)


def fix(ref: str, value: str, context: Context) -> str:
    """The fix for a divergence: quote the placeholder so Azure ML reads the value literally, or
    change the value."""
    double_ok = not re.search(r'["$`\\]', value)
    single_ok = "'" not in value
    if context.quoting == UNQUOTED and double_ok:
        return (f"write \"{ref}\" (in double quotes) so that Azure ML passes the text as one argument, "
                "or change the value")
    if context.quoting in (UNQUOTED, DOUBLE) and single_ok:
        return f"write '{ref}' (in single quotes) so that Azure ML passes the text literally, or change the value"
    if context.quoting == SINGLE and double_ok:
        return f"write \"{ref}\" (in double quotes) instead, or change the value"
    return "change the value: no quoting of the placeholder passes it literally on Azure ML"
