"""The evaluator agrees with the reference implementation (jsonschema's Draft202012Validator).

Over the shipped schemas: every conformance file, every fixture, and a few
thousand hypothesis documents (random mutations of those files, and random
documents built from the schemas' own words). Both must agree on valid/invalid
and on the set of instance paths of the top-level errors (our warnings, from
x-amldist-unknown-keys, are left out: jsonschema ignores that keyword).
"""

from __future__ import annotations

import json
from functools import lru_cache

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing import Registry as RefRegistry
from referencing import Resource

from amldist.spec.kinds import detect_kind
from amldist.spec.yamlio import load_yaml
from amldist.validate import registry as our_registry
from amldist.validate.evaluator import is_valid, regex
from tests.conftest import conformance_files
from tests.validate.helpers import fixture_files
from tests.validate.strategies import mutated, random_documents, schema_words

KINDS = sorted(our_registry.SCHEMA_FILES)


@lru_cache(maxsize=None)
def reference(kind: str):
    shipped = our_registry.shipped()
    resources = [(uri, Resource.from_contents(doc)) for uri, doc in shipped.documents.items()]
    refs = RefRegistry().with_resources(resources)
    schema = our_registry.schema_for(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=refs)


def compare(kind: str, instance) -> None:
    ours = our_registry.check_for(kind)(instance)
    theirs = list(reference(kind).iter_errors(instance))
    assert is_valid(ours) == (not theirs), (instance, ours, theirs)
    our_paths = {e.path for e in ours if e.severity == "error"}
    their_paths = {tuple(e.absolute_path) for e in theirs}
    assert our_paths == their_paths, (instance, ours, [e.message for e in theirs])


def corpus() -> list:
    docs = []
    for path in [*conformance_files("valid"), *conformance_files("invalid"), *fixture_files("valid"),
                 *fixture_files("invalid")]:
        try:
            data = load_yaml(path.read_text()).data
        except Exception:  # noqa: BLE001 - a deliberately broken fixture
            continue
        kind = detect_kind(data)
        if kind:
            docs.append((kind, data))
    return docs


CORPUS = corpus()


def test_every_shipped_schema_compiles_and_is_a_valid_2020_12_schema():
    shipped = our_registry.shipped()
    assert set(our_registry.SCHEMA_FILES.values()) <= {uri.rsplit("/", 1)[-1] for uri in shipped.documents}
    for uri, document in shipped.documents.items():
        jsonschema.Draft202012Validator.check_schema(document)
        shipped.validator(uri)
    assert shipped.compile_everything() > 100  # subschemas compile lazily at run time: force them all
    patterns = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("pattern",) and isinstance(value, str):
                    patterns.append(value)
                elif key == "patternProperties" and isinstance(value, dict):
                    patterns.extend(value)
                if key not in ("enum", "const", "examples", "default"):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(list(shipped.documents.values()))
    assert patterns
    for pattern in patterns:  # compiled lazily at run time: each must be a valid Python regex
        regex(pattern)
        assert "(?<" not in pattern and "(?i" not in pattern, pattern  # portable ECMA-262 subset


@pytest.mark.parametrize("index", range(len(CORPUS)), ids=lambda i: f"{CORPUS[i][0]}-{i}")
def test_agrees_on_real_files(index):
    kind, data = CORPUS[index]
    compare(kind, data)


def test_agrees_on_every_kind_for_every_file():
    """Each file checked against the other kinds' schemas too: many errors, all in agreement."""
    for _, data in CORPUS:
        for kind in KINDS:
            compare(kind, data)


@lru_cache(maxsize=None)
def words():
    return schema_words(*our_registry.shipped().documents.values())


SEEDS = [data for _, data in CORPUS] or [{"type": "command", "command": "echo"}]
FAST = settings(max_examples=700, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FAST
@given(doc=st.deferred(lambda: mutated(SEEDS, *words())), kind=st.sampled_from(KINDS))
def test_agrees_on_mutated_specs(doc, kind):
    compare(kind, doc)


@FAST
@given(doc=st.deferred(lambda: mutated(SEEDS, *words(), max_mutations=8)))
def test_agrees_on_heavily_mutated_specs_of_their_own_kind(doc):
    compare(detect_kind(doc) or "command_job", doc)


@FAST
@given(doc=st.deferred(lambda: random_documents(*words())), kind=st.sampled_from(KINDS))
def test_agrees_on_random_documents(doc, kind):
    compare(kind, doc)


def test_schema_words_reach_the_distribution_types():
    keys, values = words()
    assert {"process_count_per_instance", "instance_type", "launcher"} <= set(keys)
    assert {"pytorch", "mpi", "tensorflow"} <= set(values)
    json.dumps(values)


def test_generated_documents_cover_both_outcomes():
    """The generators reach valid and invalid documents of every kind (else agreement proves little)."""
    import random

    from tests.validate.strategies import _mutated

    outcomes = {kind: set() for kind in KINDS}
    rng = random.Random(7)
    for _ in range(400):
        doc = _mutated(rng, SEEDS, *words(), 1)
        kind = detect_kind(doc)
        if kind:
            outcomes[kind].add(is_valid(our_registry.check_for(kind)(doc)))
    assert all(outcomes[kind] == {True, False} for kind in KINDS), outcomes
