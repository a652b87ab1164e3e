"""Sub-commands of the ``amldist`` CLI, one module each.

Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. Modules here import only the standard library
at import time: the CLI imports them all to build ``--help``, and heavy imports
(jsonschema, azure-ai-ml, torch) belong inside ``run``.
"""

NAMES = ("validate", "skus", "convert", "submit")


def positive_int(text: str) -> int:
    """argparse ``type=`` for counts: a whole number of at least 1, else a usage error (exit 2)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
