"""Issue 17's injection guarantee, tried as an attacker would: wrappers x shells and evaluators x
quoting x payloads, each rendered by the local backend and run through real bash and dash. No
payload ever runs a command: each is either refused naming the input, or passed to a program on
the allow-list as its literal text (behind a wrapper, which is not on the list, it is refused).
The generated oracle over many more forms is tests/attack/test_shell_oracle.py."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amldist.engine.command import render
from amldist.errors import UserError
from amldist.rules.shell_values import SUBSCRIPT_COMMAND

SHELLS = [path for path in (shutil.which("bash"), shutil.which("dash")) if path]
WRAPPERS = ["", "timeout 20 ", "/usr/bin/env ", "env -u NOPE ", "nice -n 1 ", "nohup ", "command ", "stdbuf -oL ",
            "setsid ", "timeout 20 nice -n 1 /usr/bin/env "]
QUOTES = {"bare": "{}", "double": '"{}"', "single": "'{}'"}
V = "${{inputs.v}}"
# Where a shell or evaluator would read the value as code: @@ is the placeholder as quoted.
CODE_CONTEXTS = [
    "{w}bash -c @@", "{w}sh -c @@", "{w}\"bash\" -c @@", "{w}/bin/sh -ec @@", "$SHELL -c @@", "{w}eval @@",
    "trap @@ EXIT", "{w}bash <<< @@", "echo @@ | {w}sh", "printf '%s' @@ | xargs -0 {w}sh -c",
    "find . -maxdepth 0 -exec {w}sh -c @@ \\;", "{w}@@", "N=@@; echo $((N+1))", "echo $((@@))",
    "{w}sh -c \"echo @@\"", "{w}bash <<EOF\n@@\nEOF", "x=$(echo @@); {w}bash -c \"$x\"", "read -r x <<< @@; eval \"$x\"",
    "export Y=@@; {w}sh -c 'eval \"$Y\"'", "{w}bash -c 'eval \"$1\"' _ @@", "f() { eval \"$1\"; }; f @@",
    "set -- @@; eval \"$@\"", "PS4=@@; set -x; :", "{w}bash -c 'eval \"$(cat)\"' <<< @@",
    "while read -r l; do eval \"$l\"; done <<< @@", "read -r l < <(echo @@); eval \"$l\"",
    "echo @@ | (read -r l; eval \"$l\")", "{w}bash < <(echo @@)",
]
# Where the value is an argument of an ordinary program: it must arrive as its literal text.
ARGUMENT_CONTEXTS = ["{w}python3 -c 'import sys; print(\"\".join(f\"<{a}>\\n\" for a in sys.argv[1:]), end=\"\")' @@",
                     "{w}python3 -c 'import sys; print(sys.argv[1:])' @@"]
PAYLOADS = ["; touch M", "$(touch M)", "`touch M`", "' ; touch M ; '", '" ; touch M ; "', "\ntouch M\n", "| touch M",
            "&& touch M", "a[$(touch M)]", "a[b[0]+$(touch M)]", "x; touch M #", "$(touch${IFS}M)", "\"$(touch M)\"",
            "';touch M;'", "${x:=$(touch M)}", "touch M;"]
HOSTILE = st.one_of(st.sampled_from(PAYLOADS), st.tuples(st.text(st.sampled_from("ab $`'\"\\;&|<>()\n"), max_size=4),
                                                         st.sampled_from(PAYLOADS)).map("".join))


def command_for(template: str, wrapper: str, quote: str) -> str:
    return template.replace("{w}", wrapper).replace("@@", QUOTES[quote].format(V))


def attempt(shell: str, command: str, value: str, cwd) -> str | None:
    """The output of the rendered command, or None when amldist refused the value (naming it)."""
    try:
        rendered = render(command, {"inputs.v": value})
    except UserError as exc:
        assert "inputs.v" in str(exc) and "\n" not in str(exc), exc
        return None
    env = {"PATH": os.environ["PATH"], "SHELL": "/bin/sh", **rendered.env}
    done = subprocess.run([shell, "-c", rendered.command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    return done.stdout


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("template", CODE_CONTEXTS)
def test_every_wrapper_and_quoting_of_a_code_context_refuses_the_payload(tmp_path, shell, template):
    for wrapper in WRAPPERS if "{w}" in template else [""]:
        for quote in QUOTES:
            command = command_for(template, wrapper, quote)
            assert attempt(shell, command, "x; touch M", tmp_path) is None, command
            assert not (tmp_path / "M").exists(), command


@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=st.sampled_from(CODE_CONTEXTS + ARGUMENT_CONTEXTS), wrapper=st.sampled_from(WRAPPERS),
       quote=st.sampled_from(sorted(QUOTES)), value=HOSTILE)
def test_no_payload_ever_runs_a_command(tmp_path_factory, shell, template, wrapper, quote, value):
    cwd = tmp_path_factory.mktemp("run")
    command = command_for(template, wrapper, quote)
    output = attempt(shell, command, value, cwd)
    assert not (cwd / "M").exists(), (command, value)
    if template in ARGUMENT_CONTEXTS and output is not None and quote != "bare" and template == ARGUMENT_CONTEXTS[0]:
        if "'" not in value or quote == "double":  # the literal text, one argument (a ' ends '...' on Azure ML)
            assert output == f"<{value}>\n", (command, value)


@pytest.mark.parametrize("shell", SHELLS)
def test_an_ordinary_argument_gets_the_payload_as_its_literal_text_in_any_quoting(tmp_path, shell):
    for payload in PAYLOADS:
        for quote in ("double", "single"):
            output = attempt(shell, command_for(ARGUMENT_CONTEXTS[0], "", quote), payload, tmp_path)
            assert not (tmp_path / "M").exists(), (quote, payload)
            if SUBSCRIPT_COMMAND.search(payload):  # refused everywhere: bash arithmetic could reach it by name
                assert output is None
            else:
                assert output == f"<{payload}>\n", (quote, payload)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_benign_value_behind_a_wrapper_in_a_nested_shell_runs_as_azure_ml_would(tmp_path, shell):
    for quote in QUOTES:
        command = command_for("{w}bash -c X", "timeout 20 ", quote).replace(V, "printf <%s> " + V)
        rendered = render(command, {"inputs.v": "a b"})
        done = subprocess.run([shell, "-c", rendered.command], env={"PATH": os.environ["PATH"], **rendered.env},
                              capture_output=True, text=True, timeout=30)
        pasted = subprocess.run([shell, "-c", command.replace(V, "a b")], capture_output=True, text=True, timeout=30)
        assert done.stdout == pasted.stdout, (quote, done.stderr)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_payloads_pasted_as_azure_ml_does_would_run(tmp_path, shell):
    """The tests above can fail: pasted into the same commands, the payloads do run."""
    ran = 0
    for template in CODE_CONTEXTS[:12]:
        folder = tmp_path / str(abs(hash(template)))
        folder.mkdir()
        command = command_for(template, "timeout 20 ", "double").replace(V, "x; touch M")
        subprocess.run([shell, "-c", command], cwd=folder, capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                       env={"PATH": os.environ["PATH"], "SHELL": "/bin/sh"})
        ran += (folder / "M").exists()
    assert ran >= 6  # dash has no here-strings
