"""Safe YAML loading that keeps where every key and value came from.

PyYAML's composer (libyaml when present) gives the node tree with marks; we
build plain Python data from it ourselves so that we can
- remember the line and column of each key and value (for FILE:LINE:COL),
- refuse duplicate keys (PyYAML silently keeps the last one),
- refuse tags that would construct Python objects (only YAML's core tags pass),
- bound alias expansion (a "billion laughs" document stops early),
- keep timestamps as the text written (JSON Schema and the service see strings),
- bound what a hostile file can cost before the work is done: its length, its
  nesting depth (checked while composing, see ``_compose``), the keys of one
  mapping, the digits of an integer; a NUL in a value is refused too (no path,
  command or environment variable can carry one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (AliasEvent, DocumentEndEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceEndEvent, SequenceStartEvent, StreamEndEvent)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

MAX_NODES = 200_000  # expanded nodes per document; real specs have a few hundred
MAX_DEPTH = 100
MAX_CHARS = 2 * 1024 * 1024  # a spec is a few KB; the largest real pipelines are ~100 KB
MAX_KEYS = 5_000  # keys of one mapping (each unknown key costs a did-you-mean search)
MAX_INT_CHARS = 40  # an integer's text; counts stop at 10000, Python refuses > 4300 digits

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null", "binary")}
_TIMESTAMP = _CORE + "timestamp"
_MERGE = _CORE + "merge"

Path = tuple  # of str keys and int indices


class YamlError(Exception):
    """A document that cannot be read as a spec; carries a 1-based position."""

    def __init__(self, code: str, message: str, line: int = 0, col: int = 0, hint: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.col = col
        self.hint = hint


@dataclass
class YamlDocument:
    data: Any
    values: dict = field(default_factory=dict)  # path -> (line, col) of the value
    keys: dict = field(default_factory=dict)  # path -> (line, col) of the key naming it

    def where(self, path) -> tuple[int, int]:
        """Best position for a path: its key, else its value, else the nearest ancestor's."""
        path = tuple(path)
        while True:
            if path in self.keys:
                return self.keys[path]
            if path in self.values:
                return self.values[path]
            if not path:
                return (1, 1)
            path = path[:-1]


