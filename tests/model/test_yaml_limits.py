"""yamlio's bounds: depth checked before libyaml recurses, length, keys, integers, tags, NUL.

And the event-stream composer builds the same node tree as PyYAML's own composer
on every real spec and on generated documents (hypothesis).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml
from hypothesis import example, given, HealthCheck, settings
from hypothesis import strategies as st

from amldist.model import yamlio
from amldist.model.yamlio import YamlError, load_yaml
from tests.conftest import ROOT, budget, conformance_files


def _code(text):
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    return info.value.code


DEEP = {
    "flow sequences": "[" * 25_000 + "]" * 25_000,
    "flow mappings": "{a: " * 25_000 + "1" + "}" * 25_000,
    "compact block sequences": "- " * 25_000 + "x\n",
    "indented block mappings": "".join(" " * i + "a:\n" for i in range(1_500)),
    "block then flow": "a:\n  - - " + "[{b: " * 25_000 + "1",
}


def _best_time(load, text, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            load(text)
        except YamlError:
            pass
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_nesting_stops_at_the_limit_fast(name):
    """Fast means relative, measured in the same run: refusing the deep document costs less than
    parsing a flat one of 50,000 characters (about 100 times less when the depth is checked early)."""
    assert _code(DEEP[name]) == "yaml-too-deep"
    flat = "[" + "1," * 25_000 + "1]"
    assert _best_time(load_yaml, DEEP[name]) < _best_time(load_yaml, flat)


def test_deep_nesting_in_a_fresh_process_does_not_crash():
    """The original crash killed the interpreter (SIGSEGV in C), so check it in a process of its own."""
    code = "from amldist.model.yamlio import load_yaml, YamlError\ntry:\n    load_yaml('[' * 200000)\n" \
           "except YamlError as e:\n    print(e.code)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.strip() == "yaml-too-deep", proc.stderr


def test_the_depth_limit_itself_is_allowed():
    depth = yamlio.MAX_DEPTH
    assert load_yaml("[" * depth + "]" * depth).data is not None
    assert _code("[" * (depth + 1) + "]" * (depth + 1)) == "yaml-too-deep"


def test_length_is_checked_before_parsing(monkeypatch):
    def no_parse(text):
        raise AssertionError("the parser was started on a document over the length limit")

    monkeypatch.setattr(yamlio, "_Loader", no_parse)
    assert _code("a: " + "x" * yamlio.MAX_CHARS) == "yaml-too-large"


def test_keys_per_mapping_are_bounded():
    text = "".join(f"k{i}: 1\n" for i in range(yamlio.MAX_KEYS + 1))
    assert _code(text) == "yaml-too-many-keys"
    assert len(load_yaml("".join(f"k{i}: 1\n" for i in range(yamlio.MAX_KEYS))).data) == yamlio.MAX_KEYS


@pytest.mark.parametrize("text, code", [
    ("a: !!int abc\n", "yaml-bad-value"),
    ("a: !!float abc\n", "yaml-bad-value"),
    ("a: !!bool maybe\n", "yaml-bad-value"),
    ("a: " + "9" * 5_000 + "\n", "yaml-int-too-long"),
    ("a: 0x" + "f" * 5_000 + "\n", "yaml-int-too-long"),
    ("a: !!int " + "1" * 100 + "\n", "yaml-int-too-long"),
    ('a: "x\\0y"\n', "yaml-nul"),
    ('"k\\0": 1\n', "yaml-nul"),
    ("a: !!python/name:os.system\n", "yaml-unsafe-tag"),
    ("a: !custom 1\n", "yaml-unsafe-tag"),
    ("a: &x 1\nb: &x 2\n", "yaml-syntax"),
    ("a: *nope\n", "yaml-syntax"),
    ("a: 1\n---\nb: 2\n", "yaml-multiple-documents"),
])
def test_bad_scalars_and_tags_are_yaml_errors_with_a_position(text, code):
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    assert info.value.code == code and info.value.line >= 1 and info.value.col >= 1


def test_values_at_the_bounds_still_load():
    doc = load_yaml("a: " + "9" * yamlio.MAX_INT_CHARS + "\nb: 2001-12-14\nc: !!binary aGk=\nd: 1e400\n")
    assert doc.data["a"] == int("9" * yamlio.MAX_INT_CHARS) and doc.data["b"] == "2001-12-14"
    assert doc.data["c"] == b"hi"


def _pyyaml_tree(text):
    loader = yamlio._Loader(text)  # the same parser (libyaml's when installed), PyYAML's composer
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _reference(text):
    """(data, value positions, key positions) the way PyYAML composes the text, walked here."""
    ctor = yaml.constructor.SafeConstructor()
    values, keys = {}, {}

    def walk(node, path):
        values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            if node.tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp"):
                return node.value
            return ctor.construct_object(node)
        if isinstance(node, yaml.SequenceNode):
            return [walk(item, path + (i,)) for i, item in enumerate(node.value)]
        out = {}
        for key_node, value_node in node.value:
            key = ctor.construct_object(key_node) if key_node.tag != "tag:yaml.org,2002:str" else key_node.value
            keys[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = walk(value_node, path + (key,))
        return out

    node = _pyyaml_tree(text)
    return (None if node is None else walk(node, ())), values, keys


def _ours(text):
    doc = yamlio.load_yaml(text)
    return doc.data, doc.values, doc.keys


CORPUS = [p.read_text(encoding="utf-8") for p in [*conformance_files("valid"), *ROOT.glob("samples/**/*.yml")]]


def test_builder_matches_pyyaml_on_the_corpus():
    assert CORPUS, "no corpus"
    for text in CORPUS:
        assert _ours(text) == _reference(text)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8),
                     st.floats(allow_nan=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return isinstance(value, list) and any(_has_nul(v) for v in value)


@pytest.mark.budget
@settings(max_examples=budget(100, 300), deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_values, flow=st.sampled_from([None, True, False]), anchor=st.booleans())
@example(value="\\0", flow=None, anchor=False)  # a backslash and a zero in a plain scalar: text, not a NUL
def test_builder_matches_pyyaml_on_generated_documents(value, flow, anchor):
    data = {"x": value, "y": value} if anchor else value  # the same object twice: an anchor and an alias
    text = yaml.safe_dump(data, default_flow_style=flow)
    if _has_nul(data):  # a NUL anywhere is refused (its own test above), PyYAML keeps it; a plain `\0` is no NUL
        with pytest.raises(yamlio.YamlError) as refused:
            yamlio.load_yaml(text)
        assert refused.value.code == "yaml-nul"
        return
    ours, reference = _ours(text), _reference(text)
    assert ours[0] == reference[0] == data
    if not anchor:  # an alias's inner positions are the anchor's (ours keep the alias's own, not walked again)
        assert ours[1:] == reference[1:]


# What the loader records on its way (validate skips walking the data for them): the same answers as the walks
_keys = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.booleans(), st.none())
_odd_scalars = st.one_of(_scalars, st.binary(max_size=4), st.sampled_from([float("inf"), float("-inf"),
                                                                            float("nan")]))
_odd_values = st.recursive(_odd_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)), max_leaves=12)


@pytest.mark.budget
@settings(max_examples=budget(100, 300), deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_odd_values, flow=st.sampled_from([None, True, False]))
@example(value={"a": [1, {True: b"x"}]}, flow=None)
def test_the_loaders_notes_agree_with_walking_the_data(value, flow):
    from amldist.validate.rules import has_non_string_keys
    from amldist.validate.schema_check import json_values

    text = yaml.safe_dump(value, default_flow_style=flow)
    if _has_nul(value):
        return
    doc = load_yaml(text)
    assert doc.non_string_keys == has_non_string_keys(doc.data)
    assert doc.non_json == (json_values(doc.data) is not doc.data)


def test_a_merge_key_is_no_key_of_the_document():
    doc = load_yaml("base: &b {x: 1}\nd:\n  <<: *b\n  y: .inf\n")
    assert doc.data["d"] == {"x": 1, "y": float("inf")}
    assert not doc.non_string_keys and doc.non_json
    assert load_yaml("a: {1: b}\n").non_string_keys and not load_yaml("a: {'1': b}\n").non_string_keys
