"""jsonschema-rs (what amldist runs) agrees with the reference implementation (jsonschema) on every
shipped schema: valid or not, and at which instance paths, over the conformance corpus, the test
fixtures, every file against every kind, and the hypothesis fuzz corpus of ``strategies.py``.

Both get the same JSON values (``json_values``: YAML's !!binary and .inf have no JSON form, see
``schema_errors``). The amldist keywords (x-amldist-*) are annotations to both.
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
from referencing.jsonschema import DRAFT202012

from amldist.model.kinds import detect_kind
from amldist.model.yamlio import load_yaml
from amldist.validate import schema_store
from amldist.validate.schema_check import check, json_values
from tests.conftest import budget, conformance_files
from tests.validate.helpers import fixture_files
from tests.validate.strategies import mutated, random_documents, schema_words

KINDS = sorted(schema_store.SCHEMA_FILES)


@lru_cache(maxsize=None)
def reference(kind: str):
    resources = [(uri, Resource.from_contents(doc, default_specification=DRAFT202012))
                 for uri, doc in schema_store.documents().items()]
    refs = RefRegistry().with_resources(resources)
    return jsonschema.Draft202012Validator({"$ref": schema_store.schema_uri(kind)}, registry=refs)


def compare(kind: str, instance) -> None:
    """jsonschema-rs == jsonschema on validity and error paths; and the run-time check (the closed copy,
    whose extra errors are unknown-key warnings) has exactly the standard check's errors."""
    instance = json_values(instance)
    ours = list(schema_store.validator(kind).iter_errors(instance))
    theirs = list(reference(kind).iter_errors(instance))
    assert (not ours) == (not theirs), (instance, [e.message for e in ours], [e.message for e in theirs])
    our_paths = {tuple(e.instance_path) for e in ours}
    their_paths = {tuple(e.absolute_path) for e in theirs}
    assert our_paths == their_paths, (instance, [e.message for e in ours], [e.message for e in theirs])
    run_time = [e for e in check(kind, instance) if e.severity == "error"]
    assert {e.path for e in run_time} == our_paths, (instance, run_time, [e.message for e in ours])
    assert len(run_time) == len(ours), (instance, run_time, [e.message for e in ours])


def sweep_files() -> list:
    """The real sweep jobs and the sample: seeds of the sweep job kind, beside the kinds/ fixture."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    real = root / "tests" / "fixtures" / "real_specs" / "azureml-examples" / "cli" / "jobs"
    return [real / "basics" / "hello-sweep.yml", *sorted(real.glob("single-step/*/iris/job-sweep.yml")),
            root / "samples" / "sweep" / "job.yml"]


def corpus() -> list:
    docs = []
    for path in [*conformance_files("valid"), *conformance_files("invalid"), *fixture_files("valid"),
                 *fixture_files("invalid"), *fixture_files("kinds"),  # kinds/: the pipeline components
                 *sweep_files()]:
        try:
            data = load_yaml(path.read_text()).data
        except Exception:  # noqa: BLE001 - a deliberately broken fixture
            continue
        kind = detect_kind(data)
        if kind and _depth(data) < 40:  # a fixture nested to the reader's limit is no seed to mutate
            docs.append((kind, data))
    return docs


def _depth(value) -> int:
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return 1 + max(map(_depth, children), default=0)


CORPUS = corpus()


def test_every_shipped_schema_is_valid_2020_12_and_every_kind_compiles_offline():
    assert set(schema_store.SCHEMA_FILES.values()) <= {uri.rsplit("/", 1)[-1] for uri in schema_store.documents()}
    for document in schema_store.documents().values():
        jsonschema.Draft202012Validator.check_schema(document)
    for kind in KINDS:  # jsonschema-rs resolves every $ref and compiles every pattern now, not mid-run
        assert not schema_store.validator(kind).is_valid({})  # every kind requires keys


def test_no_subschema_marked_for_unknown_key_warnings_decides_a_branch():
    """The run-time check closes the marked subschemas; that is exact only where none of them sits
    under anyOf/oneOf/not/if, whose outcome closing could change."""
    def walk(node, where, deciding):
        if isinstance(node, dict):
            if node.get("x-amldist-unknown-keys") == "warning":
                yield where, deciding
            for key, value in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    yield from walk(value, f"{where}/{key}", deciding or key in ("anyOf", "oneOf", "not", "if"))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{where}/{i}", deciding)

    marked = [(uri + where, deciding) for uri, doc in schema_store.documents().items()
              for where, deciding in walk(doc, "#", False)]
    assert len(marked) >= 8  # components' distribution/resources, top levels, pipeline settings
    assert not [where for where, deciding in marked if deciding]


def test_a_ref_outside_the_shipped_files_fails_when_built_not_when_a_document_reaches_it():
    with pytest.raises(schema_store.SchemaLoadError, match="not one of amldist's schema files"):
        schema_store.compile_schema({"anyOf": [{"type": "string"}, {"$ref": "elsewhere.schema.json"}]},
                                    schema_store.BASE + "x.json")


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
    return schema_words(*schema_store.documents().values())


SEEDS = [data for _, data in CORPUS] or [{"type": "command", "command": "echo"}]
FAST = settings(max_examples=budget(200, 700), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.mark.budget
@FAST
@given(doc=st.deferred(lambda: mutated(SEEDS, *words())), kind=st.sampled_from(KINDS))
def test_agrees_on_mutated_specs(doc, kind):
    compare(kind, doc)


@pytest.mark.budget
@FAST
@given(doc=st.deferred(lambda: mutated(SEEDS, *words(), max_mutations=8)))
def test_agrees_on_heavily_mutated_specs_of_their_own_kind(doc):
    compare(detect_kind(doc) or "command_job", doc)


@pytest.mark.budget
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
            outcomes[kind].add(schema_store.validator(kind).is_valid(json_values(doc)))
    assert all(outcomes[kind] == {True, False} for kind in KINDS), outcomes
