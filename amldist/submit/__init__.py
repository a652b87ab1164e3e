"""The backend-neutral part of ``amldist submit``.

- ``overrides``: ``--set PATH=VALUE`` and ``--input NAME=VALUE`` on a plain mapping;
- ``prepare``: load -> overrides -> (component to job) -> validate -> :class:`Prepared`;
- ``secrets``: masking secret-looking values wherever an environment is printed.
"""
