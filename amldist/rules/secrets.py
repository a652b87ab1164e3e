"""One masking rule for every place amldist prints or writes a job or an environment.

A value is secret when

- its **name** looks secret: it contains one of KEY, TOKEN, SECRET, PASSWORD, PASSWD,
  PASSPHRASE, CREDENTIAL, CONNECTION_STRING, SAS, AUTH, PRIVATE, CERT or JWT, in any case
  (``AZURE_STORAGE_KEY``, ``hf_token``, ``clientCredential``, ``OAUTH_CLIENT``), or has PWD
  or PAT as a whole word (``DB_PWD``, ``ado_pat``, ``GitHubPat``; not ``PATH`` nor ``PATTERN``);
- or it sits in **text** as a credential: the user part of a URL (``https://user:token@host``,
  ``https://ghp_x@github.com``) or a ``name=value`` pair whose name is secret or ``sig``
  (a SAS URL's ``?sv=...&sig=...``, ``AccountKey=...;`` in a connection string).

Matching by name over-masks a few harmless names (``KEYBOARD_LAYOUT``, ``AUTHOR``); printing a
secret is worse than hiding a layout. Masking replaces the secret part with ``***`` and keeps
the rest, so that a masked URL still says where it points. The processes and the service still
get the real values; only what amldist prints or writes to disk is masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Matched anywhere in a name (upper-cased).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
                "CONNECTION_STRING", "CONNECTIONSTRING", "SAS", "AUTH", "PRIVATE", "CERT", "JWT")
# Matched only as a whole word of the name: as substrings they are in PATH, PATTERN, SPATIAL...
SECRET_WHOLE_WORDS = ("PWD", "PAT")
MASK = "***"

_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # snake_case, kebab-case and camelCase words
_URL_USER = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/\s@?#'\"]+)@")
_PAIR = re.compile(r"""(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_.-]*)=([^&;\s'"]+)""")
# Fields of a secret input that describe it rather than hold it (a secret input keeps its type shown).
_DESCRIPTIVE = {"type", "jobinputtype", "mode", "optional", "description"}


def is_secret_name(name) -> bool:
    """True when a variable, input or field called ``name`` must not be printed."""
    text = str(name)
    if _SECRET_NAME.search(text):
        return True
    return any(word.upper() in SECRET_WHOLE_WORDS for word in _WORDS.findall(text))


def mask_text(text):
    """``text`` with credentials inside it replaced by ``***`` (URL users, secret ``name=value``
    pairs, SAS signatures); anything that is not a string is returned as is."""
    if not isinstance(text, str):
        return text
    text = _URL_USER.sub(lambda m: m.group(1) + MASK + "@", text)

    def pair(match: re.Match) -> str:
        name = match.group(1)
        if name.lower() == "sig" or is_secret_name(name):
            return f"{name}={MASK}"
        return match.group()

    return _PAIR.sub(pair, text)


def mask_value(name: str, value):
    """``value``, or ``***`` when ``name`` looks secret (an empty value stays empty); a value kept
    is still cleaned of credentials inside it (:func:`mask_text`)."""
    if value in (None, ""):
        return value
    if is_secret_name(name):
        return MASK
    return mask_text(value)


def mask_env(env: Mapping[str, object] | None) -> dict:
    """A copy of ``env`` with secret values masked (:func:`mask_value`); order kept."""
    return {name: mask_value(name, value) for name, value in (env or {}).items()}


def mask_tree(data, *, secret: bool = False):
    """A deep copy of a JSON-like tree (a job, a REST body) with every secret masked.

    A key that looks secret masks every value below it (a secret input ``{type: string,
    default: x}`` keeps its type and shows ``default: ***``); every other string is cleaned
    with :func:`mask_text`. Mapping keys are kept as written.
    """
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            below = secret or is_secret_name(key)
            if below and str(key).lower() in _DESCRIPTIVE and not isinstance(value, (dict, list)):
                out[key] = value
            else:
                out[key] = mask_tree(value, secret=below)
        return out
    if isinstance(data, list):
        return [mask_tree(item, secret=secret) for item in data]
    if secret and data not in (None, "") and not isinstance(data, bool):
        return MASK
    return mask_text(data)
