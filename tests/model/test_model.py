import pytest

from amldist import model as spec
from amldist.errors import UserError
from amldist.model.kinds import detect_kind
from amldist.model.yamlio import load_yaml
from tests.conftest import conformance_files

VALID = conformance_files("valid") + conformance_files("invalid")


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_load_dump_load_is_identity(path):
    original = spec.load(path)
    again = spec.loads(original.to_yaml())
    assert again == original
    # the data itself survives too, not only the model's view of it
    assert load_yaml(original.to_yaml()).data == load_yaml(path.read_text()).data


def test_corpus_present_or_skipped(conformance_dir):
    assert len(conformance_files("valid")) >= 40


def test_unknown_keys_kept_in_order_after_modelled_ones():
    text = "zeta: 1\ncommand: echo hi\ntype: command\nalpha: 2\nresources: {instance_count: 2, foo: 3}\n"
    job = spec.loads(text)
    assert isinstance(job, spec.CommandJob)
    assert job.resources.instance_count == 2 and job.resources.extra == {"foo": 3}
    assert list(job.to_dict()) == ["type", "command", "resources", "zeta", "alpha"]
    assert list(job.to_dict()["resources"]) == ["instance_count", "foo"]


@pytest.mark.parametrize(
    "data, kind",
    [
        ({"$schema": "https://x/commandComponent.schema.json", "command": "x"}, "command_component"),
        ({"$schema": "https://x/CommandJob.schema.json", "type": "command"}, "command_job"),
        ({"type": "command", "command": "x", "version": 1}, "command_component"),
        ({"type": "command", "command": "x", "version": 1, "compute": "c"}, "command_job"),
        ({"type": "command", "command": "x", "version": 1, "queue_settings": {}}, "command_component"),
        ({"command": "x"}, "command_job"),
        ({"type": "pipeline", "jobs": {}}, "pipeline_job"),
        ({"type": "DistributedComponent@1-legacy"}, "distributed_component"),
        ({"type": "distributedcomponent"}, "distributed_component"),
        ({"type": "sweep"}, "sweep_job"),
        ({"type": "spark"}, None),
        (["a"], None),
        ("text", None),
    ],
)
def test_detect_kind(data, kind):
    assert detect_kind(data) == kind


def test_yaml_errors_carry_position():
    with pytest.raises(spec.SpecLoadError) as info:
        spec.loads("type: command\ncommand: a\ncommand: b\n", file="j.yml")
    assert (info.value.line, info.value.col, info.value.code) == (3, 1, "duplicate-key")
    assert str(info.value).startswith("j.yml:3:1: duplicate key 'command'")


@pytest.mark.parametrize("first, second, meaning", [
    ("True", "yes", "the boolean true"), ("on", "On", "the boolean true"), ("no", "False", "the boolean false"),
    ("1", "1.0", "the number 1.0"), ("~", "null", "null"),
])
def test_a_duplicate_key_that_yaml_reads_as_no_text_is_named_as_written(first, second, meaning):
    with pytest.raises(spec.SpecLoadError) as info:
        spec.loads(f"type: command\ntags:\n  {first}: a\n  {second}: b\n", file="j.yml")
    assert (info.value.line, info.value.col, info.value.code) == (4, 3, "duplicate-key")
    assert str(info.value) == (f"j.yml:4:3: duplicate key {second!r}: YAML reads it as {meaning}, the same key as "
                               f"{first!r} at line 3")
    assert "\n" not in str(info.value) + info.value.hint and f"'{second}': ..." in info.value.hint


@pytest.mark.parametrize(
    "text, code",
    [
        ("a: !!python/object/apply:os.system ['echo pwned']\n", "yaml-unsafe-tag"),
        ("a: [1, 2\n", "yaml-syntax"),
        ("", "empty-file"),
        ("a: 1\n---\nb: 2\n", "yaml-multiple-documents"),
        ("a: &a [*a]\n", "yaml-too-deep"),
        ("just text\n", "not-a-spec"),
    ],
)
def test_bad_documents_raise_one_clear_error(text, code):
    with pytest.raises(spec.SpecLoadError) as info:
        spec.loads(text)
    assert info.value.code == code


def test_alias_bomb_is_bounded():
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefg", "bcdefgh"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(spec.SpecLoadError) as info:
        spec.loads("\n".join(lines) + "\n")
    assert info.value.code == "yaml-too-large"


def test_save_never_overwrites_without_being_asked(tmp_path):
    job = spec.loads("type: command\ncommand: echo hi\n")
    target = tmp_path / "job.yml"
    target.write_text("mine\n")
    with pytest.raises(UserError):
        job.save(target)
    assert target.read_text() == "mine\n"
    job.save(target, overwrite=True)
    assert spec.load(target) == job


def test_multiline_command_dumps_as_block():
    job = spec.loads("type: command\ncommand: |\n  echo a\n  echo b\n")
    assert "command: |\n  echo a\n  echo b\n" in job.to_yaml()


def test_every_modelled_field_defaults_to_not_given():
    # A default other than None would be written by to_dict() for files that never had the key,
    # and load -> dump -> load would stop being the identity.
    from dataclasses import MISSING, fields

    from amldist.model.specs import SPEC_CLASSES, Distribution, Launcher, Limits, Resources

    for cls in (*SPEC_CLASSES.values(), Distribution, Resources, Limits, Launcher):
        for f in fields(cls):
            if f.name != "extra":
                assert f.default is None and f.default_factory is MISSING, (cls.__name__, f.name)
