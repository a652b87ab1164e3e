"""The ``amldist`` command line: ``main.py`` builds the parser and maps errors to exit codes;
one module per sub-command (``validate``, ``skus``, ``convert``, ``submit``), each with
``register(subparsers)`` and ``run(args)``."""
