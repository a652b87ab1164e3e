"""Semantic rules, through the public API (validate_text / validate_file / validate_data)."""

from __future__ import annotations

import pytest

from amldist.validate import validate_data, validate_file, validate_text

JOB = "type: command\nenvironment: azureml:env:1\n"
COMPONENT = "$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json\n" \
            "type: command\nname: c\nversion: 1\nenvironment: azureml:env:1\n"


def codes(diags, severity=None):
    return sorted(d.code for d in diags if severity is None or d.severity == severity)


def one(diags, code):
    found = [d for d in diags if d.code == code]
    assert len(found) == 1, diags
    return found[0]


# ---- placeholders ----

def test_v2_placeholders_must_be_declared_and_are_located_precisely():
    text = JOB + "inputs:\n  lr: 0.1\noutputs:\n  model:\n    type: uri_folder\ncommand: >-\n  python t.py\n" \
                 "  --lr ${{inputs.lr}} --epochs ${{inputs.epochs}}\n  --out ${{outputs.modle}}\n"
    diags = validate_text(text, "job.yml")
    assert codes(diags) == ["undeclared-input", "undeclared-output"]
    epochs, modle = one(diags, "undeclared-input"), one(diags, "undeclared-output")
    assert (epochs.line, epochs.col) == (10, 32) and epochs.field == "command"
    assert (modle.line, modle.col) == (11, 9) and modle.hint == "did you mean 'model'?"


def test_v2_optional_groups_nest_and_hold_brackets():
    text = COMPONENT + "inputs:\n  a:\n    type: string\n    optional: true\n  b:\n    type: string\n" \
                       "    optional: true\n" \
                       "command: python t.py $[[--a ${{inputs.a}} --shape [1,2] $[[--b ${{inputs.b}}]]]]\n"
    assert validate_text(text) == []
    bad = text.replace("$[[--a ${{inputs.a}} --shape [1,2] $[[--b ${{inputs.b}}]]]]",
                       "$[[--shape [1,2]]] --b ${{inputs.b}}")
    diag = one(validate_text(bad), "optional-input-outside-group")
    assert "'b'" in diag.message and "$[[--b ${{inputs.b}}]]" in diag.hint


def test_required_inputs_may_sit_anywhere_and_shell_brackets_are_text():
    text = COMPONENT + "inputs:\n  a:\n    type: string\n" \
                       "command: if [[ -n x ]]; then python t.py ${{inputs.a}}; fi\n"
    assert codes(validate_text(text)) == ["shell-context"]  # no bracket error; `if` is outside the shell grammar


def test_unclosed_v2_group_is_reported():
    text = COMPONENT + "inputs:\n  a:\n    type: string\n    optional: true\ncommand: python t.py $[[--a ${{inputs.a}}\n"
    assert codes(validate_text(text)) == ["unbalanced-bracket"]



# ---- dotted input names (flattened parameter groups) ----

GROUPED = COMPONENT + "inputs:\n  group.number:\n    type: number\n    default: 1.5\n    optional: true\n" \
                      "  group.sub.count:\n    type: integer\noutputs:\n  out:\n    type: uri_folder\n"


def test_dotted_input_names_are_placeholders_checked_exactly():
    ok = GROUPED + "command: echo $[[${{inputs.group.number}}]] ${{inputs.group.sub.count}} ${{outputs.out}}\n"
    assert validate_text(ok) == []
    typo = GROUPED + "command: echo ${{inputs.group.sub.cout}} ${{inputs.group}}\n"
    diags = validate_text(typo)
    assert [(d.code, d.line, d.col) for d in diags] == [("undeclared-input", 16, 15), ("undeclared-input", 16, 42)]
    assert "'group.sub.cout'" in diags[0].message and diags[0].hint == "did you mean 'group.sub.count'?"
    assert "'group'" in diags[1].message


def test_a_dotted_name_with_an_empty_part_is_still_malformed():
    diag = one(validate_text(GROUPED + "command: echo ${{inputs.group..number}}\n"), "malformed-placeholder")
    assert diag.severity == "error" and "dotted" in diag.hint


# ---- optional inputs: defaults, and booleans read as azure-ai-ml reads them ----

def optional_input(optional="true", default=None):
    port = f"inputs:\n  n:\n    type: integer\n    optional: {optional}\n"
    return COMPONENT + port + (f"    default: {default}\n" if default is not None else "")


def test_an_optional_input_with_a_default_outside_a_group_is_a_warning():
    diags = validate_text(optional_input(default=3) + "command: python t.py --n ${{inputs.n}}\n")
    assert [(d.code, d.severity, d.line, d.col) for d in diags] == [
        ("optional-input-default-outside-group", "warning", 11, 26)]
    assert "default" in diags[0].message and "$[[--n ${{inputs.n}}]]" in diags[0].hint
    # no default (or a null one): the command breaks when the input is not given
    for text in (optional_input(), optional_input(default="null")):
        diag = one(validate_text(text + "command: python t.py --n ${{inputs.n}}\n"), "optional-input-outside-group")
        assert diag.severity == "error"
    assert validate_text(optional_input(default=3) + "command: python t.py $[[--n ${{inputs.n}}]]\n") == []


