"""The layer contract in pyproject.toml ([tool.importlinter]), checked by import-linter itself.

Layers: cli > diagnosis > backends > engine > submit > authoring > azure_sdk > validate > rules > model >
errors/diagnostics; model, rules and validate never importing azure-ai-ml or torch; the local, Slurm and Azure ML
backends independent (what local and Slurm share is amldist.engine, which never imports Azure ML's SDK); the CLI and
the diagnosis reaching backends through the contract only; the runtime shim importing nothing else of amldist; no
import cycle among the modules of any package.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# import-linter's own entry point (what its `lint-imports` script runs), in this interpreter
RUN = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_the_import_contract_holds():
    proc = subprocess.run([sys.executable, "-c", RUN, "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    declared = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert declared >= 7 and f"Contracts: {declared} kept, 0 broken." in proc.stdout
