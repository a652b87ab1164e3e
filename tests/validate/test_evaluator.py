"""The evaluator's keyword semantics, one keyword at a time (expected results written by hand)."""

import pytest

from amldist.validate.evaluator import SchemaCompileError, is_valid, json_equal
from amldist.validate.registry import Registry

URI = "https://amldist.dev/schemas/t.schema.json"


def check(schema, instance, documents=None):
    registry = Registry({URI: schema, **(documents or {})})
    return registry.validator(URI)(instance)


def paths(schema, instance):
    return sorted(e.path for e in check(schema, instance) if e.severity == "error")


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "integer"}, [1, 2.0, -5], [1.5, True, "1", None]),
    ({"type": "number"}, [1, 1.5], [True, "1"]),
    ({"type": "boolean"}, [True, False], [0, 1, "true"]),
    ({"type": "null"}, [None], [0, "", False]),
    ({"type": "object"}, [{}], [[], "x"]),
    ({"type": "array"}, [[]], [{}, "x"]),
    ({"type": ["string", "null"]}, ["x", None], [1]),
    ({"enum": [1, "a", None]}, [1, 1.0, "a", None], [True, "b", 2]),
    ({"enum": [False]}, [False], [0]),
    ({"const": {"a": [1, True]}}, [{"a": [1.0, True]}], [{"a": [1, 1]}, {"a": [1, True], "b": 1}]),
    ({"pattern": "^\\d+[gG]$"}, ["12g", "3G", 5], ["lots", "12gb", "g"]),
    ({"pattern": "b"}, ["abc"], ["xyz"]),
    ({"minimum": 1}, [1, 2.5, "0", True], [0, 0.99, -4]),
    ({"maximum": 3}, [3, False], [3.5]),
    ({"exclusiveMinimum": 0}, [0.1, 1], [0, -5]),
    ({"exclusiveMaximum": 10}, [9], [10, 11]),
    ({"minLength": 2}, ["ab", 5], ["a", ""]),
    ({"maxLength": 2}, ["ab"], ["abc"]),
    ({"minItems": 1}, [[1]], [[]]),
    ({"maxItems": 1}, [[1], "xy"], [[1, 2]]),
    ({"items": {"type": "string"}}, [[], ["a"], "nope"], [["a", 1]]),
    ({"items": False}, [[]], [[1]]),
    ({"required": ["a"]}, [{"a": 1}, [1]], [{}, {"b": 1}]),
    ({"not": {"type": "string"}}, [1], ["x"]),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, [2], [1, "x"]),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "x"], [1.5, None]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [-1, 0.5], [1, -0.5]),
    ({"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}}, [5, "x"], [4, 1.5]),
    ({"if": {"type": "integer"}, "then": {"minimum": 5}}, [5, "x", 1.5], [4]),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}], [{"Ab": 1}]),
    ({"patternProperties": {"^x-": {"type": "integer"}}}, [{"x-a": 1, "y": "s"}], [{"x-a": "s"}]),
    (True, [1, None], []),
    (False, [], [1, None]),
])
def test_keyword(schema, good, bad):
    for instance in good:
        assert is_valid(check(schema, instance)), instance
    for instance in bad:
        assert not is_valid(check(schema, instance)), instance


def test_error_paths_follow_jsonschema_conventions():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["c"],
                             "additionalProperties": False},
                       "l": {"items": {"minimum": 0}}},
        "propertyNames": {"maxLength": 3},
    }
    instance = {"a": {"b": "x", "zz": 1}, "l": [1, -1, -2], "long": 1}
    assert paths(schema, instance) == [(), ("a",), ("a",), ("a", "b"), ("l", 1), ("l", 2)]


