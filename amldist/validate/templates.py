"""Environment references and unfilled template placeholders, each one clear diagnostic.

- ``invalid-environment`` (error): an ``environment:`` text that is neither
  ``azureml:...`` (``azureml:name:1``, ``azureml:name@latest``, an ARM id,
  ``azureml://registries/...``) nor ``file:...``. azure-ai-ml 1.35.2 refuses it at
  load time (``my-env:1``, a bare image name ``mcr.microsoft.com/...``): a
  Docker image goes under ``environment: {image: ...}``.
- ``unfilled-placeholder``: a value left as a template wrote it:
  ``<your environment name>``, ``your-environment-name``, or ``{your environment
  name}``, which YAML reads as a mapping with one key and no value. In
  ``environment:`` it is an error (azure-ai-ml refuses it; the schema's
  "missing required key build" about the mapping is dropped: this is the one
  mistake); anywhere else (``compute: <cluster>``, an environment variable) a
  warning, because azure-ai-ml loads the file and the service fails later.
Hand-written: these are shapes of text, not a grammar any library knows.
"""

from __future__ import annotations

import re

from amldist.diagnostics import ERROR, WARNING
from amldist.model.field_paths import field_path

_ANGLE = re.compile(r"^\s*(?:azureml:)?\s*<[^<>]*>\s*$", re.IGNORECASE)  # <name>, azureml:<name>
_YOUR = re.compile(r"(?:^|[\s_-])your[\s_-]+[a-z]", re.IGNORECASE)  # a key such as "your environment name"
_YOUR_VALUE = re.compile(r"^(?:azureml:)?\s*\{?\s*your[\s_-]+[\w\s.-]*\}?(?::\d+)?$", re.IGNORECASE)  # whole value
_SKIP_KEYS = frozenset(("command", "description", "display_name", "tags", "$schema", "args", "properties"))
_ENVIRONMENT_KEYS = frozenset(("name", "version", "image", "build", "conda_file", "description", "tags",
                               "os_type", "inference_config", "properties", "datastore", "intellectual_property"))


def placeholder_text(value) -> str | None:
    """The placeholder as written when ``value`` is one (a text or a ``{...}`` mapping), else None."""
    if isinstance(value, str):
        text = value.strip()
        if _ANGLE.match(text) or _YOUR_VALUE.match(text):
            return text
        return None
    if isinstance(value, dict) and len(value) == 1:
        (key, item), = value.items()
        if item is None and isinstance(key, str) and key not in _ENVIRONMENT_KEYS and (
                " " in key.strip() or _YOUR.search(key)):
            return "{" + key + "}"
    return None


def check_environment_reference(ctx, environment, path) -> bool:
    """Report a wrong ``environment`` at ``path``; True when reported (other checks then skip it)."""
    where = field_path(path)
    placeholder = placeholder_text(environment)
    hint = ("write azureml:<name>:<version> (a registered environment), "
            "azureml://registries/<registry>/environments/<name>/versions/<version>, "
            "or an inline mapping with image: <docker image>")
    if placeholder is not None:
        _drop_schema_errors(ctx, where)
        ctx.emit(path, ERROR, "unfilled-placeholder",
                 f"{where}: {placeholder!r} is an unfilled template placeholder", hint)
        return True
    if not isinstance(environment, str) or not environment.strip():
        return False
    text = environment.strip()
    if text.lower().startswith(("azureml:", "file:")) or "${{" in text:
        return False
    looks_like_image = "/" in text or text.count(":") == 1 and "." in text.split(":", 1)[0]
    ctx.emit(path, ERROR, "invalid-environment",
             f"{where}: {text!r} is not an environment reference azure-ai-ml accepts (it refuses it at load time)",
             f"a Docker image goes under {where}: {{image: {text}}}" if looks_like_image else
             f"write azureml:{text} for a registered environment, or {hint.split(', ', 1)[1]}")
    return True


def _drop_schema_errors(ctx, field: str) -> None:
    """Remove the schema's diagnostics about ``field`` (a placeholder read as a mapping is one mistake)."""
    prefix = field + "."
    ctx.out[:] = [d for d in ctx.out if not (d.field == field or (d.field or "").startswith(prefix))]


def check_placeholders(ctx, data, path=()) -> None:
    """``unfilled-placeholder`` warnings for values left as templates outside ``environment``."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _SKIP_KEYS or (key == "environment" and path[-1:] != ("environment_variables",)) or (
                    key in ("inputs", "outputs") and len(path) == 0):
                continue  # environment: its own error; declared ports: their descriptions and defaults
            found = placeholder_text(value) if not isinstance(value, dict) or key != "jobs" else None
            if found is not None and isinstance(value, (str, dict)):
                ctx.emit(path + (key,), WARNING, "unfilled-placeholder",
                         f"{field_path(path + (key,))}: {found!r} is an unfilled template placeholder",
                         "replace it with the real value before submitting")
            elif isinstance(value, (dict, list)):
                check_placeholders(ctx, value, path + (key,))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            if isinstance(item, (dict, list)):
                check_placeholders(ctx, item, path + (index,))
