"""Placeholder contexts, and commands run through real shells: no value runs a command, benign
values arrive exactly as Azure ML's pasted text gives them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from amldist.engine.command import render
from amldist.errors import UserError
from amldist.rules import placeholders
from amldist.rules.shell_command import contexts
from amldist.rules.shell_values import SUBSCRIPT_COMMAND, is_benign

from tests.conftest import budget

SHELLS = [path for path in (shutil.which("bash"), "/bin/sh") if path and os.path.exists(path)]
FAKE_PATH = [""]  # the fake_python folder, set by the tests that run shells


def context_of(command: str) -> list[str]:
    """Each placeholder as ``quoting:role`` (``@enclosing`` when a construct around it re-reads it)."""
    refs = placeholders.references(command, placeholders.V2)
    found = contexts(command, [(r.start, r.end) for r in refs])
    return [f"{c.quoting}:{c.role}" + (f"@{c.enclosing}" if c.enclosing else "")
            for c in (found[r.start] for r in refs)]


@pytest.mark.parametrize("command, expected", [
    ("python t.py --msg ${{inputs.m}}", ["unquoted:argument"]),
    ("python t.py --msg=${{inputs.m}} --x", ["unquoted:argument"]),
    ('python t.py "--msg=${{inputs.m}}"', ["double:argument"]),
    ("python t.py '--msg ${{inputs.m}}'", ["single:argument"]),
    ("echo $'a ${{inputs.m}}'", ["ansi:outside"]),
    ("echo \\${{inputs.m}}", ["escaped:outside"]),
    ('echo "\\${{inputs.m}}"', ["escaped:outside"]),
    ("echo \\\\${{inputs.m}}", ["unquoted:argument"]),  # an escaped backslash, then the value
    ("echo `echo ${{inputs.m}}`", ["unquoted:outside@backtick"]),
    ("echo $(echo ${{inputs.m}}) \"$(echo \"${{inputs.m}}\")\"", ["unquoted:outside", "double:outside"]),
    ("echo ${x:-${{inputs.m}}}", ["unquoted:outside@parameter"]),
    ("echo $(( ${{inputs.m}} + 1 ))", ["unquoted:outside@arithmetic"]),
    ("(( n = ${{inputs.m}} ))", ["unquoted:outside@arithmetic"]),
    ("let n=${{inputs.m}}", ["unquoted:outside"]),
    ("declare -i n=${{inputs.m}}", ["unquoted:outside"]),
    ("N=${{inputs.m}}; echo $((N+1))", ["unquoted:outside"]),
    ("export N=${{inputs.m}}; echo $((N+1))", ["unquoted:outside"]),
    ("[[ ${{inputs.m}} == x ]]", ["unquoted:outside@conditional"]),
    ("[ ${{inputs.m}} = x ] && echo ok", ["unquoted:outside"]),
    ("cat <<EOF\n${{inputs.m}}\nEOF\necho ${{inputs.m}}", ["heredoc:outside", "unquoted:outside"]),
    ("cat <<-'EOF' | sort\n\t${{inputs.m}}\n\tEOF\necho '${{inputs.m}}'", ["quoted-heredoc:outside", "single:outside"]),
    ("cat <<\\EOF\n${{inputs.m}}\nEOF", ["quoted-heredoc:outside"]),
    ("cat <<${{inputs.m}}\nx\n", ["heredoc-word:outside"]),
    ("echo hi # ${{inputs.m}} 'x\necho ${{inputs.m}}", ["comment:argument", "unquoted:argument"]),
    ("${{inputs.m}} --x", ["unquoted:outside"]),
    ("cd /tmp && \"${{inputs.m}}\" --x", ["double:outside"]),
    ("X=1 ${{inputs.m}}", ["unquoted:outside"]),
    ("X=${{inputs.m}} python t.py", ["unquoted:outside"]),
    ("python t.py > ${{inputs.m}}", ["unquoted:argument"]),
    ("echo a; if ${{inputs.m}}; then :; fi", ["unquoted:outside"]),
    ("eval echo ${{inputs.m}}", ["unquoted:outside"]),
    ('bash -c "python t.py ${{inputs.m}}"', ["double:outside"]),
    ("bash -c 'python t.py ${{inputs.m}}'", ["single:outside"]),
    ('/bin/sh -ec "python t.py ${{inputs.m}}"', ["double:outside"]),
    ("bash train.sh --lr ${{inputs.m}}", ["unquoted:outside"]),
    ("bash -c 'python t.py' _ ${{inputs.m}}", ["unquoted:outside"]),  # a positional parameter the code never reads
    ("bash -c 'eval \"$1\"' _ ${{inputs.m}}", ["unquoted:outside"]),  # ... and one it may evaluate
    ("f() { eval \"$1\"; }; f ${{inputs.m}}", ["unquoted:outside"]),  # a function of the command: code
    ("PS4=${{inputs.m}}; set -x", ["unquoted:outside"]),  # a variable that chooses what runs
    ("x=$(echo ${{inputs.m}}); bash -c \"$x\"", ["unquoted:outside"]),  # a variable a reader of code reads
    ("X=${{inputs.m}}; python t.py \"$X\"", ["unquoted:outside"]),
    ("bash < ${{inputs.m}}", ["unquoted:outside"]),  # the value names the file bash runs
    ("python t.py < ${{inputs.m}} > \"${{inputs.m}}\"", ["unquoted:argument", "double:argument"]),
    ("echo 'it''s' ${{inputs.m}} \"a'b\" ${{inputs.m}}", ["unquoted:argument", "unquoted:argument"]),
    # issue 24: shells, evaluators, wrappers and programs not on the list are outside the grammar, whatever they do
    ('timeout 600 bash -c "${{inputs.m}}"', ["double:outside"]),
    ('/usr/bin/env bash -c "${{inputs.m}}"', ["double:outside"]),
    ('$SHELL -c "${{inputs.m}}"', ["double:outside"]),
    ('"bash" -c "${{inputs.m}}"', ["double:outside"]),
    ("b'a'sh -c \"${{inputs.m}}\"", ["double:outside"]),
    ('trap "${{inputs.m}}" EXIT', ["double:outside"]),
    ('bash <<< "${{inputs.m}}"', ["double:outside"]),
    ('bash <<EOF\n${{inputs.m}}\nEOF', ["heredoc:outside"]),
    ('echo "${{inputs.m}}" | sh', ["double:outside"]),
    ('(echo "${{inputs.m}}") | sh', ["double:outside"]),
    ('timeout 60 ${{inputs.m}}', ["unquoted:outside"]),
    ("echo ${{inputs.m}} | xargs sh -c", ["unquoted:outside"]),
    ("xargs -I{} sh -c 'echo {}; ${{inputs.m}}'", ["single:outside"]),
    ('find . -name "*.py" -exec sh -c "${{inputs.m}}" \\;', ["double:outside"]),
    ('flock /tmp/l -c "${{inputs.m}}"', ["double:outside"]),
    ('su -c "${{inputs.m}}" bob', ["double:outside"]),
    ('nohup nice -n 5 stdbuf -oL bash -c "${{inputs.m}}"', ["double:outside"]),
    ('bash -c "$(echo ${{inputs.m}})"', ["unquoted:outside"]),
    ("bash <(echo ${{inputs.m}})", ["unquoted:outside"]),
    # ... while a listed program's arguments are arguments, behind a listed launcher too
    ("mpirun -np 4 python train.py ${{inputs.m}}", ["unquoted:argument"]),
    ("torchrun --nproc_per_node 2 train.py --lr '${{inputs.m}}'", ["single:argument"]),
    ("python -m torch.distributed.run --nproc_per_node 2 train.py --lr ${{inputs.m}}", ["unquoted:argument"]),
    ("nice -n 5 python t.py ${{inputs.m}}", ["unquoted:outside"]),
    ("python -m src.train --lr ${{inputs.m}}", ["unquoted:argument"]),
    ('python -c "${{inputs.m}}"', ["double:interpreter-code"]),
    ("perl -e '${{inputs.m}}'", ["single:outside"]),
    ("python - <<EOF\n${{inputs.m}}\nEOF", ["heredoc:outside"]),
    # runs of plain text are read in one step: a placeholder inside a run, and what ends a run
    ("python t.py --x=ab${{inputs.m}}cd.e ${{inputs.m}}", ["unquoted:argument", "unquoted:argument"]),
    ("echo 'ab${{inputs.m}}cd' \"ab${{inputs.m}}cd\" #ab${{inputs.m}}",
     ["single:argument", "double:argument", "comment:argument"]),
    ("echo $'ab\\' ${{inputs.m}}' ${{inputs.m}}", ["ansi:outside", "unquoted:outside"]),
    ("echo ab'cd'ef \"x\\\"${{inputs.m}}\"", ["double:argument"]),
    ("printf %s,+@~^ ab#${{inputs.m}}", ["unquoted:outside"]),
])
def test_each_placeholder_gets_the_context_a_shell_would_read_it_in(command, expected):
    assert context_of(command) == expected


@pytest.mark.parametrize("command", [
    "bash -c \"echo ${{inputs.tok}}\"", "echo $(( ${{inputs.tok}} ))", "${{inputs.tok}}",
    "bash <<'E'\n${{inputs.tok}}\nE",
    "timeout 60 ${{inputs.tok}}", "N=${{inputs.tok}}; echo $((N+1))", "echo ${{inputs.tok}} | sh"])
def test_a_hostile_value_in_an_unproven_context_is_one_error_naming_the_input_without_its_value(command):
    with pytest.raises(UserError) as info:
        render(command, {"inputs.tok": "s3cr3t;value"}, file="job.yml")
    text = str(info.value) + str(info.value.hint)
    assert "${{inputs.tok}}" in text and "s3cr3t" not in text and "\n" not in str(info.value)


def test_a_benign_value_in_an_unproven_context_runs_as_azure_ml_would():
    rendered = render("bash -c 'python t.py ${{inputs.tok}}' && cat <<'E'\n${{inputs.tok}}\nE", {"inputs.tok": "a b"})
    assert rendered.command == "bash -c 'python t.py '\"${AMLDIST_IN_0_tok}\"'' && cat <<'E'\na b\nE"


@pytest.mark.parametrize("value", ["a[$(touch pwned)]", "x[`id`]", "a[b[0]+$(touch pwned)]", "with\0nul"])
def test_values_bash_arithmetic_would_run_are_refused_without_being_echoed(value):
    with pytest.raises(UserError, match="the value of inputs.n") as info:
        render("python t.py --n ${{inputs.n}}", {"inputs.n": value})
    assert value not in str(info.value)


def test_a_path_value_may_name_the_program_and_stays_one_word():
    rendered = render("${{inputs.tool}}/run.sh --out ${{outputs.o}}", {"inputs.tool": "/a b", "outputs.o": "/c d"},
                      paths={"inputs.tool", "outputs.o"})
    assert rendered.command == '"${AMLDIST_IN_0_tool}"/run.sh --out "${AMLDIST_OUT_1_o}"'


# -- real shells ---------------------------------------------------------------------------------

# `python` is a stub on PATH (fake_python below) that prints each argument after the script on its own line
ARGV = "python args.py before {} after"
TEMPLATES = {
    "unquoted": ARGV.format("--x ${{inputs.v}}"),
    "unquoted-joined": ARGV.format("--x=${{inputs.v}}"),
    "double": ARGV.format('"--x ${{inputs.v}} y"'),
    "single": ARGV.format("'--x ${{inputs.v}} y'"),
    "assignment": 'X=${{inputs.v}}; printf "<%s>\\n" before "$X" after',
    "heredoc": "cat <<EOF\nbefore ${{inputs.v}} after\nEOF\nprintf '<%s>\\n' done",
    "comment": ARGV.format("") + " # ${{inputs.v}}",
    "subshell": "printf '<%s>\\n' before \"$(printf '%s' \"${{inputs.v}}\")\" after",
}
OUTSIDE = {"assignment", "heredoc", "subshell"}  # outside the grammar: benign values only
BENIGN = st.text(st.sampled_from("abcXYZ019 -_./=,:@%+"), max_size=20)
PAYLOADS = ["$(touch pwned)", "`touch pwned`", "; touch pwned;", "' ; touch pwned ; '", '" ; touch pwned ; "',
            "\ntouch pwned\n", "$(touch${IFS}pwned)", "| touch pwned", "&& touch pwned", "\nEOF\ntouch pwned\n",
            "${x:=$(touch pwned)}", "<(touch pwned)", "$((1))", "*", "?", "[a-z]", "\\", "#", "{a,b}", "~"]
HOSTILE = st.lists(st.one_of(st.sampled_from(PAYLOADS), st.text(st.sampled_from("ab $`'\"\\;&|<>(){}*?[]#\n\t~!"),
                                                                max_size=6)), max_size=4).map("".join)


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    """A folder whose `python` prints each argument after the script as <arg>: fast, and nothing real runs."""
    folder = tmp_path_factory.mktemp("bin")
    stub = folder / "python"
    stub.write_text("#!/bin/sh\nshift\nfor a; do printf '<%s>\\n' \"$a\"; done\n")
    stub.chmod(0o755)
    return str(folder)


def run_shell(shell: str, command: str, env: dict, cwd) -> str:
    done = subprocess.run([shell, "-c", command], env={"PATH": FAKE_PATH[0] + os.pathsep + os.environ["PATH"], **env},
                          cwd=cwd,
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, (shell, command, done.stderr)
    return done.stdout


def azure_output(shell: str, template: str, value: str, cwd) -> str:
    """What Azure ML runs: the value's text pasted into the command."""
    return run_shell(shell, template.replace("${{inputs.v}}", value), {}, cwd)


