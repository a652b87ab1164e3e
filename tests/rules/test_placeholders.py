"""amldist.rules.placeholders: parsing, references, legacy -> v2, resolving optional groups."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amldist.rules import placeholders as ph
from amldist.errors import UserError
from tests.conftest import budget

CONFORMANCE_LIKE = (
    "python train.py --input-path {inputs.input_path} [--string-parameter {inputs.string_parameter}]\n"
    "--output-path {outputs.output_path}"
)


def names(refs):
    return [(r.source, r.name, r.in_group) for r in refs]


def test_legacy_references_with_group_membership():
    refs = ph.references(CONFORMANCE_LIKE, ph.LEGACY)
    assert names(refs) == [
        ("inputs", "input_path", False),
        ("inputs", "string_parameter", True),
        ("outputs", "output_path", False),
    ]
    # offsets point at the placeholder text itself
    for ref in refs:
        assert CONFORMANCE_LIKE[ref.start:ref.end] == "{%s.%s}" % (ref.source, ref.name)
    assert refs[1].groups == (CONFORMANCE_LIKE.index("["),)


def test_legacy_to_v2_translation():
    assert ph.legacy_to_v2(CONFORMANCE_LIKE) == (
        "python train.py --input-path ${{inputs.input_path}} $[[--string-parameter ${{inputs.string_parameter}}]]\n"
        "--output-path ${{outputs.output_path}}"
    )


@pytest.mark.parametrize(
    "text, literal, groups",
    [
        ("python t.py --shape [3,224] --x {inputs.x}", "[3,224]", 0),
        ("python -c 'print(a[0])' {inputs.x}", "a[0]", 0),
        ("echo '[' [--a {inputs.a}]", "'['", 1),  # the unmatched '[' has no placeholder of its own after it
        ("[--a {inputs.a}] echo ']'", "']'", 1),
    ],
)
def test_brackets_without_placeholders_are_literal(text, literal, groups):
    parts = ph.parse(text).parts
    assert literal in "".join(p for p in parts if isinstance(p, str))
    assert sum(isinstance(p, ph.Group) for p in parts) == groups
    assert literal in ph.legacy_to_v2(text)  # translation keeps literal brackets as they are


def test_nested_groups_and_literal_brackets_inside_a_group():
    text = "run [--a {inputs.a} [--b {inputs.b}] --shape [1,2]]"
    refs = ph.references(text)
    assert [(r.name, len(r.groups)) for r in refs] == [("a", 1), ("b", 2)]
    outer = ph.parse(text).parts[1]
    assert isinstance(outer, ph.Group) and text[outer.start:outer.end] == text[4:]
    assert ph.legacy_to_v2(text) == "run $[[--a ${{inputs.a}} $[[--b ${{inputs.b}}]] --shape [1,2]]]"
    # and v2 reads that back with the same structure
    assert [(r.name, len(r.groups)) for r in ph.references(ph.legacy_to_v2(text))] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize(
    "syntax, text, code, offset",
    [
        (ph.LEGACY, "python t.py [--a {inputs.a}", "unbalanced-bracket", 12),
        (ph.LEGACY, "python t.py --a {inputs.a}] x", "unbalanced-bracket", 26),
        (ph.LEGACY, "[--a {inputs.a} [--b {inputs.b}]", "unbalanced-bracket", 0),
        (ph.LEGACY, "python t.py --a {inputs.my-input}", "malformed-placeholder", 16),
        (ph.LEGACY, "python t.py --a {outputs.}", "malformed-placeholder", 16),
        (ph.LEGACY, "python t.py --a ${{inputs.a}}", "mixed-syntax", 16),
        (ph.LEGACY, "python t.py $[[--a {inputs.a}]]", "mixed-syntax", 12),
        (ph.V2, "x $[[--a ${{inputs.a}}", "unbalanced-bracket", 2),
        (ph.V2, "x ${{inputs.a-b}}", "malformed-placeholder", 2),
    ],
)
def test_syntax_errors_carry_code_and_offset(syntax, text, code, offset):
    with pytest.raises(ph.PlaceholderSyntaxError) as info:
        ph.parse(text, syntax)
    assert (info.value.code, info.value.offset) == (code, offset)
    assert isinstance(info.value, UserError)
    assert f"offset {offset}" in str(info.value)


def test_v2_parsing():
    text = "python t.py --a ${{ inputs.a }} $[[--b ${{inputs.b}}]] --o ${{outputs.o}} --p ${{parent.inputs.x}} [[ -f x ]]"
    refs = ph.references(text)  # syntax detected
    assert names(refs) == [("inputs", "a", False), ("inputs", "b", True), ("outputs", "o", False)]
    assert ph.detect_syntax(text) == ph.V2 and ph.detect_syntax(CONFORMANCE_LIKE) == ph.LEGACY


def test_v2_close_run_uses_its_last_characters():
    parsed = ph.parse("$[[--x [1] ${{inputs.x}} [2]]]", ph.V2)
    (group,) = parsed.parts
    assert group.parts[0] == "--x [1] " and group.parts[-1] == " [2]"


def test_translation_refuses_what_v2_would_read_differently():
    with pytest.raises(ph.PlaceholderSyntaxError) as info:
        ph.legacy_to_v2("[--a {inputs.a} x]] y]")
    assert info.value.code == "inexpressible"


@pytest.mark.parametrize(
    "given, expected",
    [
        (set(), "python t.py --in ${{inputs.i}}\n--out ${{outputs.o}}"),
        ({"s"}, "python t.py --in ${{inputs.i}} --s ${{inputs.s}}\n--out ${{outputs.o}}"),
    ],
)
def test_drop_unset_groups(given, expected):
    text = ph.legacy_to_v2("python t.py --in {inputs.i} [--s {inputs.s}]\n--out {outputs.o}")
    assert ph.drop_unset_groups(text, given | {"i"}) == expected


def test_drop_unset_groups_nested_and_predicate():
    text = "a $[[--x ${{inputs.x}} $[[--y ${{inputs.y}}]]]] b $[[--flag]] $[[$[[--z ${{inputs.z}}]]]]"
    assert ph.drop_unset_groups(text, {"x"}) == "a --x ${{inputs.x}} b --flag"
    assert ph.drop_unset_groups(text, {"y"}) == "a b --flag"  # y's group lives inside x's
    assert ph.drop_unset_groups(text, {"x", "y", "z"}) == "a --x ${{inputs.x}} --y ${{inputs.y}} b --flag --z ${{inputs.z}}"
    # a predicate sees the reference, outputs included
    assert ph.drop_unset_groups("a $[[--o ${{outputs.o}}]]", lambda ref: False) == "a"
    # legacy text resolves in legacy syntax
    assert ph.drop_unset_groups("a [--x {inputs.x}] b", set()) == "a b"


@pytest.mark.parametrize("text, found", [
    ("python t.py --lr {inputs.lr}", ("inputs", "lr", 17)),
    ("python t.py --out {outputs.model} ${{inputs.x}}", ("outputs", "model", 18)),
    ("python t.py --lr ${{inputs.lr}} {inputs.a}", ("inputs", "a", 32)),
    ("python t.py --lr ${{inputs.lr}} ${{ inputs.x }} $[[--o ${{outputs.o}}]]", None),
    ("python t.py --shape {1,2} {inputs.}", None),
])
def test_stray_legacy_reference_in_a_v2_command(text, found):
    match = ph.stray_legacy_reference(text)
    assert (None if match is None else (*match.groups(), match.start())) == found


def test_line_col():
    text = "one\ntwo {inputs.x}"
    (ref,) = ph.references(text)
    assert ph.line_col(text, ref.start) == (2, 5)
    assert ph.line_col(text, 0) == (1, 1)


# --- properties: rendering a random structure and parsing it back gives the structure ---

_literal = st.text(alphabet="abc -=/_.,'\n0123", max_size=6)
_ref = st.tuples(st.sampled_from(["inputs", "outputs"]), st.sampled_from(["a", "b_1", "Long_Name"]))


def _parts(depth):
    leaf = st.one_of(_literal, _ref)
    if depth == 0:
        return st.lists(leaf, max_size=5)
    # a group always holds a reference, otherwise legacy brackets would be literal text
    group = st.builds(lambda pre, r, post: ("group", pre + [r] + post), _parts(depth - 1), _ref, _parts(depth - 1))
    return st.lists(st.one_of(leaf, group), max_size=5)


def _render(parts, syntax):
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p[0] == "group":
            inner = _render(p[1], syntax)
            out.append("[" + inner + "]" if syntax == ph.LEGACY else "$[[" + inner + "]]")
        else:
            out.append("{%s.%s}" % p if syntax == ph.LEGACY else "${{%s.%s}}" % p)
    return "".join(out)


def _flat_refs(parts, depth=0):
    for p in parts:
        if isinstance(p, tuple) and p[0] == "group":
            yield from _flat_refs(p[1], depth + 1)
        elif isinstance(p, tuple):
            yield (p[0], p[1], depth)


@pytest.mark.budget
@settings(max_examples=budget(60, 150), deadline=None)
@given(_parts(2))
def test_roundtrip_property(parts):
    legacy = _render(parts, ph.LEGACY)
    expected = list(_flat_refs(parts))
    assert [(r.source, r.name, len(r.groups)) for r in ph.references(legacy, ph.LEGACY)] == expected
    assert ph.render(ph.parse(legacy).parts, ph.LEGACY) == legacy
    v2 = ph.legacy_to_v2(legacy)
    assert v2 == _render(parts, ph.V2)
    assert [(r.source, r.name, len(r.groups)) for r in ph.references(v2, ph.V2)] == expected
    # with everything set, resolving removes exactly the group markers
    assert ph.drop_unset_groups(v2, lambda ref: True).replace(" ", "") == (
        v2.replace("$[[", "").replace("]]", "").replace(" ", "")
    )


# ---- dotted v2 names (flattened parameter groups) ----

def test_v2_names_may_be_dotted_like_azure_ai_ml_port_names():
    text = "echo $[[--n ${{inputs.group.number}}]] ${{ inputs.group.sub1.integer }} ${{outputs.out.part}}"
    refs = ph.references(text, ph.V2)
    assert names(refs) == [("inputs", "group.number", True), ("inputs", "group.sub1.integer", False),
                           ("outputs", "out.part", False)]
    assert text[refs[1].start:refs[1].end] == "${{ inputs.group.sub1.integer }}"
    # groups resolve on the whole dotted name; render writes it back unchanged
    assert ph.drop_unset_groups(text, {"group.sub1.integer"}) == \
        "echo ${{inputs.group.sub1.integer}} ${{outputs.out.part}}"
    assert ph.drop_unset_groups(text, {"group.number", "group.sub1.integer"}).startswith(
        "echo --n ${{inputs.group.number}} ")


@pytest.mark.parametrize("text", [
    "x ${{inputs.group.}}", "x ${{inputs.group..n}}", "x ${{inputs.group.1n}}", "x ${{inputs..n}}",
])
def test_v2_dotted_names_need_a_name_on_each_side_of_every_dot(text):
    with pytest.raises(ph.PlaceholderSyntaxError) as info:
        ph.parse(text, ph.V2)
    assert (info.value.code, info.value.offset) == ("malformed-placeholder", 2)
    assert "dotted" in info.value.hint


def test_legacy_names_stay_undotted():
    with pytest.raises(ph.PlaceholderSyntaxError) as info:
        ph.parse("python t.py [--n {inputs.group.number}]", ph.LEGACY)
    assert info.value.code == "malformed-placeholder" and "dotted" not in info.value.hint
