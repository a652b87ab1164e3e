"""Sub-commands of the ``amldist`` CLI, one module each.

Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. Modules here import only the standard library
at import time: the CLI imports them all to build ``--help``, and heavy imports
(jsonschema, azure-ai-ml, torch) belong inside ``run``.
"""

NAMES = ("validate", "skus", "convert", "submit")
