"""Service URLs for tests of real engines, read from ``COGMEM_TEST_*`` environment variables."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager


def service_url(variable: str) -> str:
    """The URL in ``variable``; otherwise skip the test, or fail it when ``CI=true``.

    ``scripts/services.sh start`` prints the variables for the engines it starts; point them
    at servers of your own to run the suites there.
    """
    import pytest

    value = os.environ.get(variable)
    if value:
        return value
    message = f'{variable} is not set: start the services with eval "$(bash scripts/services.sh start)"'
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def postgres_database(prefix: str, variable: str = "COGMEM_TEST_POSTGRES_URL") -> Iterator[str]:
    """A database of its own on the server in ``variable`` (``prefix`` and a random suffix),
    its URL given, dropped (connections closed) on the way out: a suite's own database, so
    pgvector and schemas are made there and not in the shared one (see :func:`own_database`)."""
    with own_database(service_url(variable), prefix) as url:
        yield url


@contextmanager
def own_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A database named ``prefix`` and a random suffix made on the server of ``admin_url``, its
    URL given, dropped (connections closed) on the way out (what :func:`postgres_database` does
    for a test; a benchmark gives its own URL, without pytest)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(admin_url, dbname=name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


__all__ = ["own_database", "postgres_database", "service_url"]