def test_legacy_optional_input_with_a_default_is_a_warning_too():
    text = LEGACY.replace("    optional: true\n", "    optional: true\n    default: x\n").format(
        args='"python t.py {inputs.a} --o {inputs.o} {outputs.out}"')
    assert [(d.code, d.severity) for d in validate_text(text, "legacy.yaml")] == [
        ("optional-input-default-outside-group", "warning")]


@pytest.mark.parametrize("word", ["'true'", "'True'", "'TRUE'", "'yes'", "'on'", "'y'", "'1'"])
def test_quoted_true_words_make_an_input_optional(word):
    diags = validate_text(optional_input(word) + "command: python t.py --n ${{inputs.n}}\n")
    assert codes(diags) == ["optional-input-outside-group"], word


@pytest.mark.parametrize("word", ["false", "'false'", "'no'", "'off'", "'0'"])
def test_false_words_leave_an_input_required(word):
    assert validate_text(optional_input(word) + "command: python t.py --n ${{inputs.n}}\n") == [], word


LEGACY = "name: x.y\nversion: 0.0.1\ntype: DistributedComponent\nenvironment:\n  name: AzureML-Minimal\n" \
         "inputs:\n  a:\n    type: path\n  o:\n    type: String\n    optional: true\noutputs:\n  out:\n    type: path\n" \
         "launcher:\n  type: mpi\n  additional_arguments: {args}\n"


@pytest.mark.parametrize("args,expected", [
    ("python t.py {inputs.a} [--o {inputs.o}] {outputs.out}", []),
    ("python t.py {inputs.a} [--o '[x]' {inputs.o} [--n 1]] {outputs.out}", []),
    ("python t.py {inputs.a} --o {inputs.o} {outputs.out}", ["optional-input-outside-group"]),
    ("python t.py {inputs.b} {outputs.output}", ["undeclared-input", "undeclared-output"]),
    ("python t.py {inputs.a} [--o {inputs.o} {outputs.out}", ["unbalanced-bracket"]),
    ("python t.py ${{inputs.a}}", ["mixed-syntax"]),
])
def test_legacy_placeholders_and_groups(args, expected):
    text = LEGACY.format(args=f'"{args}"')
    assert codes(validate_text(text, "legacy.yaml")) == expected


@pytest.mark.parametrize("text", [
    JOB + "command: echo ${{inputs.a}} ${{outputs.b}}\ninputs: [a]\noutputs:\n",
    LEGACY.replace("inputs:\n  a:\n    type: path\n  o:\n    type: String\n    optional: true\n", "inputs: [a, o]\n")
    .replace("outputs:\n  out:\n    type: path\n", "outputs: out\n").format(args='"python t.py {inputs.a} {outputs.out}"'),
])
def test_a_malformed_inputs_or_outputs_section_is_reported_once(text):
    # the schema's wrong-type is the one mistake; the placeholders are not each called undeclared too
    assert [(d.code, d.field) for d in validate_text(text)] == [("wrong-type", "inputs"), ("wrong-type", "outputs")]


# ---- VM sizes ----

def sized(kind_text, processes, nodes, size, dist="pytorch"):
    return kind_text + f"command: python t.py\ndistribution:\n  type: {dist}\n  process_count_per_instance: {processes}\n" \
                       f"resources:\n  instance_count: {nodes}\n  instance_type: {size}\n"


@pytest.mark.parametrize("processes,nodes,size,expected", [
    (8, 2, "Standard_ND96asr_v4", []),
    (9, 1, "Standard_ND96asr_v4", ["too-many-processes"]),
    (4, 1, "Standard_NC24s_v3", []),
    (8, 1, "nc24s_v3", ["too-many-processes"]),
    (4, 2, "Standard_NC24s_v3", ["no-infiniband"]),
    (4, 2, "Standard_NC24rs_v3", []),
    (64, 4, "Standard_HB120rs_v3", []),  # CPU size: many MPI ranks per node are normal
    # several nodes without InfiniBand warn for CPU sizes and name guesses too, as the builders warn
    (64, 4, "Standard_D4s_v3", ["no-infiniband"]),  # CPU size guessed from the name
    (64, 4, "Standard_NC999xyz_v9", ["no-infiniband"]),  # a guess: no GPU count to check, no 'r'
    (64, 4, "Standard_NC999rxyz_v9", []),  # a guess with 'r': InfiniBand assumed
    (64, 4, "my-k8s-instance-type", []),  # not an Azure size at all
])
def test_size_rules(processes, nodes, size, expected):
    assert codes(validate_text(sized(JOB, processes, nodes, size))) == expected


def test_size_rules_apply_to_components_and_name_the_gpu_count():
    diags = validate_text(sized(COMPONENT, 16, 3, "Standard_NC24ads_A100_v4"))
    assert codes(diags) == ["no-infiniband", "too-many-processes"]
    too_many = one(diags, "too-many-processes")
    assert "16" in too_many.message and "1 GPU" in too_many.message and too_many.severity == "error"
    assert one(diags, "no-infiniband").severity == "warning"


