import subprocess
import sys

import amldist


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
        "heavy = [m for m in ('azure', 'torch', 'jsonschema', 'mpi4py') if m in sys.modules]\n"
        "print('heavy=' + ','.join(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "heavy="


def test_counts_must_be_whole_numbers_of_at_least_one(cli, tmp_path):
    for argv in (["submit", "job.yml", "--instance-count", "0"],
                 ["submit", "job.yml", "--process-count-per-instance", "two"],
                 ["convert", "legacy.yml", "--instance-count", "-1"]):
        code, _, err = cli(*argv)
        assert code == 2 and ("at least 1" in err or "not a whole number" in err), (argv, err)
