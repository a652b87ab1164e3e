"""YAML-ish booleans read the way azure-ai-ml reads them.

azure-ai-ml loads ``optional:`` (and its other boolean fields) with marshmallow's
``fields.Bool``, which takes more than YAML's ``true``/``false``: quoted words such as
``'true'``, ``'True'``, ``'yes'``, ``'on'``, ``'t'``, ``'y'``, ``'1'`` (and their false
counterparts) and the numbers 1 and 0. The word lists below are marshmallow 3's
``Boolean.truthy`` / ``Boolean.falsy`` as used by azure-ai-ml 1.35.2; matching is exact,
as there: ``'TRUE'`` counts, ``'tRuE'`` and ``' true'`` do not.

Anything else (``'maybe'``, a list) is *not a boolean*: ``read_flag`` returns None and the
caller decides (the JSON Schemas report such a value; rules treat it as "not set").
Standard library only: the validator imports this.
"""

from __future__ import annotations

TRUE_WORDS = frozenset({"t", "T", "true", "True", "TRUE", "on", "On", "ON", "y", "Y", "yes", "Yes", "YES", "1"})
FALSE_WORDS = frozenset({"f", "F", "false", "False", "FALSE", "off", "Off", "OFF", "n", "N", "no", "No", "NO", "0"})


def read_flag(value) -> bool | None:
    """True or False as azure-ai-ml would read ``value``; None when it would refuse it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return True if value in TRUE_WORDS else False if value in FALSE_WORDS else None
    if isinstance(value, (int, float)) and value in (0, 1):  # marshmallow: 1 == 1.0 is in its set
        return value == 1
    return None


def is_optional(port) -> bool:
    """Whether a declared input (a mapping) is optional: ``optional:`` reads as true."""
    return isinstance(port, dict) and read_flag(port.get("optional")) is True
