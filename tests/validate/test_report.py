"""From schema errors to diagnostics: which union branch is shown, hints, did-you-mean, positions."""

from __future__ import annotations

from amldist.spec.yamlio import load_yaml
from amldist.spec.suggestions import suggest
from amldist.validate.messages import words_of
from amldist.validate.registry import Registry
from amldist.spec.field_paths import field_path
from amldist.validate.report import Reporter

URI = "https://amldist.dev/schemas/u.schema.json"
BRANCH_HINT = "the legacy launcher name torch.distributed is `pytorch` in v2"
SCHEMA = {
    "$id": URI,
    "type": "object",
    "properties": {
        "distribution": {"oneOf": [{"$ref": "#/$defs/pytorch"}, {"$ref": "#/$defs/tensorflow"}],
                         "x-amldist-hint": "union hint"},
        "environment": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/inline"}]},
        "mode": {"anyOf": [{"const": "ro_mount"}, {"const": "upload"}]},
    },
    "additionalProperties": False,
    "$defs": {
        "pytorch": {"type": "object", "required": ["type"], "additionalProperties": False,
                    "properties": {"type": {"pattern": "^[pP][yY][tT][oO][rR][cC][hH]$", "x-amldist-hint": BRANCH_HINT},
                                   "process_count_per_instance": {"type": "integer", "minimum": 1}}},
        "tensorflow": {"type": "object", "required": ["type"], "additionalProperties": False,
                       "properties": {"type": {"const": "tensorflow"}, "worker_count": {"type": "integer"}}},
        "inline": {"type": "object", "properties": {"image": {"type": "string"}}, "additionalProperties": False},
    },
}


def report(text: str):
    doc = load_yaml(text)
    registry = Registry({URI: SCHEMA})
    reporter = Reporter(registry, "f.yml", doc)
    reporter.add_errors(registry.validator(URI)(doc.data))
    return [(d.code, d.field, d.line, d.col, d.message, d.hint) for d in reporter.out]


def test_the_branch_whose_type_matches_is_the_one_reported():
    found = report("distribution:\n  type: PyTorch\n  process_count_per_instance: 0\n  worker_count: 2\n")
    assert [(code, field, line) for code, field, line, *_ in found] == [
        ("out-of-range", "distribution.process_count_per_instance", 3),
        ("unknown-key", "distribution.worker_count", 4),
    ]  # nothing about tensorflow's branch, whose type did not match


def test_a_type_no_branch_accepts_lists_the_words_and_suggests():
    [(code, field, line, col, message, hint)] = report("distribution:\n  type: torch.distributed\n")
    assert (code, field, line, col) == ("invalid-value", "distribution.type", 2, 3)
    assert message == "distribution.type: 'torch.distributed' is not one of: pytorch, tensorflow"
    assert hint == f"{BRANCH_HINT}; did you mean 'pytorch'?"


def test_unions_without_a_discriminator():
    assert [f[:2] + (f[4],) for f in report("environment: 5\n")] == [
        ("wrong-type", "environment", "environment: expected a string or a mapping, got 5")]
    assert [f[:2] for f in report("environment:\n  imag: x\n")] == [("unknown-key", "environment.imag")]
    [(code, field, _, _, message, hint)] = report("mode: uplaod\n")
    assert (code, field, hint) == ("invalid-value", "mode", "did you mean 'upload'?")
    assert message == "mode: 'uplaod' is not one of: ro_mount, upload"


def test_unknown_top_level_key_is_reported_at_the_key():
    [(code, field, line, col, message, hint)] = report("mode: upload\ndistributon:\n  type: pytorch\n")
    assert (code, field, line, col, hint) == ("unknown-key", "distributon", 2, 1, "did you mean 'distribution'?")
    assert message == "unknown key 'distributon' in the document"


def test_helpers():
    assert field_path(("jobs", "train", "inputs", 0, "x")) == "jobs.train.inputs[0].x"
    assert field_path(("inputs", "group.lr")) == "inputs.group.lr"  # a parameter group's input
    assert field_path(("tags", "a[0]")) == 'tags["a[0]"]'
    assert words_of({"pattern": "^([pP][yY]|[mM][pP][iI])$"}) == ["py", "mpi"]
    assert words_of({"pattern": "^\\d+$"}) == []
    assert suggest("Pytorch", ["pytorch", "mpi"]) == "pytorch"
    assert suggest("instnce_type", ["instance_type", "instance_count"]) == "instance_type"
    assert suggest("zzz", ["pytorch"]) is None


def test_unknown_key_warnings_say_what_azure_ai_ml_does_there():
    from amldist.validate import validate_text
    from amldist.validate.report import DROPS, LEGACY_TOP, SENDS

    def warned(text):
        return {d.field: d.message for d in validate_text(text) if d.code == "unknown-key" and d.severity == "warning"}

    component = ("$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\n"
                 "type: command\nname: c\nversion: 1\nenvironment: azureml:env:1\ncommand: x\ncompute: cpu\n"
                 "distribution:\n  type: mpi\n  process_count: 2\nresources:\n  gpus: 2\n"
                 "intellectual_property:\n  publisher: me\n  owner: you\n")
    found = warned(component)
    assert found["compute"] == f"unknown key 'compute' in the document ({SENDS})"
    assert found["distribution.process_count"].endswith(f"in distribution ({DROPS})")
    assert found["resources.gpus"].endswith(f"in resources ({DROPS})")
    assert found["intellectual_property.owner"] == "unknown key 'owner' in intellectual_property"  # not verified
    pipeline = ("type: pipeline\nsettings:\n  default_compute: azureml:cpu\n  environment: x\njobs:\n  a:\n"
                "    type: command\n    component:\n      command: x\n      environment: azureml:env:1\n"
                "      colour: red\n      resources:\n        gpus: 1\n")
    found = warned(pipeline)
    assert found == {"settings.environment": f"unknown key 'environment' in settings ({SENDS})",
                     "jobs.a.component.colour": f"unknown key 'colour' in jobs.a.component ({SENDS})",
                     "jobs.a.component.resources.gpus": f"unknown key 'gpus' in jobs.a.component.resources ({DROPS})"}
    legacy = ("name: x.y\nversion: 0.0.1\ntype: DistributedComponent\nowner: me\nenvironment:\n  name: AzureML-Minimal\n"
              "launcher:\n  type: mpi\n  additional_arguments: python t.py\n")
    assert warned(legacy) == {"owner": f"unknown key 'owner' in the document ({LEGACY_TOP})"}
    assert "drops" not in SENDS and "drops" not in LEGACY_TOP and "drops" in DROPS
