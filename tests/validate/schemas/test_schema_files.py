"""The schema files themselves: valid draft 2020-12, resolvable offline between themselves, documented
for editors, and with every pattern said in words."""

from __future__ import annotations

import re

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from tests.validate.schemas.support import BASE, DOCUMENT_SCHEMAS, SCHEMA_DIR, make_registry, schema_files

# Draft 2020-12's keywords: a misspelt one ("additionalProperty") would be ignored by every validator.
VALIDATION_KEYWORDS = set(
    "$schema $id $ref $defs $anchor $dynamicRef $dynamicAnchor $vocabulary type enum const pattern minimum "
    "maximum exclusiveMinimum exclusiveMaximum multipleOf minLength maxLength minItems maxItems uniqueItems "
    "prefixItems items contains minContains maxContains properties required additionalProperties "
    "patternProperties propertyNames minProperties maxProperties dependentRequired dependentSchemas "
    "unevaluatedProperties unevaluatedItems anyOf oneOf allOf not if then else format".split()
)
ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "markdownDescription", "deprecated"}
AMLDIST = {"x-amldist-unknown-keys", "x-amldist-hint", "x-amldist-expected", "x-amldist-misplaced-keys"}
ALLOWED = VALIDATION_KEYWORDS | ANNOTATIONS | AMLDIST

# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
SCHEMA_VALUED = {"items", "additionalProperties", "propertyNames", "not", "if", "then", "else"}
SCHEMA_LISTS = {"anyOf", "oneOf", "allOf"}
SCHEMA_MAPS = {"properties", "patternProperties", "$defs"}
# Under these, properties are constraints rather than what an editor offers (a matched then/else
# branch is offered, so it is not listed).
HIDDEN = {"if", "not", "propertyNames"}

FILES = [pytest.param(p, id=p.name) for p in schema_files()]


def walk(schema, where="#", hidden=False):
    """Yield (json pointer, subschema, hidden) for every subschema of a schema document."""
    if isinstance(schema, bool):
        return
    assert isinstance(schema, dict), f"{where}: a schema must be an object, found {type(schema).__name__}"
    yield where, schema, hidden
    for key, value in schema.items():
        if key in SCHEMA_VALUED:
            yield from walk(value, f"{where}/{key}", hidden or key in HIDDEN)
        elif key in SCHEMA_LISTS:
            for i, sub in enumerate(value):
                yield from walk(sub, f"{where}/{key}/{i}", hidden)
        elif key in SCHEMA_MAPS:
            for name, sub in value.items():
                yield from walk(sub, f"{where}/{key}/{name}", hidden)


def test_the_four_documents_and_common_are_shipped():
    names = {p.name for p in schema_files()}
    assert set(DOCUMENT_SCHEMAS.values()) <= names
    assert "common.schema.json" in names