def test_tensorflow_has_no_process_rule_but_keeps_the_infiniband_warning():
    text = JOB + "command: x\ndistribution:\n  type: tensorflow\n  worker_count: 2\n" \
                 "resources:\n  instance_count: 2\n  instance_type: Standard_NC6s_v3\n"
    assert codes(validate_text(text)) == ["no-infiniband"]


# ---- unknown keys: components warn, jobs fail ----

def test_unknown_distribution_keys_warn_in_components_and_fail_in_jobs():
    extra = "command: x\ndistribution:\n  type: mpi\n  process_count: 2\nresources:\n  instance_count: 1\n  gpus: 2\n"
    component = validate_text(COMPONENT + extra)
    assert [(d.code, d.severity, d.field) for d in component] == [
        ("unknown-key", "warning", "distribution.process_count"), ("unknown-key", "warning", "resources.gpus")]
    assert component[0].hint == "did you mean 'process_count_per_instance'?"
    job = validate_text(JOB + extra)
    assert [(d.code, d.severity) for d in job] == [("unknown-key", "error"), ("unknown-key", "error")]


# ---- local files ----

def test_missing_code_and_environment_files_warn(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "conda.yml").write_text("name: x\n")
    spec = tmp_path / "job.yml"
    base = "type: command\ncommand: x\n"
    spec.write_text(base + "code: src\nenvironment:\n  image: python:3.11\n  conda_file: conda.yml\n")
    assert validate_file(spec) == []
    spec.write_text(base + "code: ./srcs\nenvironment:\n  image: python:3.11\n  conda_file: env/conda.yml\n")
    assert [(d.code, d.severity, d.line) for d in validate_file(spec)] == [
        ("missing-code", "warning", 3), ("missing-environment-file", "warning", 6)]
    spec.write_text(base + "code: azureml:my-code:1\nenvironment: file:./missing-env.yml\n")
    assert codes(validate_file(spec)) == ["missing-environment-file"]
    spec.write_text(base + "code: https://github.com/x/y.git\nenvironment:\n  build:\n    path: docker\n")
    assert codes(validate_file(spec)) == ["missing-environment-file"]


def test_local_paths_are_not_checked_without_a_folder():
    assert validate_text("type: command\ncommand: x\ncode: ./nowhere\nenvironment: azureml:e:1\n") == []


# ---- keys ----

def test_non_string_keys_are_errors_at_the_key():
    diags = validate_text(JOB + "command: x\nenvironment_variables:\n  2: a\n  yes: b\n")
    assert [(d.code, d.line, d.col) for d in diags] == [("non-string-key", 5, 3), ("non-string-key", 6, 3)]
    assert "YAML reads yes/no" in diags[1].hint


@pytest.mark.parametrize("text,line,col", [
    (JOB + "command: x\nyes: 1\n", 4, 1),  # a closed mapping: the schema would also call 'true' unknown
    (JOB + "command: x\ndistribution:\n  type: mpi\n  1: 2\n", 6, 3),
    ("type: pipeline\njobs:\n  1:\n    command: echo\n    environment: azureml:e:1\n", 3, 3),  # step-name pattern
])
def test_a_non_string_key_is_one_diagnostic_at_the_key(text, line, col):
    assert [(d.code, d.line, d.col) for d in validate_text(text)] == [("non-string-key", line, col)]


# ---- validate_data without a document ----

def test_validate_data_reports_at_0_0_and_detects_the_kind():
    diags = validate_data({"type": "command", "command": "echo ${{inputs.x}}", "environment": "azureml:e:1"})
    assert [(d.file, d.line, d.col, d.code) for d in diags] == [("<data>", 0, 0, "undeclared-input")]
    assert codes(validate_data({"hello": 1})) == ["not-a-spec"]
    with pytest.raises(ValueError):
        validate_data({}, kind="nonsense")


# ---- the regex fast path finds what the full parser finds ----

def _full(command, legacy):
    from amldist.rules import placeholders as ph

    try:
        return [(r.source, r.name, r.start, r.end, r.in_group)
                for r in ph.references(command, ph.LEGACY if legacy else ph.V2)]
    except ph.PlaceholderSyntaxError as exc:
        return exc.code


def test_fast_path_agrees_with_the_placeholder_parser():
    import random

    from amldist.rules.command_checks import fast_references

    pieces = ["${{inputs.a}}", "${{ outputs.b }}", "{inputs.c}", "{outputs.d}", "${{inputs.}}", "{inputs.",
              "$[[", "]]", "[", "]", " --x ", "${{parent.inputs.p}}", "'", "\n", "${{inputs.9x}}", "{inputs.e_1}",
              "${{inputs.g.n}}", "${{ inputs.g.s.i }}", "${{inputs.g.}}", "{inputs.g.n}", "${{outputs.o.p}}"]
    rng = random.Random(3)
    checked = 0
    for _ in range(3000):
        command = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        for legacy in (False, True):
            fast = fast_references(command, legacy)
            if fast is not None:
                checked += 1
                assert [(*ref, False) for ref in fast] == _full(command, legacy), (command, legacy)
    assert checked > 500
