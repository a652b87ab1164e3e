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
