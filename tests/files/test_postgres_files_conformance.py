"""The memory file conformance suite on PostgresAdapter (a fresh schema per test), plus what only
PostgreSQL shows: the table sits in the store's schema and its reads use its indexes (heads
through the heads index, whatever the history), and a schema at version 3 gains the table on
connect."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.files import heads_sql, versions_sql
from cogitator_memory.engines.postgres.schema import MIGRATIONS, applied_migrations, migrate, quote_ident
from cogitator_memory.files.records import check_head_filter, check_version_filter
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_files") as url:
        yield url


@pytest.fixture
def schema(pg_url: str) -> Iterator[str]:
    """A schema name no other test uses, dropped with everything in it after the test."""
    import psycopg

    name = f"cogmem_f_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
        yield memory


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)


def test_the_postgres_store_declares_files() -> None:
    assert PostgresAdapter(url="postgresql://x/y").supports("files")


def _version(n: int, path: str, sequence: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"file_pg{n:07d}",
        "scope": {"agent_id": "concierge", "user_id": f"u{n % 7}"},
        "path": path,
        "sequence": sequence,
        "content": f"text {n}",
        "created_at": T0 + timedelta(microseconds=n),
    }
    base.update(fields)
    return base


async def test_reads_use_the_indexes(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    batch = [
        _version(n, f"/memories/d{n % 20}/f{n}.md", 1, place={"thread_id": "t", "entry_id": f"e{n}"})
        for n in range(3000)
    ]
    unwrap(await store.add_file_versions(batch))
    for sequence in range(2, 30):
        unwrap(
            await store.add_file_versions(
                [_version(10_000 + sequence, "/memories/d0/f0.md", sequence, scope=batch[0]["scope"])]
            )
        )
    table = f"{quote_ident(schema)}.memory_file_versions"
    ana = {"agent_id": "concierge", "user_id": "u3"}
    heads: list[tuple[dict[str, Any], str]] = [
        ({"visible_to": ana, "paths": ["/memories/d3/f3.md"]}, "memory_file_heads"),
        ({"visible_to": ana, "prefix": "/memories/d3"}, "memory_file_heads"),
        ({"scope": {"agent_id": "concierge", "user_id": "u0"}, "prefix": "/memories/d0/f0.md"}, "memory_file_heads"),
    ]
    versions: list[tuple[dict[str, Any], str]] = [
        ({"scope": ana, "paths": ["/memories/d3/f3.md"]}, "memory_file_versions_by_path"),
        ({"within": {"agent_id": "concierge"}, "entry_ids": ["e5", "e6"]}, "memory_file_versions_by_entry"),
        ({"within": {"agent_id": "concierge", "user_id": "u2"}}, "memory_file_versions_by_agent"),
        ({"visible_to": ana, "renamed_from": ["/memories/x.md"]}, "memory_file_versions_by_"),
    ]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {table}")
        for flt, index in heads:
            sql, params = heads_sql(table, check_head_filter(flt))
            plan = "\n".join(r[0] for r in await (await conn.execute(f"EXPLAIN {sql}", params)).fetchall())
            assert index in plan and "Seq Scan" not in plan, (flt, plan)
        for flt, index in versions:
            sql, params = versions_sql(table, check_version_filter(flt))
            plan = "\n".join(r[0] for r in await (await conn.execute(f"EXPLAIN {sql}", params)).fetchall())
            assert index in plan and "Seq Scan" not in plan, (flt, plan)
        cur = await conn.execute(
            f"SELECT count(*) FILTER (WHERE head), count(*) FROM {table} WHERE path = '/memories/d0/f0.md'"
        )
        assert await cur.fetchone() == (1, 29)


async def test_a_schema_at_version_3_gains_files_on_connect(pg_url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await migrate(conn, schema, MIGRATIONS[:3]) == (0, 3)
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as memory:
        unwrap(await memory.add_file_versions([_version(1, "/memories/a.md", 1)]))
        assert [
            v.path
            for v in unwrap(await memory.find_file_heads({"visible_to": {"agent_id": "concierge", "user_id": "u1"}}))
        ] == ["/memories/a.md"]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert [v for v, _ in await applied_migrations(conn, schema)][:4] == [1, 2, 3, 4]