def local_output(shell: str, template: str, value: str, cwd) -> str:
    rendered = render(template, {"inputs.v": value})
    return run_shell(shell, rendered.command, rendered.env, cwd)


def expected_for_hostile(context: str, value: str) -> str:
    """The arguments a value must give when nothing in it is read as code."""
    lines = lambda *args: "".join(f"<{a}>\n" for a in args)
    if context == "unquoted":
        return lines("before", "--x", *value.split(), "after")
    if context == "unquoted-joined":
        return lines("before", *("--x=" + value).split(), "after")
    if context in ("double", "single"):
        return lines("before", f"--x {value} y", "after")
    if context in ("assignment", "subshell"):  # $(...) drops trailing newlines
        return lines("before", value.rstrip("\n") if context == "subshell" else value, "after")
    if context == "heredoc":
        return f"before {value} after\n" + lines("done")
    return lines("before", "after")


@pytest.mark.budget
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("context", sorted(TEMPLATES))
@settings(max_examples=budget(15, 40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=BENIGN)
def test_benign_values_arrive_exactly_as_azure_mls_pasted_text_gives_them(tmp_path, fake_python, shell, context,
                                                                         value):
    FAKE_PATH[0] = fake_python
    if context == "assignment":
        assume(" " not in value)  # pasted, 'X=a b' would run b: the one difference, on purpose
    template = TEMPLATES[context]
    assert local_output(shell, template, value, tmp_path) == azure_output(shell, template, value, tmp_path)


@pytest.mark.budget
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("context", sorted(TEMPLATES))
@settings(max_examples=budget(20, 60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=HOSTILE)
def test_no_hostile_value_runs_a_command_or_changes_another_argument(tmp_path_factory, fake_python, shell, context,
                                                                     value):
    FAKE_PATH[0] = fake_python
    cwd = tmp_path_factory.mktemp("run")  # empty, so that a pattern in a value matches no file
    words = value.split()
    if context.startswith("unquoted"):
        # An unquoted pattern is matched against file names as on Azure ML; in an empty folder only
        # a '.'-pattern can match (. and .. in dash), and '~' expands in a joined '--x=~' in bash.
        assume(not any(w.startswith(".") for w in words) and "~" not in value)
    if context == "single":
        assume("'" not in value)  # a ' ends '...' on Azure ML: the local run keeps it, and warns
    try:
        output = local_output(shell, TEMPLATES[context], value, cwd)
    except UserError as exc:  # refused: outside the grammar, or a command substitution inside [...]
        assert ("inside [...]" in str(exc) and SUBSCRIPT_COMMAND.search(value)) or (
            context in OUTSIDE and not is_benign(value)), (context, value)
        return
    assert context not in OUTSIDE or is_benign(value)
    assert not (cwd / "pwned").exists()
    assert output == expected_for_hostile(context, value)


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("payload", [p for p in PAYLOADS if "pwned" in p])
def test_the_same_payloads_pasted_as_azure_ml_does_would_run(tmp_path, fake_python, shell, payload):
    """The tests above can fail: the pasted text runs at least one payload in some context."""
    FAKE_PATH[0] = fake_python
    ran = False
    for template in [*TEMPLATES.values(), "printf '<%s>' '${{inputs.v}}'"]:  # + a context amldist refuses
        folder = tmp_path / str(abs(hash(template)))
        folder.mkdir(exist_ok=True)
        subprocess.run([shell, "-c", template.replace("${{inputs.v}}", payload)], cwd=folder,
                       capture_output=True, timeout=20, env={"PATH": fake_python + os.pathsep + os.environ["PATH"]})
        ran |= (folder / "pwned").exists()
    assert ran or (payload.startswith("<(") and "bash" not in shell)  # process substitution is bash's


def test_divergence_is_warned_for_values_not_for_local_paths_that_azure_ml_replaces_with_its_own():
    rendered = render("python t.py --o ${{outputs.o}} --m ${{inputs.m}} --n '${{inputs.n}}'",
                      {"outputs.o": "/a (b)/o", "inputs.m": "x; y", "inputs.n": "it's"}, paths={"outputs.o"})
    assert [w[0] for w in rendered.warnings] == ["inputs.m", "inputs.n"]
    assert "end the command" in rendered.warnings[0][1] and "end the single quotes" in rendered.warnings[1][1]
    assert "\"${{inputs.m}}\"" in rendered.warnings[0][2] and "x; y" not in rendered.warnings[0][1]


def test_a_quoted_here_document_takes_benign_values_pasted_as_azure_ml_does_and_never_a_secret():
    command = "cat <<'E' > cfg.json\n{\"name\": \"${{inputs.m}}\"}\nE\npython t.py"
    assert render(command, {"inputs.m": "a-b c"}).command == command.replace("${{inputs.m}}", "a-b c")
    for value in ("it's $(x)", "a\nE\ntouch pwned"):  # nothing non-benign is ever pasted
        with pytest.raises(UserError, match="inputs.m"):
            render(command, {"inputs.m": value})
    with pytest.raises(UserError, match="a secret") as info:  # a benign secret is not pasted either
        render(command.replace("inputs.m", "inputs.api_token"), {"inputs.api_token": "abcdef123456"})
    assert "abcdef123456" not in str(info.value)
