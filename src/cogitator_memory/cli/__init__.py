"""The ``cogitator-memory`` command line (also ``python -m cogitator_memory``).

``demo``, ``threads``, ``show``, ``import`` and ``export`` on the SQLite store; see
``docs/cli.md``. :func:`main` takes the arguments and returns the exit status, so it can be
called from Python as well.
"""

from .commands import DB_ENV, PROG, build_parser, main

__all__ = ["DB_ENV", "PROG", "build_parser", "main"]