def test_additional_properties_respect_properties_and_patterns():
    schema = {"properties": {"a": {}}, "patternProperties": {"^x-": {}}, "additionalProperties": False}
    assert is_valid(check(schema, {"a": 1, "x-y": 2}))
    errors = check(schema, {"a": 1, "b": 2, "c": 3})
    assert [e.params["unexpected"] for e in errors] == [["b", "c"]]
    schema = {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}
    assert paths(schema, {"a": 1, "b": "s", "c": 3}) == [("c",)]


def test_unknown_keys_keyword_warns_without_failing():
    schema = {"properties": {"type": {}, "n": {}}, "x-amldist-unknown-keys": "warning"}
    errors = check(schema, {"type": 1, "added_property": 7})
    assert is_valid(errors)
    assert [(e.severity, e.params["unexpected"]) for e in errors] == [("warning", ["added_property"])]
    # closed objects report errors instead, and the keyword is then inert
    closed = {**schema, "additionalProperties": False}
    assert [e.severity for e in check(closed, {"added_property": 7})] == ["error"]


def test_warnings_of_the_matching_branch_survive_a_union():
    branch = {"properties": {"type": {"const": "a"}}, "required": ["type"], "x-amldist-unknown-keys": "warning"}
    schema = {"oneOf": [branch, {"properties": {"type": {"const": "b"}}, "required": ["type"]}]}
    errors = check(schema, {"type": "a", "extra": 1})
    assert is_valid(errors) and [e.keyword for e in errors] == ["x-amldist-unknown-keys"]
    assert check({"anyOf": [branch]}, {"type": "a", "extra": 1})[0].severity == "warning"


def test_one_of_reports_every_branch_and_ambiguity():
    schema = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    [error] = check(schema, 1.5)
    assert error.keyword == "oneOf" and len(error.context) == 2
    [error] = check({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3)
    assert error.params["matched"] == [0, 1]


def test_refs_resolve_within_and_across_files_and_recursively():
    common = {"$id": "https://amldist.dev/schemas/common.schema.json",
              "$defs": {"count": {"type": "integer", "minimum": 1},
                        "tree": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/tree"}},
                                                                   "n": {"$ref": "#/$defs/count"}}}}}
    schema = {"$id": URI, "properties": {"n": {"$ref": "common.schema.json#/$defs/count"},
                                         "t": {"$ref": "./common.schema.json#/$defs/tree"},
                                         "local": {"$ref": "#/$defs/s"}},
              "$defs": {"s": {"type": "string"}}}
    docs = {common["$id"]: common}
    assert is_valid(check(schema, {"n": 2, "t": {"kids": [{"kids": [{"n": 3}]}]}, "local": "x"}, docs))
    bad = check(schema, {"n": 0, "t": {"kids": [{"kids": [{"n": 0}]}]}, "local": 1}, docs)
    assert sorted(e.path for e in bad) == [("local",), ("n",), ("t", "kids", 0, "kids", 0, "n")]


def test_json_pointer_escapes():
    schema = {"$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}},
              "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}}}
    assert paths(schema, {"x": "s", "y": 1}) == [("x",), ("y",)]


@pytest.mark.parametrize("schema", [
    {"properties": {"a": {"$ref": "other.schema.json"}}},
    {"properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"uniqueItems": True},
    {"properties": {"a": {"multipleOf": 2}}},
    {"properties": {"a": {"pattern": "("}}},  # patterns compile on first use
    {"type": "float"},
])
def test_schemas_outside_the_subset_are_refused(schema):
    with pytest.raises(SchemaCompileError):
        check(schema, {"a": "x"})


def test_json_equal():
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal([1, {"a": None}], [1.0, {"a": None}]) and not json_equal([1], [1, 2])
    assert not json_equal("1", 1)


def test_compile_everything_finds_a_bad_subschema_no_instance_reached():
    registry = Registry({URI: {"properties": {"a": {"items": {"anyOf": [{"type": "string"}, {"uniqueItems": True}]}}}}})
    assert is_valid(registry.validator(URI)({}))  # nothing reached the bad part yet
    with pytest.raises(SchemaCompileError):
        registry.compile_everything()
