"""The one home of the ``resources.shm_size`` rule: a number above 0, then a unit b, k, m or g.

The REST API's pattern for shmSize is ``\\d+[bBkKmMgG]`` and its description asks for a number
greater than 0 (Docker refuses ``--shm-size 0``); azure-ai-ml sends any text and leaves the service
to refuse it after the upload. amldist anchors the pattern (so ``16gb`` or ``1.5g`` are refused,
not cut short) and refuses 0 everywhere: the JSON Schema (``common.schema.json#/$defs/shmSize``
holds :data:`PATTERN`, :data:`EXPECTED` and :data:`HINT`; a test keeps them equal), the builders
and ``amldist convert --shm-size``.
"""

from __future__ import annotations

import re

PATTERN = "^0*[1-9][0-9]*[bBkKmMgG]$"
EXPECTED = "a number above 0 followed by a unit b, k, m or g, such as 16g"
HINT = "write a number above 0 followed by a unit b, k, m or g, e.g. 16g (Azure's default is 2g)"
_SHM_SIZE = re.compile(PATTERN)


def is_shm_size(value) -> bool:
    """Whether ``value`` is a shared-memory size Azure ML and Docker accept."""
    return isinstance(value, str) and _SHM_SIZE.match(value) is not None


def message(value) -> str:
    """What is wrong with ``value`` (one that :func:`is_shm_size` refuses), after the field's name."""
    return f"must be {EXPECTED}, got {value!r}"