def _mark(node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, doc: YamlDocument):
        self.doc = doc
        self.count = 0
        self.ctor = SafeConstructor()

    def build(self, node, path: Path, depth: int = 0):
        self.count += 1
        if self.count > MAX_NODES:
            raise YamlError(
                "yaml-too-large",
                f"document expands to more than {MAX_NODES} nodes (aliases nested too deep?)",
                *_mark(node),
                hint="remove the nested anchors/aliases",
            )
        if depth > MAX_DEPTH:
            raise YamlError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH} levels (recursive alias?)", *_mark(node))
        self.doc.values.setdefault(path, _mark(node))
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            self.check_tag(node, _CORE + "seq")
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            self.check_tag(node, _CORE + "map")
            return self.mapping(node, path, depth)
        raise YamlError("yaml-syntax", f"unsupported YAML node {type(node).__name__}", *_mark(node))

    def check_tag(self, node, expected: str) -> None:
        if node.tag != expected:
            raise YamlError(
                "yaml-unsafe-tag",
                f"tag {node.tag!r} is not allowed: amldist loads YAML safely and constructs no objects",
                *_mark(node),
                hint="remove the tag",
            )

    def scalar(self, node):
        if "\0" in node.value:
            raise YamlError("yaml-nul", "a value holds a NUL character (\\0), which no path, command or "
                            "environment variable can carry", *_mark(node), hint="remove the \\0")
        if node.tag == _TIMESTAMP:
            return node.value  # keep the text: specs carry strings, JSON has no dates
        if node.tag not in _SCALAR_TAGS:
            self.check_tag(node, _CORE + "str")
        if node.tag == _CORE + "int" and len(node.value) > MAX_INT_CHARS:
            raise YamlError("yaml-int-too-long", f"an integer of {len(node.value)} characters (at most "
                            f"{MAX_INT_CHARS})", *_mark(node), hint="quote it if it is meant as text")
        try:
            return self.ctor.construct_object(node)
        except ConstructorError as exc:
            raise YamlError("yaml-syntax", str(exc.problem or exc), *_mark(node)) from None
        except (ValueError, TypeError, KeyError, AttributeError):  # e.g. `!!int abc`, `!!bool maybe`
            short = node.tag[len(_CORE):] if node.tag.startswith(_CORE) else node.tag
            raise YamlError("yaml-bad-value", f"{_shorten(node.value)!r} is not a valid {short}", *_mark(node),
                            hint=f"remove the !!{short} tag or fix the value") from None

    def mapping(self, node, path: Path, depth: int) -> dict:
        if len(node.value) > MAX_KEYS:
            raise YamlError("yaml-too-many-keys", f"a mapping with {len(node.value)} keys (at most {MAX_KEYS})",
                            *_mark(node), hint="split the file; no Azure ML spec needs that many keys")
        result: dict = {}
        merged: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                for source in self.merge_sources(value_node, path, depth):
                    for key, value in source.items():
                        merged.setdefault(key, value)
                continue
            key = self.build(key_node, path + ("<key>",), depth + 1)
            if isinstance(key, (dict, list)):
                raise YamlError("yaml-syntax", "a mapping key must be a scalar", *_mark(key_node))
            if key in result:
                first = self.doc.keys.get(path + (key,), (0, 0))
                raise YamlError(
                    "duplicate-key",
                    f"duplicate key {key!r} (first at line {first[0]})",
                    *_mark(key_node),
                    hint="YAML keeps only one of them; remove or rename the other",
                )
            self.doc.keys[path + (key,)] = _mark(key_node)
            result[key] = self.build(value_node, path + (key,), depth + 1)
        for key, value in merged.items():
            result.setdefault(key, value)
        self.doc.values.pop(path + ("<key>",), None)
        return result

    def merge_sources(self, node, path: Path, depth: int):
        value = self.build(node, path, depth + 1)
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, dict) for s in sources):
            raise YamlError("yaml-syntax", "'<<' merge needs a mapping or a list of mappings", *_mark(node))
        return sources


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _compose(loader):
    """The root node of the one document in ``loader``'s event stream (None when empty).

    PyYAML's own composer (and libyaml's, in C) recurses once per nesting level,
    so ~25,000 nested ``[`` overflow the C stack and kill the process before any
    Python check runs. This is the same composition as ``yaml.composer.Composer``
    written as a loop over libyaml's (non-recursive) event stream with an explicit
    stack, so depth is checked as each collection opens and a deep document stops
    at ``MAX_DEPTH`` + 1 levels, after reading only that far. Events cost about
    what composing in C costs (measured on the conformance corpus).
    """
    loader.get_event()  # StreamStart
    if loader.check_event(StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    anchors: dict = {}
    stack: list = []  # open collections, each [node, its mapping key waiting for a value (or None)]
    root = None
    while True:
        event = loader.get_event()
        if isinstance(event, (SequenceEndEvent, MappingEndEvent)):
            stack.pop()[0].end_mark = event.end_mark
        elif isinstance(event, AliasEvent):
            if event.anchor not in anchors:
                raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
            root = _attach(stack, anchors[event.anchor], root)
        else:
            if event.anchor is not None and event.anchor in anchors:
                first = anchors[event.anchor].start_mark.line + 1
                raise YamlError("yaml-syntax", f"duplicate anchor &{_shorten(event.anchor)} (first at line {first})",
                                event.start_mark.line + 1, event.start_mark.column + 1, hint="rename one of them")
            if isinstance(event, ScalarEvent):
                kind, value = ScalarNode, event.value
            elif len(stack) >= MAX_DEPTH:
                raise YamlError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH} levels",
                                event.start_mark.line + 1, event.start_mark.column + 1,
                                hint="flatten the document; real specs nest a few levels")
            else:
                kind, value = (SequenceNode if isinstance(event, SequenceStartEvent) else MappingNode), []
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, event.value if kind is ScalarNode else None, event.implicit)
            if kind is ScalarNode:
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
            else:
                node = kind(tag, value, event.start_mark, None, flow_style=event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = node
            root = _attach(stack, node, root)
            if kind is not ScalarNode:
                stack.append([node, None])
        if not stack:
            break
    loader.get_event()  # DocumentEnd
    if not loader.check_event(StreamEndEvent):
        event = loader.get_event()
        raise ComposerError("expected a single document in the stream", None, "but found another document",
                            event.start_mark)
    return root


def _attach(stack: list, node, root):
    """Put ``node`` in the open collection on top of ``stack``; returns the root (``node`` when none is open)."""
    if not stack:
        return node
    top = stack[-1]
    if isinstance(top[0], SequenceNode):
        top[0].value.append(node)
    elif top[1] is None:
        top[1] = node  # a key: its value comes next
    else:
        top[0].value.append((top[1], node))
        top[1] = None
    return root


def load_yaml(text: str) -> YamlDocument:
    """Parse one YAML document; raise YamlError with a position on any trouble.

    An empty document gives ``data=None``.
    """
    if len(text) > MAX_CHARS:
        raise YamlError("yaml-too-large", f"the document is {len(text):,} characters long (at most {MAX_CHARS:,})",
                        1, 1, hint="a spec is a few KB; split it or move data out of it")
    try:
        loader = _Loader(text)
        try:
            root = _compose(loader)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        problem = exc.problem or str(exc)
        if "expected a single document" in (exc.context or "") + problem:
            raise YamlError("yaml-multiple-documents", "more than one YAML document in the file", line, col,
                            hint="keep one spec per file") from None
        raise YamlError("yaml-syntax", f"YAML syntax error: {problem}", line, col) from None
    except yaml.YAMLError as exc:
        raise YamlError("yaml-syntax", f"YAML error: {exc}") from None
    doc = YamlDocument(data=None)
    if root is not None:
        doc.data = _Builder(doc).build(root, ())
    return doc


class _SpecDumper(_Dumper):
    def ignore_aliases(self, data):  # a spec file never needs anchors
        return True


def _represent_str(dumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar(_CORE + "str", value, style=style)


_SpecDumper.add_representer(str, _represent_str)


def dump_yaml(data) -> str:
    """YAML text in the key order of ``data`` (callers order keys canonically)."""
    return yaml.dump(data, Dumper=_SpecDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)
