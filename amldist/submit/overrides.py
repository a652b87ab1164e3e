"""``--set PATH=VALUE`` and ``--input NAME=VALUE`` applied to a plain mapping.

``--set`` works like ``az ml job create --set``: PATH is a dotted path into the
document (``resources.instance_count``, ``environment_variables.SEED``), list
items by index (``jobs.train.args[0]`` or ``args.0``) and keys that contain dots
in brackets (``tags["team.name"]``). VALUE is read as one YAML value with the same
safe loader as the files, so ``4`` is an integer, ``true`` a boolean, ``'4'`` a
string and ``{type: mpi}`` a mapping; ``null`` removes the field. Missing
mappings on the way are created. Overrides apply to a copy: the file on disk is
never touched.

``--input NAME=VALUE`` sets one job input. VALUE is text, never read as YAML
(``0123`` stays '0123', ``1:30`` stays '1:30', ``yes`` stays 'yes'), except where the
input's type says otherwise: an integer, number or boolean input (declared, or a plain
value of that type in the job) reads it as one. A path input (a mapping with ``path``
or a ``uri_*``/``mltable``/model/``path`` ``type``) keeps its type and mode and gets the
new path; any other input becomes the literal value. Paths given on the command
line are relative to the current directory (as a shell user expects), unlike paths
written in the YAML, which are relative to the file; URIs (``azureml:``,
``https://``...) are kept as written.
"""

from __future__ import annotations

import copy
import os
import re

from amldist.errors import UserError
from amldist.rules import paths
from amldist.rules.suggestions import did_you_mean
from amldist.model.field_paths import field_path
from amldist.model.kinds import binds_path, type_word

_SEGMENT = re.compile(r"""\[(\d+)\]|\[(["'])(.*?)\2\]|([^.\[\]]+)""")


EXAMPLES = {"--set": "resources.instance_count=2", "--input": "epochs=2"}


def split_assignment(text: str, option: str) -> tuple[str, str]:
    """``"a.b=c"`` -> ``("a.b", "c")``; one clear error without ``=``."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        # Only the path-like start is echoed: the rest may be a secret typed with ':' or ' ' for '='.
        shown = re.match(r"""[\w.\[\]"'-]*""", text).group()
        shown = repr(shown) + (" (the rest not shown)" if shown != text else "") if shown else "(an empty name)"
        example = EXAMPLES.get(option, "NAME=VALUE")
        raise UserError(f"{option} {shown} is not NAME=VALUE", hint=f"write e.g. {option} {example}")
    return name.strip(), value


def parse_value(text: str):
    """One YAML value, read like the files are (safe tags only); unreadable text stays a string."""
    from amldist.model.yamlio import YamlError, load_yaml

    if text.strip() == "":
        return ""
    try:
        return load_yaml(text).data
    except YamlError:
        return text


def parse_path(path: str) -> list:
    """``'a.b[0]["c.d"]'`` -> ``['a', 'b', 0, 'c.d']``; a bare number segment stays a string
    and is used as an index only where the container is a list."""
    parts: list = []
    pos = 0
    while pos < len(path):
        if path[pos] == "." and parts:
            pos += 1
        match = _SEGMENT.match(path, pos)
        if not match or match.end() == pos:
            raise UserError(f"--set path {path!r} is malformed at character {pos + 1}",
                            hint="use dots between keys and [N] for list items, e.g. a.b[0].c")
        index, _, quoted, bare = match.groups()
        parts.append(int(index) if index is not None else (quoted if quoted is not None else bare))
        pos = match.end()
    if not parts:
        raise UserError("--set needs a path before '='")
    return parts


def set_path(data: dict, path: str, value) -> None:
    """Set (or, for ``None``, remove) the field at ``path`` in ``data``, in place."""
    parts = parse_path(path)
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = field_path(parts[:depth]) or "the document"
        if isinstance(node, list):
            index = _as_index(part, path, where)
            if index > len(node) or (index == len(node) and not last):
                raise UserError(f"--set {path}: {where} has {len(node)} item(s), no index {index}")
            if last:
                if value is None:
                    if index < len(node):
                        del node[index]
                elif index == len(node):
                    node.append(value)
                else:
                    node[index] = value
                return
            node = node[index]
        elif isinstance(node, dict):
            key = str(part)
            if last:
                if value is None:
                    node.pop(key, None)
                else:
                    node[key] = value
                return
            if not isinstance(node.get(key), (dict, list)):
                if key in node and node[key] is not None:
                    raise UserError(f"--set {path}: {field_path(parts[:depth + 1])} is a {type(node[key]).__name__}, "
                                    "not a mapping", hint=f"set {field_path(parts[:depth + 1])} itself instead")
                node[key] = {}
            node = node[key]
        else:  # pragma: no cover - guarded by the branch above
            raise UserError(f"--set {path}: {where} is not a mapping")


