"""Safe YAML loading that keeps where every key and value came from.

libyaml's parser (PyYAML's when libyaml is absent) gives the events with marks; we
build plain Python data from them ourselves, in one loop, so that we can
- remember the line and column of each key and value (for FILE:LINE:COL),
- refuse duplicate keys (PyYAML silently keeps the last one),
- refuse tags that would construct Python objects (only YAML's core tags pass),
- bound alias expansion (a "billion laughs" document stops early),
- keep timestamps as the text written (JSON Schema and the service see strings),
- bound what a hostile file can cost before the work is done: its length, its
  nesting depth (checked as each collection opens, see ``_Builder``), the keys of one
  mapping, the digits of an integer; a NUL in a value is refused too (no path,
  command or environment variable can carry one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (AliasEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceEndEvent, SequenceStartEvent, StreamEndEvent)
from yaml.nodes import ScalarNode

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
_STR = "tag:yaml.org,2002:str"
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
    # a key written twice with the same value (azure-ai-ml's loader keeps one, nothing is lost): (path, (line, col)
    # of the second, line of the first), a warning for the validator; with another value it is an error
    repeated: list = field(default_factory=list)
    # what the loader met on its way, so that the validator need not walk the data again to find out
    non_string_keys: bool = False  # a key YAML reads as no string (``1:``, ``yes:``, ``null:``)
    non_json: bool = False  # a value JSON has no word for: !!binary data, a non-finite number (.inf, .nan, 1e400)

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


def _at(mark) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1)


class _Frame:
    """An open mapping or sequence while its events arrive."""

    __slots__ = ("value", "is_list", "path", "mark", "anchor", "size", "key", "key_mark", "merging", "merged", "written",
                 "again", "again_text")

    def __init__(self, value, path: Path, mark, anchor):
        self.value = value  # the dict or list being filled
        self.is_list = isinstance(value, list)
        self.path = path
        self.mark = mark
        self.anchor = anchor
        self.size = 1  # nodes inside, aliases expanded (what walking the result will cost)
        self.key = _NO_KEY  # a mapping's key waiting for its value
        self.key_mark = None
        self.merging = False  # the waiting key is '<<'
        self.merged: list = []  # mappings merged in with '<<', applied when the mapping ends
        self.written: dict = {}  # a key that is no string (True, 1, None) -> its text as written (``yes``)
        self.again = False  # the waiting key is already in the mapping (its value decides: see place)
        self.again_text = None  # the repeated key's text as written, for the message when its value differs


_NO_KEY = object()
_UNKNOWN = object()  # a scalar whose value _PLAIN does not hold


class _Builder:
    """Plain Python data straight from libyaml's event stream, in one loop.

    PyYAML's composer (and libyaml's, in C) recurses once per nesting level, so ~25,000
    nested ``[`` overflow the C stack and kill the process before any Python check runs; it
    also builds a node tree that is then walked again to construct the data. Here the events
    are read in a loop with an explicit stack, so depth is checked as each collection opens
    (a deep document stops at ``MAX_DEPTH`` + 1 levels, after reading only that far), and the
    data, the positions and every check are made in the same pass, about twice as fast as
    composing then constructing.
    """

    def __init__(self, loader, doc: YamlDocument):
        self.loader = loader
        self.doc = doc
        self.ctor = SafeConstructor()
        self.anchors: dict = {}  # anchor -> (value, size); only finished values can be aliased
        self.open_anchors: set = set()
        self.nodes = 0
        self.text = None  # the text of the last scalar, as written (a key's, for messages)

    def run(self):
        loader = self.loader
        loader.get_event()  # StreamStart
        if loader.check_event(StreamEndEvent):
            return None
        loader.get_event()  # DocumentStart
        stack: list[_Frame] = []
        get_event, place = loader.get_event, self.place
        while True:
            event = get_event()
            kind = type(event)
            if kind is ScalarEvent:
                text = event.value
                value = _PLAIN.get(text, _UNKNOWN) if event.tag is None and event.implicit[0] else _UNKNOWN
                if event.anchor is not None or value is _UNKNOWN:
                    value = self.scalar(event)
                self.text = text
                if not stack:
                    return self.finish(value, 1, event.start_mark)
                place(stack[-1], value, 1, event.start_mark)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                stack.append(self.open(stack, event, kind is MappingStartEvent))
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                frame = stack.pop()
                if frame.merged:
                    for source in frame.merged:
                        for key, value in source.items():
                            frame.value.setdefault(key, value)
                if frame.anchor is not None:
                    self.open_anchors.discard(frame.anchor)
                    self.anchors[frame.anchor] = (frame.value, frame.size)
                if not stack:
                    return self.finish(frame.value, frame.size, frame.mark)
                place(stack[-1], frame.value, frame.size, frame.mark, True)
            elif kind is AliasEvent:
                value, size = self.alias(event)
                if not stack:
                    return self.finish(value, size, event.start_mark)
                place(stack[-1], value, size, event.start_mark)

    def finish(self, root, size, mark):
        """The document's value, once its last event is read; a second document is refused."""
        self.nodes += size
        if self.nodes > MAX_NODES:
            raise _too_large(mark)
        self.doc.values.setdefault((), _at(mark))
        self.loader.get_event()  # DocumentEnd
        if not self.loader.check_event(StreamEndEvent):
            event = self.loader.get_event()
            raise ComposerError("expected a single document in the stream", None, "but found another document",
                                event.start_mark)
        return root

    def open(self, stack, event, mapping: bool) -> _Frame:
        """The frame of a mapping or sequence that starts now, once its depth, tag and anchor pass."""
        if event.anchor is not None:
            self._anchor_check(event)
        if len(stack) >= MAX_DEPTH:
            raise _too_deep(*_at(event.start_mark))
        expected = _CORE + ("map" if mapping else "seq")
        if event.tag not in (None, "!", expected):
            raise YamlError("yaml-unsafe-tag", f"tag {event.tag!r} is not allowed: amldist loads YAML safely "
                            "and constructs no objects", *_at(event.start_mark), hint="remove the tag")
        path = self.child_path(stack, event.start_mark)
        self.doc.values.setdefault(path, _at(event.start_mark))
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        return _Frame({} if mapping else [], path, event.start_mark, event.anchor)

    def alias(self, event) -> tuple:
        """(value, size) of the anchored value an alias names."""
        if event.anchor in self.open_anchors:
            raise YamlError("yaml-too-deep", f"alias *{_shorten(event.anchor)} refers to a collection that "
                            "holds it (a recursive alias)", *_at(event.start_mark), hint="remove the alias")
        if event.anchor not in self.anchors:
            raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
        self.text = None  # an alias key has no text of its own
        return self.anchors[event.anchor]

    def _anchor_check(self, event) -> None:
        anchor = event.anchor
        if anchor is not None and (anchor in self.anchors or anchor in self.open_anchors):
            first = self.doc.values.get(("<anchor>", anchor))
            raise YamlError("yaml-syntax", f"duplicate anchor &{_shorten(anchor)}"
                            + (f" (first at line {first[0]})" if first else ""),
                            *_at(event.start_mark), hint="rename one of them")

    def child_path(self, stack, mark) -> Path:
        """The path of the collection that starts now (a mapping waiting for a key gets no collection)."""
        if not stack:
            return ()
        top = stack[-1]
        if isinstance(top.value, list):
            return top.path + (len(top.value),)
        if top.key is _NO_KEY:
            raise YamlError("yaml-syntax", "a mapping key must be a scalar", *_at(mark))
        return top.path + (top.key,)

    def place(self, top: _Frame, value, size, mark, built: bool = False) -> None:
        """Put a finished value (``size`` nodes) into the open collection ``top``.

        The common cases (an item, a key, a key's value) come first and compute positions inline: this runs
        once per node of every spec ``validate`` reads."""
        self.nodes += size  # aliases expanded
        if self.nodes > MAX_NODES:
            raise _too_large(mark)
        top.size += size
        if top.key is _NO_KEY:
            if not top.is_list:
                self.place_key(top, value, mark)
                return
            if not built:
                self.doc.values.setdefault(top.path + (len(top.value),), (mark.line + 1, mark.column + 1))
            top.value.append(value)
        elif top.merging:
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(source, dict) for source in sources):
                raise YamlError("yaml-syntax", "'<<' merge needs a mapping or a list of mappings", *_at(mark))
            top.merged.extend(sources)
            top.merging, top.key = False, _NO_KEY
        elif top.again:
            self._repeated(top, value)
        else:
            path = top.path + (top.key,)
            key_mark = top.key_mark
            self.doc.keys[path] = (key_mark.line + 1, key_mark.column + 1)
            if not built:
                self.doc.values.setdefault(path, (mark.line + 1, mark.column + 1))
            top.value[top.key] = value
            top.key = _NO_KEY

    def place_key(self, top: _Frame, value, mark) -> None:
        """A mapping's key arrives: its value comes next."""
        if isinstance(value, (dict, list)):
            raise YamlError("yaml-syntax", "a mapping key must be a scalar", *_at(mark))
        if value is _MERGE_KEY:
            top.merging = True
        elif value in top.value:
            top.again, top.again_text = True, self.text
        elif len(top.value) >= MAX_KEYS:
            raise YamlError("yaml-too-many-keys", f"a mapping with more than {MAX_KEYS} keys",
                            *_at(top.mark), hint="split the file; no Azure ML spec needs that many keys")
        top.key, top.key_mark = value, mark
        if not isinstance(value, str) and not top.again:
            top.written[value] = self.text
            if value is not _MERGE_KEY:
                self.doc.non_string_keys = True

    def duplicate(self, top: _Frame, key, mark, now: str | None) -> YamlError:
        """A duplicate key named as written: ``yes`` and ``True`` are both the boolean true to YAML 1.1, and
        ``1`` and ``1.0`` the same number, so the message says which texts collided and what they mean."""
        first = self.doc.keys.get(top.path + (key,), (0, 0))
        before = top.written.get(key)
        if isinstance(key, str) or now is None or before is None:
            return YamlError("duplicate-key", f"duplicate key {key!r} (first at line {first[0]})", *_at(mark),
                             hint="YAML keeps only one of them; remove or rename the other")
        meaning = ("null" if key is None else f"the boolean {str(key).lower()}" if isinstance(key, bool)
                   else f"the number {key!r}")
        return YamlError("duplicate-key", f"duplicate key {_shorten(now)!r}: YAML reads it as {meaning}, the same key "
                         f"as {_shorten(before)!r} at line {first[0]}", *_at(mark),
                         hint=f"quote the keys to keep them as text ('{_shorten(now)}': ...), or remove one")

    def _repeated(self, top, value) -> None:
        """A key's second value: the same one is kept once and noted (``az ml`` sends such a spec); another one
        is an error, since YAML would keep only one of the two."""
        path = top.path + (top.key,)
        first = self.doc.keys.get(path, (0, 0))
        if top.value[top.key] != value or type(top.value[top.key]) is not type(value):
            raise self.duplicate(top, top.key, top.key_mark, top.again_text)
        self.doc.repeated.append((path, _at(top.key_mark), first[0]))
        top.key, top.again, top.again_text = _NO_KEY, False, None

    def scalar(self, event):
        """A scalar's value, its anchor checked and kept; a plain scalar's immutable value is kept for its text
        (``_PLAIN``), so the next file that writes the same text skips the resolver and the constructor."""
        if event.anchor is not None:
            self._anchor_check(event)
        value = self.construct(event)
        if type(value) is bytes or type(value) is float and not math.isfinite(value):
            self.doc.non_json = True
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, 1)
        if event.tag is None and event.implicit[0] and type(value) in _SHARED_TYPES and len(_PLAIN) < 20_000:
            _PLAIN[event.value] = value
        return value

    def construct(self, event):
        value = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if not event.implicit[0]:
                tag = _STR  # quoted or block text: a string, as the resolver says for a non-plain scalar
            else:
                tag = _PLAIN_TAGS.get(value)
                if tag is None:  # keys and common words repeat across files: resolve each text once
                    tag = self.loader.resolve(ScalarNode, value, event.implicit)
                    if len(_PLAIN_TAGS) < 20_000:
                        _PLAIN_TAGS[value] = tag
        if tag == _STR or tag == _TIMESTAMP:
            if "\0" in value:
                raise YamlError("yaml-nul", "a value holds a NUL character (\\0), which no path, command or "
                                "environment variable can carry", *_at(event.start_mark), hint="remove the \\0")
            return value  # a string is its text; dates stay text too (specs carry strings, JSON has no dates)
        if tag == _MERGE:
            return _MERGE_KEY
        if tag not in _SCALAR_TAGS:
            raise YamlError("yaml-unsafe-tag", f"tag {tag!r} is not allowed: amldist loads YAML safely and "
                            "constructs no objects", *_at(event.start_mark), hint="remove the tag")
        if "\0" in value:
            raise YamlError("yaml-nul", "a value holds a NUL character (\\0), which no path, command or "
                            "environment variable can carry", *_at(event.start_mark), hint="remove the \\0")
        if tag == _CORE + "int" and len(value) > MAX_INT_CHARS:
            raise YamlError("yaml-int-too-long", f"an integer of {len(value)} characters (at most "
                            f"{MAX_INT_CHARS})", *_at(event.start_mark), hint="quote it if it is meant as text")
        node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
        try:
            return self.ctor.construct_object(node)
        except ConstructorError as exc:
            raise YamlError("yaml-syntax", str(exc.problem or exc), *_at(event.start_mark)) from None
        except (ValueError, TypeError, KeyError, AttributeError):  # e.g. `!!int abc`, `!!bool maybe`
            short = tag[len(_CORE):] if tag.startswith(_CORE) else tag
            raise YamlError("yaml-bad-value", f"{_shorten(value)!r} is not a valid {short}", *_at(event.start_mark),
                            hint=f"remove the !!{short} tag or fix the value") from None


