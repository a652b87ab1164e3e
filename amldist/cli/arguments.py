"""Sub-commands of the ``amldist`` CLI, one module each.

Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. Modules here import only the standard library
at import time: the CLI imports them all to build ``--help``, and heavy imports
(jsonschema, azure-ai-ml, torch) belong inside ``run``.
"""

NAMES = ("validate", "vm_sizes", "convert", "submit", "job")


def slurm_time(text: str) -> str:
    """argparse ``type=`` for ``--time`` (the Slurm backend's rule): a usage error (exit 2) for what sbatch refuses."""
    import argparse

    from amldist.backends.slurm.script import time_problem

    problem = time_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def count_option(field: str):
    """argparse ``type=`` for the count called ``field`` (:mod:`amldist.rules.counts`): the same rule
    as in a spec, a usage error (exit 2) otherwise."""

    def parse(text: str) -> int:
        import argparse

        from amldist.rules import counts

        minimum, maximum = counts.limits(field)
        try:
            return counts.parse_count(text, minimum=minimum, maximum=maximum)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = field  # argparse names the option's type in its messages
    return parse
