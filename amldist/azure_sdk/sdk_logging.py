"""How loud azure-ai-ml may be: its notices follow amldist's flags, not its own defaults.

azure-ai-ml, when imported, gives its ``azure.ai.ml`` logger an INFO level and a stderr handler of its
own, and logs "Class X: This is an experimental class..." at WARNING for schemas every job uses, on
success and error paths alike: nothing a user can act on. So:

- its warnings and log lines, the experimental notices included, print only with ``--debug`` (the CLI
  sets ``AMLDIST_DEBUG`` for it; ``--verbose`` shows the rest of the Azure SDK's warnings, not these):
  once azure-ai-ml is imported its logger is set back to ERROR, or with ``--debug`` to the ``azure``
  logger's level. amldist's own errors say what to do instead.

Standard library only, so the CLI can call :func:`quiet_azure_ai_ml` before azure-ai-ml is imported.
"""

from __future__ import annotations

import logging
import os
import sys

EXPERIMENTAL_LOGGER = "azure.ai.ml._utils._experimental"


def quiet_azure_ai_ml() -> None:
    """Apply the rules above; call it before importing azure-ai-ml and again after."""
    debug = bool(os.environ.get("AMLDIST_DEBUG"))
    logging.getLogger(EXPERIMENTAL_LOGGER).setLevel(logging.NOTSET if debug else logging.ERROR)
    if "azure.ai.ml" in sys.modules:  # its import set INFO: bring it back to what the flags ask
        level = logging.getLogger("azure").getEffectiveLevel() if debug else logging.ERROR
        logging.getLogger("azure.ai.ml").setLevel(level)
