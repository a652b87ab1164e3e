"""Issue 2, point 8: malformed and random documents never crash the validator.

Thousands of documents: text-level mutations of real specs (deleted, duplicated
and swapped lines, wrong indentation, values of another type, random keys,
truncation, stray anchors and tags), random YAML, and random bytes. Most go
through the API in-process; a batch goes through the real CLI, which must exit
0 or 1 and name every file.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amldist.diagnostics import Diagnostic
from amldist.model.yamlio import dump_yaml
from amldist.validate import validate_file, validate_text
from tests.conftest import budget, conformance_files
from tests.validate.helpers import fixture_files, run_cli
from tests.validate.strategies import random_value

SEED_TEXTS = [p.read_text() for p in [*fixture_files("valid"), *conformance_files("valid")]]
KEYS = ["type", "command", "distribution", "resources", "process_count_per_instance", "instance_count",
        "inputs", "outputs", "launcher", "additional_arguments", "jobs", "component", "optional", "code"]
WORDS = ["pytorch", "mpi", "tensorflow", "torch.distributed", "${{inputs.x}}", "{inputs.y}", "$[[", "]]", "[", "]",
         "Standard_NC24s_v3", "-4", "0", "4.5", "lots", "16g", "azureml:e:1", "../x.yml"]
VALUES = ["4", "-1", "4.5", "[a, b]", "{}", "null", "yes", "'str'", "{a: 1}", "!!binary aGk=", "&x 1", "*x",
          "!!python/name:os.system", "|\n  block", "${{parent.inputs.nope}}", "[--x ${{inputs.x}}", "~"]


def mutate_text(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        if not lines:
            lines = [""]
        i = rng.randrange(len(lines))
        op = rng.randrange(9)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = " " * rng.choice([1, 2, 3, 4]) + lines[i] if rng.random() < 0.6 else lines[i].lstrip()
        elif op == 4 and ":" in lines[i]:
            lines[i] = lines[i].split(":", 1)[0] + ": " + rng.choice(VALUES)
        elif op == 5:
            indent = " " * (len(lines[i]) - len(lines[i].lstrip()))
            lines.insert(i, f"{indent}{rng.choice(KEYS)}{rng.choice(['', 's', '_'])}: {rng.choice(WORDS + VALUES)}")
        elif op == 6:
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice(["\t", "{", "[", "'", '"', "&a ", "*a", ":", "- ", "\x00", "é"]) \
                + lines[i][pos:]
        elif op == 7:
            lines = lines[: rng.randrange(len(lines) + 1)]
        else:
            lines[i] = lines[i].replace(rng.choice(["1", "2", "4", "8"]), rng.choice(["0", "-3", "9999", "x"]))
    return "\n".join(lines) + rng.choice(["\n", ""])


def random_yaml(rng: random.Random) -> str:
    value = random_value(rng, KEYS, WORDS, depth=4)
    if isinstance(value, dict) and rng.random() < 0.7:
        value.setdefault("type", rng.choice(["command", "pipeline", "DistributedComponent", "sweep"]))
    return dump_yaml(value)


def check(diags, file):
    assert isinstance(diags, list)
    for d in diags:
        assert isinstance(d, Diagnostic) and d.file == file, d
        assert d.severity in ("error", "warning", "note") and d.code != "internal-error", d
        assert isinstance(d.line, int) and isinstance(d.col, int) and d.line >= 0 and d.col >= 0, d
        assert isinstance(d.message, str) and d.message, d


FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.mark.budget
@settings(FUZZ, max_examples=budget(400, 1500))
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_specs(seed):
    rng = random.Random(seed)
    check(validate_text(mutate_text(rng, rng.choice(SEED_TEXTS)), "m.yml", explicit=rng.random() < 0.5), "m.yml")


@pytest.mark.budget
@settings(FUZZ, max_examples=budget(150, 600))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_yaml(seed):
    rng = random.Random(seed)
    text = random_yaml(rng)
    if rng.random() < 0.5:
        text = mutate_text(rng, text)
    check(validate_text(text, "r.yml"), "r.yml")


@pytest.mark.budget
@settings(FUZZ, max_examples=budget(100, 300))
@given(data=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bytes") / "b.yml"
    path.write_bytes(data)
    check(validate_file(path), str(path))


def test_a_batch_through_the_real_cli(tmp_path):
    rng = random.Random(20261121)
    files = []
    for i in range(240):
        pick = i % 4
        path = tmp_path / f"doc_{i:03d}.yml"
        if pick == 0:
            path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(200))))
        elif pick == 1:
            path.write_text(random_yaml(rng))
        else:
            path.write_text(mutate_text(rng, rng.choice(SEED_TEXTS)), encoding="utf-8", errors="replace")
        files.append(str(path))
    code, out, err = run_cli("validate", "--format", "json", *files, timeout=120)
    assert code in (0, 1), err
    report = json.loads(out)
    assert [f["file"] for f in report["files"]] == files
    assert code == (1 if report["summary"]["errors"] else 0)
    assert "internal-error" not in {d["code"] for d in report["diagnostics"]}
    failing = {d["file"] for d in report["diagnostics"] if d["severity"] == "error"}
    assert failing, "the batch should contain broken files"
    code, out, err = run_cli("validate", *files, timeout=120)  # text: every failing file is named
    assert code in (0, 1) and "Traceback" not in err
    named = {line.split(":", 1)[0] for line in out.splitlines()}
    assert failing <= named
    assert f"{len(files)} files," in err