def apply_sets(data: dict, assignments: list[str]) -> dict:
    """A deep copy of ``data`` with every ``--set PATH=VALUE`` applied in order."""
    data = copy.deepcopy(data)
    for text in assignments or ():
        path, raw = split_assignment(text, "--set")
        set_path(data, path, parse_value(raw))
    return data


_INPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def blame_sets(diagnostics: list, assignments) -> list:
    """The findings about a field a ``--set`` wrote, told as that ``--set``'s, not at a line of the file: the
    file never held the value (an unknown key would otherwise point at the end of the file). Only the path
    is named, never the value (it may be a secret)."""
    import dataclasses

    written = [field_path(parse_path(split_assignment(a, "--set")[0])) for a in assignments]
    blamed = []
    for d in diagnostics:
        path = next((p for p in written if d.field and (d.field == p or d.field.startswith((p + ".", p + "[")))),
                     None)
        told = f"--set {path}: {d.message}"
        blamed.append(d if path is None else dataclasses.replace(d, line=0, col=0, message=told))
    return blamed


def parse_inputs(assignments: list[str]) -> dict:
    """``--input NAME=VALUE``... -> ``{name: text}`` (in order; last wins). The value stays the text
    typed (``0123`` is '0123', ``1:30`` is '1:30'): :func:`typed_value` reads it by the input's
    declared type. A name is an input name (letters, digits, _; dotted for a parameter group)."""
    values: dict = {}
    for text in assignments or ():
        name, raw = split_assignment(text, "--input")
        if not _INPUT_NAME.fullmatch(text.partition("=")[0].strip(" ")):  # a line break is no part of a name
            raise UserError(f"--input {text.partition('=')[0]!r} is not an input name",
                            hint="an input name is letters, digits and _, e.g. --input learning_rate=0.01")
        values[name] = raw
    return values


def typed_value(text, current):
    """A ``--input`` text as the input's type reads it: a number or boolean where the job's input
    is one (``n: 1`` or ``{type: integer}``), the text itself everywhere else."""
    if not isinstance(text, str):
        return text
    kind = (type_word(current.get("type")) or "") if isinstance(current, dict) else None
    if isinstance(current, dict):
        current = current.get("value", current.get("default"))
    stripped = text.strip()
    if (kind == "boolean" or (kind is None and isinstance(current, bool))) and stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    integer = re.fullmatch(r"[+-]?\d{1,300}", stripped, re.ASCII)
    if (kind == "integer" or (kind is None and type(current) is int)) and integer:
        return int(stripped)  # ASCII digits: '٣' is no number to Azure ML; 300: int() refuses 4,301 digits
    number = r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
    if (kind == "number" or (kind is None and type(current) is float)) and re.fullmatch(number, stripped, re.ASCII):
        return float(stripped)
    return text


def apply_inputs(data: dict, values: dict, *, cwd: str | None = None, file: str = "the job") -> dict:
    """A copy of a job mapping with ``values`` set as its inputs (see the module docstring)."""
    if not values:
        return data
    data = copy.deepcopy(data)
    inputs = data.get("inputs")
    if inputs is None:
        inputs = data["inputs"] = {}
    if not isinstance(inputs, dict):
        raise UserError(f"{file}: 'inputs' is not a mapping, so --input cannot set it")
    for name, value in values.items():
        if name not in inputs:
            guess = did_you_mean(name, list(inputs))  # the one did-you-mean (amldist.rules.suggestions)
            raise UserError(
                f"--input {name}: {file} declares no input named {name!r}" + (f" ({guess})" if guess else ""),
                hint="declared inputs: " + (", ".join(inputs) or "none"),
            )
        current = inputs[name]
        if is_path_input(current):
            updated = dict(current) if isinstance(current, dict) else {"type": "uri_folder"}
            updated["path"] = cli_path(value, cwd)
            inputs[name] = updated
        else:  # a literal, plain or typed ({type: integer, default: 1}): a plain value is valid in a job
            inputs[name] = typed_value(value, current)
    return data


def is_path_input(value) -> bool:
    """True for inputs that point at data rather than hold a literal value."""
    if isinstance(value, dict):
        return "path" in value or binds_path(value.get("type"))
    return False


def cli_path(value, cwd: str | None = None) -> str:
    """A path typed on the command line: URIs as written, local paths absolute against ``cwd``."""
    text = str(value)
    if not paths.is_local(text):
        return text
    return paths.local_path(text, cwd or os.getcwd())


def _as_index(part, path: str, where: str) -> int:
    if isinstance(part, int):
        return part
    if isinstance(part, str) and part.isdigit():
        return int(part)
    raise UserError(f"--set {path}: {where} is a list; use an index like [0], not {part!r}")
