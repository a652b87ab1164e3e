"""The spec model and its YAML I/O.

``load(path)`` / ``loads(text)`` return one of the dataclasses of
``amldist.model.specs``; ``spec.to_yaml()`` writes it back in a stable key order.
Validation lives in ``amldist.validate``: loading here checks only that the text
is a safe, well-formed YAML document of a kind amldist knows.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from amldist.errors import UserError
from amldist.model.files import read_text
from amldist.model.kinds import NOT_A_SPEC, NOT_A_SPEC_HINT, detect_kind
from amldist.model.yamlio import YamlDocument, YamlError, dump_yaml, load_yaml

if TYPE_CHECKING:  # annotations only; the model itself loads on first use
    from amldist.model.specs import Spec

# The dataclasses cost ~15 ms to create; the validate path never needs them, so
# they load on first use (PEP 562).
_MODEL_NAMES = {
    "CommandComponent", "CommandJob", "DistributedComponent", "Distribution", "Launcher", "Limits",
    "PipelineJob", "Resources", "Spec", "SPEC_CLASSES", "SweepJob",
}


def __getattr__(name):
    if name in _MODEL_NAMES:
        from amldist.model import specs as model

        return getattr(model, name)
    raise AttributeError(f"module 'amldist.model' has no attribute {name!r}")


__all__ = [
    "CommandComponent", "CommandJob", "DistributedComponent", "Distribution", "Launcher", "Limits",
    "PipelineJob", "Resources", "Spec", "SpecLoadError", "SweepJob", "YamlDocument", "YamlError",
    "detect_kind", "dump_yaml", "from_data", "load", "load_yaml", "loads", "parse_document", "read_document",
]


class SpecLoadError(UserError):
    """A file that cannot be read as a spec: ``file:line:col: message``."""

    def __init__(self, file: str, line: int, col: int, code: str, message: str, hint: str | None = None):
        super().__init__(f"{file}:{line}:{col}: {message}", hint=hint, exit_code=1)
        self.file, self.line, self.col, self.code = file, line, col, code


def from_data(data, *, file: str = "<data>") -> "Spec":
    kind = detect_kind(data)
    if kind is None:
        raise SpecLoadError(file, 1, 1, "not-a-spec", NOT_A_SPEC, hint=NOT_A_SPEC_HINT)
    from amldist.model.specs import SPEC_CLASSES

    if kind not in SPEC_CLASSES:  # a pipeline component: validated, but a step's component, never run alone
        raise SpecLoadError(file, 1, 1, "not-runnable", f"a {kind.replace('_', ' ')} is not a job: it runs as the "
                            "component of a pipeline step", hint="name it in a pipeline job's step "
                            "(type: pipeline, component: ./this.yml), or submit that pipeline job")
    return SPEC_CLASSES[kind].from_dict(data)


def parse_document(text: str, *, file: str = "<string>") -> YamlDocument:
    """The YAML document of a spec's text; SpecLoadError (with a position) when it is not one."""
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise SpecLoadError(file, exc.line, exc.col, exc.code, exc.message, exc.hint) from None
    if doc.data is None:
        raise SpecLoadError(file, 1, 1, "empty-file", "the file is empty")
    return doc


def read_document(path) -> tuple[str, YamlDocument]:
    """A spec file's text and document, with one clear error for an unreadable or malformed file.

    Only a regular file is read (a FIFO, a device, ``/dev/zero`` behind a link are refused by
    name, see ``amldist.model.files``); a byte-order mark is dropped, as ``validate`` does.
    """
    path = os.fspath(path)
    text = read_text(path)  # only a regular file, at most MAX_SPEC_BYTES: a FileProblem (UserError) otherwise
    return text, parse_document(text, file=path)


def loads(text: str, *, file: str = "<string>") -> "Spec":
    return from_data(parse_document(text, file=file).data, file=file)


def load(path) -> "Spec":
    return from_data(read_document(path)[1].data, file=os.fspath(path))
