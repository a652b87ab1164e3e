"""Sub-commands of the ``amldist`` CLI, one module each.

Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. Modules here import only the standard library
at import time: the CLI imports them all to build ``--help``, and heavy imports
(jsonschema, azure-ai-ml, torch) belong inside ``run``.
"""

NAMES = ("validate", "vm_sizes", "convert", "submit", "job")
BACKEND_COMMANDS = ("submit", "job")  # their parsers carry every backend's own flags (importing the backends)


def count_option(field: str):
    """argparse ``type=`` for the count called ``field``: :func:`amldist.rules.counts.count_option` (backends
    declare their flags with it too)."""
    from amldist.rules.counts import count_option as rule

    return rule(field)


ASSIGNMENTS = ("--input", "--set")


def stray_words(argv: list[str], extras: list[str]) -> tuple[str, str] | None:
    """The error and hint for words argparse did not place, when they follow an ``--input``/``--set`` pair: the
    shell split an unquoted value (``--input msg=hello world``). None for any other stray word, which gets
    argparse's usage. The stray words are not echoed: they may be the rest of a secret."""
    if not extras or extras[0] not in argv:
        return None
    at = argv.index(extras[0])
    before = argv[at - 2:at]
    option = next((o for o in ASSIGNMENTS if before[-1:] and before[-1].startswith(o + "=")), None)
    if option is None and len(before) == 2 and before[0] in ASSIGNMENTS:
        option = before[0]
    if option is None:
        return None
    name = (before[-1].removeprefix(option + "=")).partition("=")[0]
    return (f"{option} {name}=... is followed by {len(extras)} word(s) that are no option (not shown): the shell "
            "split its value at a space", f"quote the whole pair, e.g. {option} '{name}=two words'")
