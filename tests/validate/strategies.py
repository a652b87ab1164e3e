"""Document generators shared by the reference and fuzz tests.

Documents are built from the words a schema knows (its property names, enum and
const values, words of caseless patterns) so that random documents reach deep
into the schema instead of failing at the top. Hypothesis draws a seed and a
plain ``random.Random`` does the building: drawing nested structures through
hypothesis itself costs ~50 ms a document on this machine, this ~0.1 ms.
"""

from __future__ import annotations

import copy
import random

from hypothesis import strategies as st

from amldist.validate.schema_wording import words_of

_TEXT = "abcpytorchmpi0123456789_-.$ {}[]gGM"


def schema_words(*schemas) -> tuple[list, list]:
    """(keys, string values) mentioned by the schemas."""
    keys, values = set(), set()

    def walk(node):
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                keys.update(props)
            keys.update(node.get("x-amldist-misplaced-keys", {}))  # another distribution type's keys
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


def random_scalar(rng: random.Random, words):
    pick = rng.randrange(7)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.randint(-3, 12)
    if pick == 3:
        return rng.choice([0.5, -1.5, 2.0, 4.5, 1e3])
    if pick in (4, 5) and words:
        return rng.choice(words)
    return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 10)))


def random_value(rng: random.Random, keys, words, depth: int = 3):
    pick = rng.randrange(10)
    if depth <= 0 or pick < 6:
        return random_scalar(rng, words)
    if pick < 8:
        return {random_key(rng, keys): random_value(rng, keys, words, depth - 1) for _ in range(rng.randint(0, 4))}
    return [random_value(rng, keys, words, depth - 1) for _ in range(rng.randint(0, 3))]


def random_key(rng: random.Random, keys) -> str:
    if keys and rng.random() < 0.8:
        return rng.choice(keys)
    return "".join(rng.choice("abcdefxyz_") for _ in range(rng.randint(1, 6)))


_SWAPS = {
    int: [True, False, 4.5, 2.0, 0.5, "4", None, [1]],
    float: [True, 2, "1.5", None],
    bool: [1, 0, "true", None],
    str: [1, 1.5, True, None, ["x"], {"x": 1}],
    type(None): [0, "", False],
    dict: ["x", [], None, 1],
    list: [{}, "x", None],
}


def _paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, path + (i,))


def mutate(rng: random.Random, doc, keys, words, count: int):
    """A copy of ``doc`` with ``count`` random edits (replace, delete, add, rename, wrap)."""
    doc = copy.deepcopy(doc)
    for _ in range(count):
        path = rng.choice(list(_paths(doc)))
        op = rng.choice(("replace", "delete", "add", "rename", "wrap", "swap", "swap"))
        value = random_value(rng, keys, words, depth=2)
        if not path:
            if isinstance(doc, dict) and op == "add":
                doc[random_key(rng, keys)] = value
            continue
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1]
        if op == "replace":
            parent[last] = value
        elif op == "swap":  # the same value in another JSON type: where type rules disagree, if anywhere
            # a copy: a later edit inside the shared constant would change it for every document after
            parent[last] = copy.deepcopy(rng.choice(_SWAPS.get(type(parent[last]), [None])))
        elif op == "delete":
            del parent[last]
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif op == "add" and isinstance(parent, dict):
            parent[random_key(rng, keys)] = value
        elif op == "rename" and isinstance(parent, dict):
            parent[random_key(rng, keys) + rng.choice(("", "s", "_"))] = parent.pop(last)
    return doc


def mutated(seeds, keys, words, max_mutations: int = 3):
    """Strategy: a seed document with 1..max_mutations random edits."""
    return st.builds(
        lambda seed: _mutated(random.Random(seed), seeds, keys, words, max_mutations),
        st.integers(0, 2**32 - 1),
    )


def _mutated(rng, seeds, keys, words, max_mutations):
    return mutate(rng, rng.choice(seeds), keys, words, rng.randint(1, max_mutations))


def random_documents(keys, words):
    """Strategy: a random mapping built from the schema's words."""
    return st.builds(
        lambda seed: _random_doc(random.Random(seed), keys, words),
        st.integers(0, 2**32 - 1),
    )


def _random_doc(rng, keys, words):
    return {random_key(rng, keys): random_value(rng, keys, words) for _ in range(rng.randint(0, 8))}
