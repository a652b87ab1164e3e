"""The backends' own flags on ``amldist submit`` and ``amldist job VERB``, and the rule that refuses another's.

Each backend declares its flags as data (:class:`amldist.backends.base.Flag`: ``submit_flags`` fill its
options, ``job_flags`` say where its jobs are) and may name a flag that picks it (``select_flag``:
``--local``, ``--slurm``, aliases of ``--backend NAME``). This module adds them to a parser, each backend's
in its own group, every one with no default (argparse's ``SUPPRESS``), so a flag on the parsed
arguments is a flag the user gave. A flag given for a backend other than the one the job goes to is one
error line (exit 2) naming the flag, its backend and the chosen one: ``--partition`` with ``--local`` is
refused, never ignored.

The backends are loaded (imported) only for the commands that need them (``amldist submit``, ``amldist
job``, and the completion script); a backend that cannot be loaded is one ``warning:`` line and is left
out, so one broken package never breaks the others.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from amldist.errors import UserError


@dataclass(frozen=True)
class Declared:
    """What the backends declared for one command: each loaded backend's class, and who owns each flag."""

    classes: dict  # name -> Backend subclass
    owners: dict  # dest -> (the flag as the user writes it, {backend names})


_WARNED: set[str] = set()  # a broken backend is said once per process, not once per parser (`job` has six)


def _loaded_classes() -> dict:
    """Every backend that loads (looked up each time: what the registry's module holds now)."""
    from amldist.backends import load, names

    classes = {}
    for name in names():
        try:
            classes[name] = load(name)
        except UserError as exc:
            if exc.message not in _WARNED:
                _WARNED.add(exc.message)
                print(f"warning: {exc.message}; left out", file=sys.stderr)
    return classes


def add(parser, verb: str) -> Declared:
    """Add ``--backend``, the backends' select flags and their ``verb`` flags (``"submit"`` or ``"job"``)."""
    classes = _loaded_classes()
    parser.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS,
                        help=("where the job goes: " if verb == "submit" else "where the job is: ")
                        + ", ".join(classes) + " (a package adds its own by entry point)")
    owners: dict = {}
    added: set[str] = set()
    for name, cls in classes.items():
        group = parser.add_argument_group(f"{name} backend" + (f" ({cls.select_flag})" if cls.select_flag else ""))
        if cls.select_flag:
            _add_flag(group, (cls.select_flag,), f"select_{name}", added,
                      {"action": "store_true", "help": f"the {name} backend (as --backend {name})"}, name)
        for flag in cls.submit_flags if verb == "submit" else cls.job_flags:
            owners.setdefault(flag.dest, (flag.names[-1], set()))[1].add(name)
            _add_flag(group, flag.names, flag.dest, added, {"help": flag.help, **flag.kwargs}, name)
    return Declared(classes, owners)


def _add_flag(group, names: tuple, dest: str, added: set, kwargs: dict, backend: str) -> None:
    """One flag, once: a flag two backends declare is added by the first and shared."""
    if all(n in added for n in names):
        return
    try:
        group.add_argument(*names, dest=dest, default=argparse.SUPPRESS, **kwargs)
    except (argparse.ArgumentError, TypeError, ValueError) as exc:
        print(f"warning: backend {backend!r}: flag {'/'.join(names)} cannot be added ({exc}); left out",
              file=sys.stderr)
        return
    added.update(names)


def selected(args, declared: Declared) -> tuple[str, str] | None:
    """(the backend ``--backend NAME`` or a select flag names, the flag as given); None: neither; one line
    for two."""
    from amldist.backends import load

    named = getattr(args, "backend", None)
    picked = [n for n in declared.classes if getattr(args, f"select_{n}", False)]
    choices = ([named] if named else []) + [n for n in picked if n != named]
    if len(choices) > 1:
        said = [f"--backend {named}"] if named else []
        said += [declared.classes[n].select_flag for n in picked if n != named]
        raise UserError(f"{' and '.join(said)} are given together", hint="pick one backend")
    if named and named not in declared.classes:
        load(named)  # the reason it is missing, in one line (unknown, or a broken entry point)
    if not choices:
        return None
    return choices[0], f"--backend {named}" if named else declared.classes[choices[0]].select_flag


def given_for(args, declared: Declared) -> dict:
    """{backend name: [flags given that only it owns]} for the backend flags on ``args``."""
    found: dict = {}
    for dest, (shown, owners) in declared.owners.items():
        if hasattr(args, dest):
            found.setdefault(frozenset(owners), []).append(shown)
    return found


def refuse_others(args, declared: Declared, chosen: str, why: str) -> None:
    """One line (exit 2) when a flag of another backend is given: ``chosen`` is where the job goes, ``why``
    says what chose it (``--local``, ``compute: local``, the default)."""
    foreign = [(flag, sorted(owners)) for owners, flags in given_for(args, declared).items() if chosen not in owners
               for flag in flags]
    if not foreign:
        return
    said = " and ".join(f"{flag} (a flag of the {' and '.join(owners)} backend{'s' if len(owners) > 1 else ''})"
                        for flag, owners in foreign)  # in the registry's order
    backend = foreign[0][1][0]
    select = declared.classes[backend].select_flag
    raise UserError(f"{said} given, but this goes to the {chosen} backend ({why})",
                    hint=f"drop {foreign[0][0]}, or choose its backend: --backend {backend}"
                    + (f" (or {select})" if select else ""))
