"""The shared domain rules, each in one home, used alike by the builders, ``validate`` and both backends.

paths (local path, remote URI or asset), counts (whole numbers from 1 to 10000), vm_sizes and
size_findings (GPUs and InfiniBand per size), command_checks and placeholders (``${{inputs.x}}``),
shell_grammar, shell_command and shell_values (the allow-list of commands where any value is proven an
argument, where a value sits in a shell command, and which value may go there: the local backend passes or
refuses it, ``validate`` warns about the same contexts, so the rule lives here rather than in one backend),
additional_includes (what a component
adds to its snapshot), secrets (masking),
booleans, suggestions (did-you-mean), ignore_files (``.amlignore``/``.gitignore``) and runtime_bundle
(what is added to every job's code). Nothing here imports azure-ai-ml or torch (an import-linter contract).
"""
