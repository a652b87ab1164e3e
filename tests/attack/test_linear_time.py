"""validate and the dry runs are linear in the spec's size (issue 24): the time for a spec eight times as
large, measured in the same run, stays near eight times the time (a quadratic shape gives sixty-four; the
bound leaves room for a loaded machine), and a component that many pipeline steps use is analysed once.
Before issue 24, pipes and here-documents into a shell took 1.3 s of CPU for an 80 KB command (65x for 8x)."""

from __future__ import annotations

import time

import pytest

from amldist.rules import shell_grammar
from amldist.validate import validate_text

NAMES = [f"in_{k}" for k in range(40)]
# command shapes that were (or could be) quadratic: many placeholders, optional groups (v2 and legacy
# brackets), here-documents and lines outside the grammar, plain brackets, long runs of quotes
UNITS = {
    "placeholders": "python t.py " + " ".join(f"--{n} ${{{{inputs.{n}}}}}" for n in NAMES[:10]) + "\n",
    "optional groups": "python t.py " + " ".join(f"$[[--{n} ${{{{inputs.{n}}}}}]]" for n in NAMES[:10]) + "\n",
    "here-documents": "cat <<EOF\n${{inputs.in_1}} [x]\nEOF\nbash -c \"echo ${{inputs.in_2}}\"\n",
    "brackets and quotes": "echo [a] 'b' \"c\" \\\\ $[[--x ${{inputs.in_3}}]] # ${{inputs.in_4}}\n",
    "pipes into a shell": "echo ${{inputs.in_1}} | sh\ncat <<E | sh\n${{inputs.in_2}}\nE\n",
}


def spec(unit: str, size: int) -> str:
    body = unit * (size // len(unit) + 1)
    inputs = "".join(f"  {n}: {{type: string, default: a, optional: true}}\n" for n in NAMES)
    command = "".join(f"  {line}\n" for line in body.splitlines())
    return (f"type: command\nname: c\nversion: '1'\nenvironment: azureml:env:1\ninputs:\n{inputs}"
            f"command: |\n{command}")


def cpu_time(text: str) -> float:
    """The least CPU time of three validations (CPU time: other processes on the machine do not count)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        validate_text(text, "c.yml")
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("shape", sorted(UNITS))
def test_validate_time_grows_linearly_with_the_spec_size(shape):
    small, large = spec(UNITS[shape], 10_000), spec(UNITS[shape], 80_000)
    validate_text(small, "c.yml")  # imports and caches warm
    ratio = cpu_time(large) / max(cpu_time(small), 1e-4)
    assert ratio < 20.0, f"{shape}: eight times the size took {ratio:.1f} times as long"


def test_a_component_used_by_many_steps_is_analysed_once(tmp_path, monkeypatch, cli):
    component = tmp_path / "step.yml"
    component.write_text("type: command\nname: step\nversion: '1'\nenvironment: azureml:env:1\n"
                         "inputs:\n  n: {type: integer, default: 1}\n"
                         "command: python t.py --n ${{inputs.n}} | tee log\n")
    (tmp_path / "t.py").write_text("")
    steps = "".join(f"  s{k}:\n    type: command\n    component: ./step.yml\n    inputs: {{n: {k}}}\n"
                    for k in range(40))
    pipeline = tmp_path / "p.yml"
    pipeline.write_text(f"type: pipeline\ncompute: azureml:cpu\njobs:\n{steps}")
    calls = []
    real = shell_grammar.analyse
    monkeypatch.setattr(shell_grammar, "analyse", lambda text, spans: calls.append(text) or real(text, spans))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("submit", str(pipeline), "--local", "--dry-run")
    assert code == 0, err
    assert "s39" in out and 1 <= len(calls) <= 3, len(calls)  # validate's reading, the plan's: not once per step
