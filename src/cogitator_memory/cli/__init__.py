"""The ``cogitator-memory`` command line (also ``python -m cogitator_memory``).

The thread commands (``demo``, ``threads``, ``show``, ``import``, ``export``, ``forget``) on a
SQLite file, or with ``--config`` on the store a memory config names (any engine); the memory
commands (``search``, ``remember``, ``facts``, ``mcp``, ``serve``) on the configured store; see
``docs/cli.md``. :func:`main` takes the arguments and returns the exit status, so it can be
called from Python as well.
"""

from .commands import DB_ENV, PROG, build_parser, main

__all__ = ["DB_ENV", "PROG", "build_parser", "main"]
