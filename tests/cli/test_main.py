import subprocess
import sys

import pytest

import amldist
from tests.conftest import ROOT

SAMPLE = str(ROOT / "samples" / "pytorch_ddp" / "job.yml")


def test_version(cli):
    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"amldist {amldist.__version__}"


def test_help_lists_commands(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "usage: amldist" in out


def test_no_command_is_a_usage_error(cli):
    code, _, err = cli()
    assert code == 2 and "usage" in err


def test_console_script_runs_as_module():
    proc = subprocess.run([sys.executable, "-m", "amldist", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("amldist ")


def test_version_imports_nothing_heavy():
    code = (
        "import sys; from amldist.cli.main import main\n"
        "try: main(['--version'])\nexcept SystemExit: pass\n"
        "heavy = [m for m in ('azure', 'torch', 'jsonschema', 'jsonschema_rs', 'mpi4py', 're2', 'pathspec', 'yaml',\n"
        "         'amldist.validate', 'amldist.backends', 'amldist.diagnosis') if m in sys.modules]\n"
        "print('heavy=' + ','.join(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "heavy="


def test_validate_imports_only_the_validator():
    """``amldist validate FILE`` loads the validator, not the backends, the diagnosis, Azure or the matchers
    of ignore patterns (a named file is not filtered by them)."""
    code = (
        "import sys; from amldist.cli.main import main\n"
        f"code = main(['validate', '-q', {SAMPLE!r}])\n"
        "heavy = [m for m in ('azure', 'torch', 'mpi4py', 're2', 'pathspec', 'amldist.backends', 'amldist.diagnosis',\n"
        "         'amldist.submit', 'amldist.azure_sdk') if m in sys.modules]\n"
        "print(f'code={code} heavy=' + ','.join(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "code=0 heavy=", proc.stdout + proc.stderr


def test_counts_must_be_whole_numbers_between_the_limits(cli, tmp_path):
    for argv, problem in ((["submit", "job.yml", "--instance-count", "0"], "at least 1, got 0"),
                          (["submit", "job.yml", "--process-count-per-instance", "two"], "whole number, got 'two'"),
                          (["submit", "job.yml", "--process-count-per-instance", "100000"], "at most 10000"),
                          (["submit", "job.yml", "--instance-count", "9" * 5000], "whole number"),
                          # str.isdigit() takes these; int() refuses '²' and reads '٣' as 3
                          (["submit", "job.yml", "--instance-count", "\u00b2"], "whole number, got '\u00b2'"),
                          (["submit", "job.yml", "--instance-count", "\u0663"], "whole number, got '\u0663'"),
                          (["convert", "legacy.yml", "--instance-count", "-1"], "at least 1, got -1")):
        code, _, err = cli(*argv)
        assert code == 2 and problem in err and "Traceback" not in err, (argv, err[-300:])


@pytest.mark.parametrize("argv", [["--input", "msg=hello", "world"], ["--input=msg=hello", "world"],
                                  ["--set", "msg=hello", "big", "world"]])
def test_an_unquoted_value_split_by_the_shell_is_named_not_answered_with_the_usage(cli, argv):
    code, out, err = cli("submit", str(ROOT / "samples" / "pytorch_ddp" / "job.yml"), "--local", "--dry-run", *argv)
    option = argv[0].split("=")[0]
    assert code == 2 and out == ""
    assert err.startswith(f"error: {option} msg=... is followed by") and "usage:" not in err
    assert "world" not in err.split("\n")[0]  # the rest of a value may be a secret: never echoed
    assert f"hint: quote the whole pair, e.g. {option} 'msg=two words'" in err


def test_an_input_without_equals_gets_an_input_example(cli):
    code, _, err = cli("submit", str(ROOT / "samples" / "pytorch_ddp" / "job.yml"), "--dry-run", "--input", "epochs")
    assert code == 2 and "hint: write e.g. --input epochs=2" in err


@pytest.mark.parametrize("limit", ["\u00b2", "1:\u00b20", "\u0663:00:00", "2h", "1-", ""])
def test_a_slurm_time_limit_sbatch_would_refuse_is_one_usage_line(cli, limit):
    """'²' passes str.isdigit(); sbatch takes M, M:S, H:M:S, D-H, D-H:M, D-H:M:S in ASCII digits only."""
    code, _, err = cli("submit", "job.yml", "--slurm", "--dry-run", "--time", limit)
    assert code == 2 and f"argument --time: {limit!r} is not a Slurm time limit" in err and "Traceback" not in err


@pytest.mark.parametrize("limit", ["90", "2:00:00", "1-12", "1-12:00:00", "UNLIMITED"])
def test_the_slurm_time_limits_sbatch_takes_are_passed_on(limit):
    from amldist.backends.slurm.script import time_problem

    assert time_problem(limit) is None
