"""Mutated specs past ``validate``: every reader after it (``submit --local --dry-run``, the Azure dry run,
``convert``) ends with exit 0/1/2 and one clear line, never an internal error (issue 17 point 8).

The mutations replace one value by a hostile one of the same kind or a different one (``min: "true"``,
a 5,000-digit size name or count, a huge timeout, bindings to nothing, names with newlines), so that
many mutants still pass ``validate`` and reach the conversion to a job and the Azure body. Fast tier
(CI): 120 mutants; long tier (``--attack-long``): 10,000, with 0 internal errors.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import random

import yaml

from amldist.cli.main import main
from tests.conftest import ROOT, conformance_files

SEEDS = [p for p in [*conformance_files("valid"), *ROOT.glob("samples/**/*.yml"), *ROOT.glob("components/**/*.yml"),
                     *ROOT.glob("tests/fixtures/real_specs/**/*.yml")]]  # real public specs: pipelines, spark, ...
ANY = ["true", True, 0, -1, 2**70, "9" * 5000, 1e308, "", None, [], {}, ["a"], {"a": 1}, "a\nb", "\x1b[31mred",
       "../../x", "Standard_NC" + "9" * 5000 + "s_v3", "1:30", "0123", "${{inputs.x}}", "${{parent.inputs.x}}",
       {"type": "integer", "min": "true"}, {"type": "number", "max": "x"}, {"type": "uri_folder", "path": "../../x"}]
BY_TYPE = {
    int: [0, -1, 2**31, 2**63, 10**400, True, "1", 1.5, None, "9" * 5000],
    float: [0.0, -1e308, float("inf"), 10**400, "nan", None],
    str: ["", "true", "9" * 5000, "../../x", "a\nb", "\x1b[31m", "${{inputs.zz}}", "${{parent.inputs.zz}}",
          "${{parent.jobs.zz.outputs.o}}", "1:30", "x" * 300, "azureml:x:1", "0123", None, 5, ["a"], {"a": 1}],
    bool: ["true", 1, None, "maybe"],
}
KEYS = ["min", "max", "enum", "default", "optional", "type", "path", "mode", "name", "zz"]


def _places(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (key,)
            yield from _places(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield path + (i,)
            yield from _places(value, path + (i,))


def _hostile(rng, old):
    for kind, values in BY_TYPE.items():
        if type(old) is kind:
            return rng.choice(values)
    if isinstance(old, dict):
        return {**old, rng.choice(KEYS): rng.choice(ANY)}
    return rng.choice(ANY)


def mutate(rng: random.Random, data: dict) -> dict:
    for _ in range(rng.choice((1, 1, 1, 2))):
        places = list(_places(data))
        if not places:
            break
        where = rng.choice(places)
        node = data
        for part in where[:-1]:
            node = node[part]
        node[where[-1]] = copy.deepcopy(_hostile(rng, node[where[-1]]))
    return data


def _run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


def _case(rng: random.Random, folder) -> list[str]:
    """One mutant through every reader; the problems found (empty when all is well)."""
    source = rng.choice(SEEDS)
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return []
    folder.mkdir()
    for entry in os.listdir(source.parent):  # the seed's code and component files, as the spec names them
        if entry != source.name:
            os.symlink(source.parent / entry, folder / entry)
    spec = folder / "spec.yml"
    spec.write_text(yaml.safe_dump(mutate(rng, data)), encoding="utf-8")
    problems = []
    for args in (["validate", str(spec)], ["submit", str(spec), "--local", "--dry-run"],
                 ["submit", str(spec), "--dry-run"], ["convert", str(spec), "-o", str(folder / "out.yml")]):
        code, err = _run(args)
        if code not in (0, 1, 2) or "internal error" in err or "Traceback" in err:
            problems.append(f"{source.relative_to(ROOT.parent) if ROOT.parent in source.parents else source}: "
                            f"{' '.join(args[:1] + args[2:3])}: {err.strip()[-300:]}")
    return problems


def test_mutants_past_validate_never_crash_a_later_reader(tmp_path, monkeypatch, attack_long):
    assert SEEDS, "no corpus to mutate"
    monkeypatch.delenv("AMLDIST_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    rng = random.Random(20261126)
    total = 10_000 if attack_long else 40
    problems = []
    for i in range(total):
        problems += _case(rng, tmp_path / f"m{i:05d}")
    assert problems == [], "\n".join(problems[:20])
