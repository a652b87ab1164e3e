"""Argument checks shared by the job builders: each mistake is one BuilderError line.

azure-ai-ml accepts counts of 0 or -4, ``shm_size: lots`` and negative timeouts and leaves
the service to refuse them after upload; the builders refuse them before anything is written.
"""

from __future__ import annotations

import datetime
import os
import re

from amldist.errors import UserError
from amldist.model.kinds import is_data_type
from amldist.rules import counts, shm_size as shm_size_rule

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" would let a final newline in


class BuilderError(UserError):
    """A builder argument that amldist validate (or Azure) would reject; ``field`` names it."""

    def __init__(self, field: str, message: str, hint: str | None = None):
        super().__init__(f"{field}: {message}", hint=hint)
        self.field = field


def count(field: str, value):
    """``value`` when it is a valid count for ``field`` (:mod:`amldist.rules.counts`), None when not
    given; otherwise a BuilderError naming the field."""
    if value is None:
        return None
    problem = counts.field_problem(field, value)
    if problem:
        raise BuilderError(field, problem)
    return counts.as_count(value)


def text(field: str, value, *, required: bool = False):
    if value is None:
        if required:
            raise BuilderError(field, "is required")
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise BuilderError(field, f"must be a non-empty string, got {value!r}")
    return value


def shm_size(value):
    """A docker size such as ``"16g"`` (:mod:`amldist.rules.shm_size`); surrounding spaces are dropped."""
    if value is None:
        return None
    if not (isinstance(value, str) and shm_size_rule.is_shm_size(value.strip())):
        raise BuilderError("shm_size", shm_size_rule.message(value), hint=shm_size_rule.HINT)
    return value.strip()


MAX_TIMEOUT_SECONDS = 86_399_999_999_999  # the schema's limits.timeout maximum


def timeout_seconds(value):
    """Seconds (int or a whole-second timedelta), above 0; Azure sends it as an ISO-8601 duration."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
        if seconds != int(seconds):
            raise BuilderError("timeout", f"must be whole seconds, got {value}")
        value = int(seconds)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BuilderError("timeout", f"must be a number of seconds, got {value!r}", hint="e.g. timeout=3600")
    if value <= 0:
        raise BuilderError("timeout", f"must be above 0 seconds, got {value}")
    if value > MAX_TIMEOUT_SECONDS:  # azure-ai-ml writes it as a duration of at most 999,999,999 days
        raise BuilderError("timeout", f"must be at most {MAX_TIMEOUT_SECONDS} seconds, got {str(value)[:30]}")
    return value


def environment(value):
    """A reference (``azureml:name:version`` / ``azureml:name@latest``) or an inline mapping."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict) and value:
        return dict(value)
    if value is None:
        raise BuilderError(
            "environment", "is required: a command job runs in an environment",
            hint="e.g. environment='azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest' or "
            "environment={'image': 'mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04'}",
        )
    raise BuilderError("environment", f"must be an environment reference or a mapping, got {value!r}")


def environment_variables(value) -> dict:
    """Names are identifiers; values strings (numbers are written as their text)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BuilderError("environment_variables", f"must be a mapping of names to strings, got {value!r}")
    out = {}
    for name, item in value.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise BuilderError("environment_variables", f"{name!r} is not a valid variable name")
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise BuilderError(
                f"environment_variables.{name}", f"must be a string, got {item!r}",
                hint="write the value as the text the process should see, e.g. '1'",
            )
        out[name] = item if isinstance(item, str) else str(item)
    return out


def _azure_port(value):
    """An azure.ai.ml Input/Output object as its YAML mapping (duck-typed: no azure import)."""
    to_dict = getattr(value, "_to_dict", None)
    if callable(to_dict) and type(value).__module__.startswith("azure.ai.ml"):
        data = to_dict()
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
    return None


def _ports(what: str, value, contents: str):
    """(name, field, item) for each entry of ``inputs``/``outputs``; azure.ai.ml objects as mappings."""
    if not isinstance(value, dict):
        raise BuilderError(what, f"must be a mapping of {what[:-1]} names to {contents}, got {value!r}")
    for name, item in value.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise BuilderError(what, f"{name!r} is not a valid {what[:-1]} name", hint="use letters, digits and _")
        converted = _azure_port(item)
        yield name, f"{what}.{name}", item if converted is None else converted


def inputs(value):
    """Literal values (str, int, float, bool) or mappings such as ``{"type": "uri_folder", "path": ...}``."""
    if value is None:
        return None
    out = {}
    for name, field, item in _ports("inputs", value, "values"):
        if isinstance(item, (str, int, float, bool)):
            out[name] = item
        elif isinstance(item, dict):
            if "type" not in item:
                raise BuilderError(field, "a mapping input needs a 'type'", hint="e.g. {'type': 'uri_folder', 'path': ...}")
            out[name] = dict(item)
        else:
            raise BuilderError(field, f"must be a literal value or a mapping with 'type', got {item!r}")
    return out or None


def outputs(value):
    """Mappings such as ``{"type": "uri_folder"}``; a bare type name is short for that mapping."""
    if value is None:
        return None
    out = {}
    for name, field, item in _ports("outputs", value, "mappings"):
        if is_data_type(item):  # a bare type name, in any letter case as a job's ports take it
            item = {"type": item}
        if not isinstance(item, dict) or "type" not in item:
            raise BuilderError(
                field, f"must be a mapping with 'type', got {item!r}", hint="e.g. {'type': 'uri_folder'}"
            )
        out[name] = dict(item)
    return out or None


def tags(value):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BuilderError("tags", f"must be a mapping, got {value!r}")
    return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()} or None
