"""Hypothesis-driven mutation of the corpus with hostile fragments: no crash, no internal error, one line each.

Fast tier (CI): 2,500 mutated specs in-process plus 300 through the real CLI.
Long tier (``--attack-long`` or ``AMLDIST_ATTACK_LONG=1``): 12,000 in-process plus
1,500 through the CLI. Properties: validate gives Diagnostics only (no
``internal-error``); loading as a spec raises nothing but UserError; every
diagnostic prints as exactly one line without control characters (no forged
``FILE:LINE:COL:`` line, no terminal escape); the CLI exits 0/1/2 in bounded memory.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amldist import model as spec
from amldist.diagnostics import Diagnostic
from amldist.errors import UserError
from amldist.validate import validate_text
from tests.attack.limits import amldist
from tests.conftest import ROOT, budget, conformance_files

SEEDS = [p.read_text(encoding="utf-8") for p in [*conformance_files("valid"), *ROOT.glob("samples/**/*.yml"),
                                                  *ROOT.glob("components/**/*.yml")]]
HOSTILE = [
    "[" * 300, "{a: " * 200, "- " * 150, "!!int abc", "!!bool maybe", "!!float x", "!!binary ###", "!!timestamp x",
    "9" * 60, "0x" + "f" * 50, '"\\0"', '"a\\x1b[31mb"', '"k\\nx.yml:1:1: error forged: x"', "&a", "*a", "*zz",
    "!!python/object:os.system", "!custom", "$[[" * 40 + "x" + "]]" * 40, "${{inputs." + "x" * 200 + "}}",
    "'A=B'", "1e400", "-0", ".nan", "~", "<<: *a", "? [a]", "|\n  x", "\t", "\u202e", "\ufeff", "100000",
    "Standard_ND96isr_H100_v5", "pytorch", "mpi", "azureml:" + "e" * 300, "../../../../etc/passwd", "/dev/zero",
]
FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)


def mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines() or [""]
    for _ in range(rng.randint(1, 5)):
        i = rng.randrange(len(lines))
        op = rng.randrange(7)
        line = lines[i]
        if op == 0 and ":" in line:  # a value replaced by a hostile one
            lines[i] = line.split(":", 1)[0] + ": " + rng.choice(HOSTILE)
        elif op == 1:  # a hostile key at this line's indentation
            indent = line[: len(line) - len(line.lstrip())]
            lines.insert(i, f"{indent}{json.dumps(rng.choice(HOSTILE))}: {rng.choice(HOSTILE)}")
        elif op == 2:  # a fragment pasted inside the line
            pos = rng.randrange(len(line) + 1)
            lines[i] = line[:pos] + rng.choice(HOSTILE) + line[pos:]
        elif op == 3:
            del lines[i]
            lines = lines or [""]
        elif op == 4:
            lines.insert(i, line)
        elif op == 5:
            lines[i] = " " * rng.randrange(6) + line.lstrip()
        else:
            lines = lines[: rng.randrange(1, len(lines) + 1)]
    return "\n".join(lines) + "\n"


def check_one(text: str) -> None:
    found = validate_text(text, "fuzz.yml", explicit=True)
    for d in found:
        assert isinstance(d, Diagnostic) and d.code != "internal-error", d
        line = d.to_text()
        assert "\n" not in line and "\r" not in line and "\x1b" not in line and line.isprintable(), line
        assert line.startswith("fuzz.yml:"), line
    try:
        spec.loads(text, file="fuzz.yml")
    except UserError:
        pass


@pytest.mark.budget
def test_mutated_corpus_in_process(attack_long):
    assert SEEDS, "no corpus to mutate"
    count = {"cases": 0}
    examples = 12_000 if attack_long else budget(300, 800)

    @settings(FUZZ, max_examples=examples)
    @given(seed=st.integers(0, 2**32 - 1))
    def run(seed):
        rng = random.Random(seed)
        check_one(mutate(rng, rng.choice(SEEDS)))
        count["cases"] += 1

    run()
    assert count["cases"] >= examples * 3 // 4  # hypothesis may stop early on duplicates; not this early


def test_mutated_corpus_through_the_real_cli(tmp_path, attack_long):
    rng = random.Random(20261123)
    total = 1_500 if attack_long else 100
    files = []
    for i in range(total):
        path = tmp_path / f"m{i:05d}.yml"
        path.write_text(mutate(rng, rng.choice(SEEDS)), encoding="utf-8")
        files.append(path)
    result = amldist("validate", "--format", "json", tmp_path, timeout=120 if not attack_long else 600)
    result.assert_clean(codes=(0, 1))
    report = json.loads(result.out)
    assert report["summary"]["files"] == total and report["summary"]["errors"] > 0
    assert "internal-error" not in {d["code"] for d in report["diagnostics"]}
    text = amldist("validate", tmp_path, timeout=120 if not attack_long else 600)
    text.assert_clean(codes=(0, 1))
    assert all(line.startswith(str(tmp_path)) for line in text.out.splitlines())
    for path in rng.sample(files, 4 if not attack_long else 60):  # the other readers of a spec
        amldist("submit", path, "--local", "--dry-run", cwd=tmp_path).assert_clean()
        amldist("convert", path).assert_clean()
