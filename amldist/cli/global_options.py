"""Options every ``amldist`` command takes, anywhere on the line, as ``az`` takes them:
``--verbose``, ``--debug``, ``--only-show-errors``; and ``--print-completion SHELL``.

They are taken out of argv before argparse sees it (argparse would accept a top-level option only
before the sub-command, and ``az ml job show -n X --debug`` puts it last). What they do:

- default: Azure SDK loggers (``azure``, ``azure.identity``) show errors only, so a missing login
  is amldist's one ``error:`` line with its hint, not azure-identity's page of attempts first;
- ``--verbose``: amldist's own INFO logs; the Azure SDK's warnings (azure-ai-ml's own only with ``--debug``);
- ``--debug``: everything, the Azure SDK's HTTP logging included, and a traceback for a bug
  (as ``AMLDIST_DEBUG=1``);
- ``--only-show-errors``: no ``warning:`` or ``note:`` lines (on stderr, and on stdout where it is text, as a
  dry run's is; validate drops its warnings and notes itself), no Python warnings.

Completion scripts come from ``shtab`` (a maintained library; imported only for
``--print-completion``): they are generated from the parser once, so a TAB runs no Python.
"""

from __future__ import annotations

import os
import sys
import warnings

FLAGS = ("--verbose", "--debug", "--only-show-errors")
EXIT_CODES = """\
exit codes (every command):
  0    done (the job completed; the specs are valid)
  1    the work failed: an invalid spec, a failed or timed-out job, Azure ML refused a request
  2    a usage or setup mistake: a wrong option, a file or job that does not exist, no workspace, no login
  3    an internal error of amldist (--debug shows the traceback; please report it)
  128+N  stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)"""


def take(argv: list[str]) -> tuple[list[str], set[str]]:
    """``argv`` without the global flags (up to a ``--``), and the flags found."""
    found: set[str] = set()
    kept: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            kept += argv[index:]
            break
        if arg in FLAGS:
            found.add(arg)
        else:
            kept.append(arg)
    return kept, found


def add_to(parser) -> None:
    """Show the flags in ``amldist --help`` (they are parsed by :func:`take`)."""
    group = parser.add_argument_group("global options (accepted anywhere on the line)")
    group.add_argument("--verbose", action="store_true", help="more logging")
    group.add_argument("--debug", action="store_true", help="all logging, the Azure SDK's included; tracebacks")
    group.add_argument("--only-show-errors", action="store_true", help="no warnings or notes")
    group.add_argument("--print-completion", choices=("bash", "zsh", "tcsh"), metavar="SHELL",
                       help="print a completion script (bash, zsh, tcsh): amldist --print-completion bash "
                       "> /etc/bash_completion.d/amldist")


# the commands that may talk to Azure (and so import azure-ai-ml and azure-identity, which log)
AZURE_COMMANDS = ("submit", "job")


def apply(found: set[str], command: str | None = None) -> None:
    """Set the logging for the flags ``found`` (see the module docstring). Without a flag and for a
    command that never reaches Azure (``validate``, ``convert``, ...), logging is left alone (and
    not even imported: it costs the validator's start-up a few milliseconds)."""
    if not found and command not in AZURE_COMMANDS:
        return
    import logging

    from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml

    if "--debug" in found:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("azure").setLevel(logging.DEBUG)
        os.environ["AMLDIST_DEBUG"] = "1"
        return
    if "--verbose" in found:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("azure").setLevel(logging.WARNING)
    else:
        # azure-identity logs every credential it tried at WARNING; amldist's error says what to do.
        logging.getLogger("azure").setLevel(logging.ERROR)
        logging.getLogger("azure.identity").setLevel(logging.CRITICAL)
    quiet_azure_ai_ml()  # azure-ai-ml's "experimental class" notices, whichever command imports it
    if "--only-show-errors" in found:
        logging.getLogger().setLevel(logging.ERROR)
        warnings.simplefilter("ignore")
        sys.stderr = ErrorsOnly(sys.stderr)
        if command not in STDOUT_IS_DATA:  # a dry run's text prints its warnings and notes on stdout
            sys.stdout = ErrorsOnly(sys.stdout, data=True)


# Commands whose stdout is a document (YAML, validate's own report, which filters itself): never filtered.
STDOUT_IS_DATA = ("convert", "validate")


class ErrorsOnly:
    """A stream that drops ``warning:`` and ``note:`` lines (whole lines; the rest passes through). On stdout
    (``data``) only lines that start with ``warning: ``/``note: `` at their first column are dropped, so an
    indented key or a JSON string that reads ``note:`` is never lost."""

    def __init__(self, stream, *, data: bool = False):
        self.stream = stream
        self.data = data
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if not self._dropped(line):
                self.stream.write(line + "\n")
        return len(text)

    def _dropped(self, line: str) -> bool:
        if self.data:
            return line.startswith(("warning: ", "note: "))
        return line.lstrip().startswith(("warning:", "note:", "warning ", "note ")) or ": warning " in line

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


# Which arguments complete file or folder names, by their metavar (the sub-commands' modules need no
# shtab import, and a new path argument named FILE, PATH, OUT or DIR completes without more code).
FILE_METAVARS = ("FILE", "PATH", "OUT", "LEGACY.yaml")
DIRECTORY_METAVARS = ("DIR",)


def print_completion(parser, shell: str) -> int:
    try:
        import shtab
    except ImportError:
        from amldist.errors import UserError

        raise UserError("completion scripts need shtab, which is not installed", hint="pip install shtab") from None
    mark_paths(parser, shtab)
    print(shtab.complete(parser, shell=shell))
    return 0


def mark_paths(parser, shtab) -> None:
    """Give every path argument of ``parser`` and its sub-commands shtab's file or folder completion."""
    for action in parser._actions:
        if action.choices and hasattr(action.choices, "values"):  # sub-commands: their own parsers
            for sub in set(action.choices.values()):
                mark_paths(sub, shtab)
        elif action.metavar in FILE_METAVARS:
            action.complete = shtab.FILE
        elif action.metavar in DIRECTORY_METAVARS:
            action.complete = shtab.DIRECTORY