@pytest.mark.parametrize("path", FILES)
def test_is_valid_draft_2020_12_with_title_description_and_no_id(path, schemas):
    schema = schemas[path.name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # No $id: each tool then takes the file's own location as the base, so the relative $refs
    # (common.schema.json#/$defs/...) resolve offline to the sibling file. A relative $id is
    # resolved against the working directory by check-jsonschema, an absolute one is fetched.
    assert "$id" not in schema
    assert schema["title"].strip() and schema["description"].strip()


@pytest.mark.parametrize("path", FILES)
def test_uses_only_draft_2020_12_and_amldist_keywords(path, schemas):
    for where, sub, _ in walk(schemas[path.name]):
        unknown = set(sub) - ALLOWED
        assert not unknown, f"{path.name}{where[1:]}: unknown keywords (misspelt?): {sorted(unknown)}"


# What a regular expression looks like in prose: character classes, anchors, escapes, groups.
REGEX_LIKE = re.compile(r"\[\^|\[[^\]\s]*[a-zA-Z0-9]-[a-zA-Z0-9][^\]\s]*\]|\[[a-zA-Z]{2}\]|\\[dswDSW.$]|\(\?|\.\*|\(\^|\$\)")


@pytest.mark.parametrize("path", FILES)
def test_every_pattern_is_said_in_words(path, schemas):
    """A pattern an instance can fail is either a list of caseless words (the message lists them) or
    carries x-amldist-expected, a phrase without any regex ("a number followed by a unit b, k, m or g")."""
    from amldist.validate.schema_wording import words_of

    bare = []
    for where, sub, _ in walk(schemas[path.name]):
        if "pattern" not in sub or "/if" in where or "/not" in where:
            continue  # under if/not a pattern only picks a branch or forbids: no message quotes it
        expected = sub.get("x-amldist-expected")
        if expected is not None:
            assert isinstance(expected, str) and expected.strip() and not REGEX_LIKE.search(expected), where
        elif not words_of(sub):
            bare.append(f"{where}: {sub['pattern']}")
    assert not bare, f"{path.name}: patterns neither caseless words nor x-amldist-expected: {bare}"


@pytest.mark.parametrize("path", FILES)
def test_no_description_or_hint_shows_a_regex(path, schemas):
    shown = []
    for where, sub, _ in walk(schemas[path.name]):
        for key in ("description", "x-amldist-hint", "title"):
            if isinstance(sub.get(key), str) and REGEX_LIKE.search(sub[key]):
                shown.append(f"{where}/{key}: {sub[key]}")
    assert not shown, f"{path.name}: {shown}"


@pytest.mark.parametrize("path", FILES)
def test_patterns_are_portable_ecma_262(path, schemas):
    """No inline flags, lookbehind, possessive/atomic groups or Python-only escapes; and they compile."""
    not_portable = re.compile(r"\(\?[iLmsux<P>]|\(\?<[=!]|\\[AZz]|\(\?>|[*+?]\+")
    for where, sub, _ in walk(schemas[path.name]):
        patterns = [sub["pattern"]] if "pattern" in sub else []
        patterns += list(sub.get("patternProperties", {}))
        for pattern in patterns:
            assert not not_portable.search(pattern), f"{path.name}{where[1:]}: {pattern!r} is not portable"
            re.compile(pattern)


@pytest.mark.parametrize("path", FILES)
def test_amldist_keywords_are_used_as_the_contract_says(path, schemas):
    for where, sub, _ in walk(schemas[path.name]):
        if "x-amldist-unknown-keys" in sub:
            assert sub["x-amldist-unknown-keys"] == "warning", where
            assert "properties" in sub, f"{where}: unknown-keys needs properties to compare with"
            assert sub.get("additionalProperties", True) is True, f"{where}: unknown-keys on a closed object"
        if "x-amldist-hint" in sub:
            assert isinstance(sub["x-amldist-hint"], str) and sub["x-amldist-hint"].strip(), where
        if "x-amldist-misplaced-keys" in sub:  # keys left out of properties so an editor never offers them
            misplaced = sub["x-amldist-misplaced-keys"]
            assert all(isinstance(v, str) and v.strip() for v in misplaced.values()), where
            assert not set(misplaced) & set(sub.get("properties", {})), f"{where}: a misplaced key is offered"


@pytest.mark.parametrize("path", FILES)
def test_every_property_an_editor_shows_has_title_and_description(path, schemas):
    registry = make_registry()
    resolver = registry.resolver(base_uri=BASE + path.name)
    missing = []
    for where, sub, hidden in walk(schemas[path.name]):
        if hidden:
            continue
        for name, prop in sub.get("properties", {}).items():
            if prop == {} or (isinstance(prop, dict) and "not" in prop and len(set(prop) - ANNOTATIONS - AMLDIST) == 1):
                continue  # a key re-listed for closedness, or a forbidden key: nothing to offer
            target = prop
            if isinstance(prop, dict) and "$ref" in prop and not ("title" in prop and "description" in prop):
                target = resolver.lookup(prop["$ref"]).contents
            if not (isinstance(target, dict) and target.get("title") and target.get("description")):
                missing.append(f"{where}/properties/{name}")
    assert not missing, f"{path.name}: properties without title/description: {missing}"


@pytest.mark.parametrize("path", FILES)
def test_every_ref_resolves_within_the_schema_folder(path, schemas):
    registry = make_registry()
    resolver = registry.resolver(base_uri=BASE + path.name)
    for where, sub, _ in walk(schemas[path.name]):
        if "$ref" in sub:
            ref = sub["$ref"]
            assert not ref.startswith("http"), f"{where}: absolute $ref {ref!r} would leave amldist/schemas"
            try:
                resolver.lookup(ref)
            except Unresolvable as exc:  # pragma: no cover - the assertion message is the point
                pytest.fail(f"{path.name}{where[1:]}: $ref {ref!r} does not resolve: {exc}")


def test_every_definition_is_used(schemas):
    """A $defs entry nothing refers to is a mistake waiting to happen (edited but never checked)."""
    refs = set()
    for name, schema in schemas.items():
        for _, sub, _ in walk(schema):
            if "$ref" in sub:
                target = sub["$ref"]
                file, _, pointer = target.partition("#")
                refs.add((file or name, pointer))
    unused = [
        f"{name}#/$defs/{key}"
        for name, schema in schemas.items()
        for key in schema.get("$defs", {})
        if (name, f"/$defs/{key}") not in refs
    ]
    assert not unused, f"unused definitions: {unused}"


def test_schema_folder_holds_only_schemas():
    """Everything in amldist/schemas is package data shipped as *.json (see pyproject package-data)."""
    stray = [p.name for p in SCHEMA_DIR.iterdir()
             if p.is_file() and p.suffix != ".json" and p.name != "__init__.py"]
    assert not stray, f"files that would not be shipped: {stray}"
