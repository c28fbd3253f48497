"""The cascade cases on PostgreSQL: threads, items, files, graph and vectors (pgvector) in one
PostgresAdapter, each test in a schema of its own (``COGMEM_TEST_POSTGRES_URL``).

The raw data is every row of every table in the schema, read with SQL as text (dead row
versions are not visible to SQL; VACUUM is what drops them from the table files)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator

import pytest

from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import quote_ident
from cogitator_memory.testing import service_url
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    admin_url = service_url("COGMEM_TEST_POSTGRES_URL")
    name = f"cogmem_cascade_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(admin_url, dbname=name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def table_text(pg_url: str, schema: str) -> bytes:
    """Every row of every table of ``schema`` as text."""
    import psycopg

    out: list[str] = []
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_type = 'BASE TABLE'",
            (schema,),
        )
        tables = [row[0] for row in await cur.fetchall()]
        assert tables, "the schema has tables"
        for table in tables:
            rows = await (
                await conn.execute(f"SELECT t::text FROM {quote_ident(schema)}.{quote_ident(table)} t")
            ).fetchall()
            out.extend(row[0] for row in rows)
    return "\n".join(out).encode()


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[CascadeStores]:
    import psycopg

    schema = f"cogmem_c_{secrets.token_hex(6)}"
    try:
        async with PostgresAdapter(
            connection_string=pg_url, schema=schema, pool_size=3, dimensions=DIMENSIONS
        ) as memory:

            async def raw() -> bytes:
                return await table_text(pg_url, schema)

            yield CascadeStores(memory=memory, embeddings=memory, graph=memory, raw=raw)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
