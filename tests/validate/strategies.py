"""Hypothesis strategies shared by the reference and fuzz tests.

Documents are built from the words a schema knows (its property names, enum and
const values, words of caseless patterns) so that random documents reach deep
into the schema instead of failing at the top.
"""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from amldist.validate.messages import words_of


def schema_words(*schemas) -> tuple[list, list]:
    """(keys, string values) mentioned by the schemas."""
    keys, values = set(), set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.get("properties", {}).items() if isinstance(node.get("properties"), dict) else ():
                keys.add(k)
            values.update(w for w in words_of(node) if isinstance(w, str))
            for k, v in node.items():
                if k not in ("enum", "const", "examples", "default"):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for schema in schemas:
        walk(schema)
    return sorted(keys), sorted(values)


def json_values(keys, words, max_leaves=12):
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-3, max_value=12),
        st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False),
        st.sampled_from(words or ["x"]),
        st.text(alphabet="abcpytorchmpi0123456789_-.$ {}[]gGM", max_size=12),
    )
    key = st.one_of(st.sampled_from(keys or ["k"]), st.text(alphabet="abcdefxyz_", min_size=1, max_size=6))
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(key, children, max_size=5),
        ),
        max_leaves=max_leaves,
    )


def _paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, path + (i,))


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


@st.composite
def mutated(draw, seeds, keys, words, max_mutations=3):
    """A seed document with 1..max_mutations random edits (replace, delete, add, rename, wrap)."""
    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "delete", "add", "rename", "wrap"]))
        value = draw(json_values(keys, words, max_leaves=4))
        if not path:
            if isinstance(doc, dict) and op == "add":
                doc[draw(st.sampled_from(keys or ["k"]))] = value
            continue
        parent, last = _get(doc, path[:-1]), path[-1]
        if op == "replace":
            parent[last] = value
        elif op == "delete":
            del parent[last]
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(keys or ["k"]))] = value
        elif op == "rename" and isinstance(parent, dict):
            new = draw(st.sampled_from(keys or ["k"])) + draw(st.sampled_from(["", "s", "_"]))
            parent[new] = parent.pop(last)
    return doc
