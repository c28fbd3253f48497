"""Fixtures the PostgreSQL test modules share: a database per module, a schema per test.

psycopg is imported inside the fixtures, so the other store tests run without it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from cogitator_memory.testing import postgres_database, service_url


@pytest.fixture(scope="module")
def admin_url() -> str:
    """The test server (``COGMEM_TEST_POSTGRES_URL``)."""
    return service_url("COGMEM_TEST_POSTGRES_URL")


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (so pgvector is created there, not in
    the shared database), dropped at the end."""
    with postgres_database("cogmem_pgtest") as url:
        yield url


@pytest.fixture
def schema(pg_url: str) -> Iterator[str]:
    """A schema name no other test uses, dropped with everything in it after the test."""
    import psycopg

    name = f"cogmem_t_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
