"""Which of the four documents a mapping is, from ``type`` and ``$schema``.

``$schema`` wins when it names a kind (Azure's files carry it); otherwise
``type`` decides. A ``type: command`` file without ``$schema`` is a component
when it has a ``version`` or ``is_deterministic`` and none of the job-only keys,
and a job otherwise (what ``az ml job create`` would take it for).
"""

from __future__ import annotations

COMMAND_JOB = "command_job"
COMMAND_COMPONENT = "command_component"
PIPELINE_JOB = "pipeline_job"
DISTRIBUTED_COMPONENT = "distributed_component"

_SCHEMA_HINTS = (  # substring of a lower-cased $schema URL -> kind
    ("distributedcomponent", DISTRIBUTED_COMPONENT),
    ("commandcomponent", COMMAND_COMPONENT),
    ("commandjob", COMMAND_JOB),
    ("pipelinejob", PIPELINE_JOB),
)
# queue_settings is not here: components may carry it too (azure-ai-ml models it on both).
_JOB_ONLY_KEYS = ("compute", "experiment_name", "limits", "services", "identity")


def is_legacy_type(value) -> bool:
    return isinstance(value, str) and value.split("@", 1)[0].lower() == "distributedcomponent"


def detect_kind(data) -> str | None:
    """The kind of a loaded document, or None when it is not a spec amldist handles."""
    if not isinstance(data, dict):
        return None
    schema = data.get("$schema")
    if isinstance(schema, str):
        lowered = schema.lower()
        for hint, kind in _SCHEMA_HINTS:
            if hint in lowered:
                return kind
    type_ = data.get("type")
    if is_legacy_type(type_):
        return DISTRIBUTED_COMPONENT
    if isinstance(type_, str) and type_.lower() == "pipeline":
        return PIPELINE_JOB
    if (isinstance(type_, str) and type_.lower() == "command") or (type_ is None and "command" in data):
        looks_like_component = "version" in data or "is_deterministic" in data
        if looks_like_component and not any(key in data for key in _JOB_ONLY_KEYS):
            return COMMAND_COMPONENT
        return COMMAND_JOB
    if type_ is None and "launcher" in data:
        return DISTRIBUTED_COMPONENT
    return None


def distribution_kind(value) -> str | None:
    """A distribution ``type`` value lower-cased, as azure-ai-ml matches it; None for no text.
    The one place amldist folds its case (model, rules, backends and builders call this)."""
    return value.strip().lower() if isinstance(value, str) and value.strip() else None
