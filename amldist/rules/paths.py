"""Where a path-like value of a spec points: this machine, a remote URI, or an Azure ML asset.

The one rule every part of amldist uses (validate's missing-file warnings, the local backend's
``code:`` and inputs, the Azure snapshot, convert's path rebasing, ``--input`` on the command
line), so that they all give the same answer for the same text:

- ``LOCAL``: a relative or absolute path (``src``, ``./src``, ``../data``, ``/abs``, ``~/x``),
  a Windows drive path (``C:\\data``, ``C:/data``), or a ``file:`` URI (``file:./src``,
  ``file:///abs``), as azure-ai-ml reads ``file:`` for code and environments;
- ``ASSET``: anything Azure ML resolves in a workspace or registry: ``azureml:name:1``,
  ``azureml:name@latest``, ``azureml://datastores/...``, ``azureml://registries/...``;
- ``REMOTE``: any other URI (``https://``, ``wasbs://``, ``abfss://``, ``s3://``,
  ``hdfs:/data``, ``git+https://``) and scp-style git addresses (``git@github.com:o/r.git``).

``~`` is no home folder here, as in azure-ai-ml (which joins every path with ``pathlib``, never
``expanduser``): ``code: ~`` names a folder called ``~`` beside the spec, not the whole home, and
``~/x`` is the folder ``x`` inside it. Only a shell expands ``~``, before amldist sees the text.

A scheme is what RFC 3986 allows before ``:`` (a letter, then letters, digits, ``+``, ``-``,
``.``); one letter before ``:`` is a Windows drive, not a scheme.
"""

from __future__ import annotations

import os
import re

LOCAL = "local"
REMOTE = "remote"
ASSET = "asset"

_DRIVE = re.compile(r"^[A-Za-z]:([\\/]|$)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SCP_GIT = re.compile(r"^[\w.-]+@[\w.-]+:")  # user@host:path, git's scp-like syntax
_FILE = re.compile(r"^file:(//)?", re.IGNORECASE)


def kind_of(value: str) -> str:
    """``LOCAL``, ``REMOTE`` or ``ASSET`` for a path-like text (see the module docstring)."""
    text = value.strip()
    if _DRIVE.match(text) or _FILE.match(text):
        return LOCAL
    if text[:8].lower() == "azureml:":
        return ASSET
    if _SCHEME.match(text) or _SCP_GIT.match(text):
        return REMOTE
    return LOCAL


def is_local(value) -> bool:
    """True for a non-empty text that names a place on this machine."""
    return isinstance(value, str) and bool(value.strip()) and kind_of(value) == LOCAL


def without_file_scheme(value: str) -> str:
    """``file:./src`` -> ``./src``; ``file:///abs`` -> ``/abs``; other text unchanged."""
    return _FILE.sub("", value.strip(), count=1)


def local_path(value: str, base_dir: str) -> str:
    """The absolute, normalised path a LOCAL value names, relative ones read against ``base_dir``."""
    return os.path.normpath(os.path.join(base_dir, without_file_scheme(value)))  # no expanduser: see above


def leaves_folder(value) -> bool:
    """Whether a relative LOCAL path climbs out of the folder it is relative to (``../x``, ``a/../../x``);
    an absolute path names its own place and does not count."""
    if not is_local(value):
        return False
    plain = without_file_scheme(value).replace("\\", "/")
    if os.path.isabs(plain) or _DRIVE.match(plain):
        return False
    return os.path.normpath(plain).replace(os.sep, "/").split("/", 1)[0] == ".."


def tilde_note(value) -> str:
    """What to add to "does not exist" for a path written with ``~`` (see the module docstring), else ""."""
    plain = without_file_scheme(value) if isinstance(value, str) else ""
    return "; '~' is not the home folder in a spec (azure-ai-ml reads a folder named '~')" \
        if plain.startswith("~") else ""


def rebase(value, from_dir: str, to_dir: str):
    """A relative LOCAL value written for a file in ``from_dir``, rewritten for one in ``to_dir``
    (``/``-separated, ``file:`` kept); anything else is returned unchanged."""
    if not is_local(value):
        return value
    text = value.strip()
    plain = without_file_scheme(text)
    if os.path.isabs(plain) or _DRIVE.match(plain):
        return value
    moved = os.path.relpath(os.path.join(from_dir, plain), to_dir).replace(os.sep, "/")
    return text[: len(text) - len(plain)] + moved
