"""The cascade cases on PostgreSQL: threads, items, files, graph and vectors (pgvector) in one
PostgresAdapter, each test in a schema of its own (``COGMEM_TEST_POSTGRES_URL``).

The raw data is every row of every table in the schema, read with SQL as text (dead row
versions are not visible to SQL; VACUUM is what drops them from the table files)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator

import pytest
from cascade_raw import postgres_table_text

from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_database("cogmem_cascade") as url:
        yield url


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[CascadeStores]:
    import psycopg

    schema = f"cogmem_c_{secrets.token_hex(6)}"
    try:
        async with PostgresAdapter(
            connection_string=pg_url, schema=schema, pool_size=3, dimensions=DIMENSIONS
        ) as memory:

            async def raw() -> bytes:
                return await postgres_table_text(pg_url, schema)

            yield CascadeStores(memory=memory, embeddings=memory, graph=memory, raw=raw)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
