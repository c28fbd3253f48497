"""The fact conformance suite on PostgresAdapter, a fresh schema per test."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator

import pytest

from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.facts import FactConformanceCase, fact_adapter_conformance_cases


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_facts") as url:
        yield url


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresAdapter]:
    import psycopg

    schema = f"cogmem_f_{secrets.token_hex(6)}"
    try:
        async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
            yield memory
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
async def test_fact_conformance(case: FactConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)