_PLAIN_TAGS: dict = {}  # a plain scalar's text -> the tag the resolver gives it (a pure function of the text)
# a plain scalar's text -> its value, also a pure function of the text; only immutable values that compare by value
# (a float is left out: a shared nan object would make two .nan values equal where YAML's are not)
_PLAIN: dict = {}


class _MergeKey:
    """The ``<<`` key (YAML's merge key type), told apart from any string key."""


_MERGE_KEY = _MergeKey()
_SHARED_TYPES = frozenset((str, int, bool, type(None), _MergeKey))  # values _PLAIN may hand to several documents


def _too_large(mark) -> YamlError:
    return YamlError("yaml-too-large", f"document expands to more than {MAX_NODES} nodes (aliases nested too deep?)",
                     *_at(mark), hint="remove the nested anchors/aliases")


def _too_deep(line: int, col: int) -> YamlError:
    """Deep nesting, whichever stops it first: this loader's own count or libyaml's (whose limit varies by version)."""
    return YamlError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH} levels", line, col,
                     hint="flatten the document; real specs nest a few levels")


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def load_yaml(text: str) -> YamlDocument:
    """Parse one YAML document; raise YamlError with a position on any trouble.

    An empty document gives ``data=None``.
    """
    if len(text) > MAX_CHARS:
        raise YamlError("yaml-too-large", f"the document is {len(text):,} characters long (at most {MAX_CHARS:,})",
                        1, 1, hint="a spec is a few KB; split it or move data out of it")
    doc = YamlDocument(data=None)
    try:
        loader = _Loader(text)
        try:
            doc.data = _Builder(loader, doc).run()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        problem = exc.problem or str(exc)
        if "expected a single document" in (exc.context or "") + problem:
            raise YamlError("yaml-multiple-documents", "more than one YAML document in the file", line, col,
                            hint="keep one spec per file") from None
        if "maximum nesting depth" in problem:  # libyaml >= 0.2.6 (PyYAML 6.0.4) stops deep nesting itself
            raise _too_deep(line, col) from None
        raise YamlError("yaml-syntax", f"YAML syntax error: {problem}", line, col) from None
    except yaml.YAMLError as exc:
        raise YamlError("yaml-syntax", f"YAML error: {exc}") from None
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
