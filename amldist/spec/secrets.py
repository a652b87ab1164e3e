"""Masking values that look secret wherever amldist prints an environment.

A variable is secret when its name contains one of KEY, TOKEN, SECRET, PASSWORD,
CONNECTION_STRING or SAS, in any case (``AZURE_STORAGE_KEY``, ``hf_token``,
``DB_PASSWORD``, ``SAS_URL``...). Matching by name over-masks a few harmless names
(``KEYBOARD_LAYOUT``, ``MONKEY``); printing a secret is worse than hiding a layout.
Only printing is affected: the processes and the service still get the real values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CONNECTION_STRING", "SAS")
MASK = "***"

_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True when a variable called ``name`` must not be printed."""
    return bool(_SECRET_NAME.search(str(name)))


def mask_value(name: str, value):
    """``value``, or ``***`` when ``name`` looks secret (an empty value stays empty)."""
    if is_secret_name(name) and value not in (None, ""):
        return MASK
    return value


def mask_env(env: Mapping[str, object] | None) -> dict:
    """A copy of ``env`` with secret-looking values replaced by ``***``; order kept."""
    return {name: mask_value(name, value) for name, value in (env or {}).items()}


def mask_tree(data):
    """A deep copy of a JSON-like tree in which every mapping is masked with :func:`mask_env`.

    For printing a whole REST body: ``environment_variables`` and ``environmentVariables``
    mappings nested anywhere are covered, and so is any other key that looks secret.
    """
    if isinstance(data, dict):
        return {k: (MASK if is_secret_name(k) and isinstance(v, (str, int, float)) and v != "" else mask_tree(v))
                for k, v in data.items()}
    if isinstance(data, list):
        return [mask_tree(item) for item in data]
    return data
