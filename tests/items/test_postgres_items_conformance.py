"""The memory item conformance suite on PostgresAdapter (a fresh schema per test), plus what only
PostgreSQL shows: the items table sits in the store's schema, its queries use its indexes, a
schema at version 2 gains the table on connect, text that jsonb would refuse round-trips, and
batches racing over the same rows neither deadlock nor lose a count."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import MIGRATIONS, applied_migrations, migrate, quote_ident
from cogitator_memory.errors import ConflictError
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.items import ItemConformanceCase, memory_item_adapter_conformance_cases

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_items") as url:
        yield url


@pytest.fixture
def schema(pg_url: str) -> Iterator[str]:
    """A schema name no other test uses, dropped with everything in it after the test."""
    import psycopg

    name = f"cogmem_i_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
        yield memory


@pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
async def test_item_conformance(case: ItemConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)


def _item(n: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"mem_pg{n:06d}",
        "kind": "fact",
        "subject": "Ana",
        "attribute": f"a{n % 5}",
        "value": f"value {n}",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": "concierge", "user_id": f"u{n % 50}"},
        "recorded_at": T0 + timedelta(microseconds=n),
    }
    base.update(fields)
    return base


def test_the_postgres_store_declares_items() -> None:
    assert PostgresAdapter(url="postgresql://x/y").supports("items")


async def test_items_live_in_the_stores_schema(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    unwrap(await store.add_items([_item(1, evidence=[{"entry_id": "e1", "quote": "q"}])]))
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await applied_migrations(conn, schema) == [(m.version, m.name) for m in MIGRATIONS]
        cur = await conn.execute(
            f"SELECT id, scope_key, start_at, recorded_at, entry_ids, version FROM {quote_ident(schema)}.memory_items"
        )
        rows = await cur.fetchall()
    assert rows == [
        (
            "mem_pg000001",
            "concierge\x1fu1\x1f\x1f",
            T0 + timedelta(microseconds=1),
            T0 + timedelta(microseconds=1),
            ["e1"],
            1,
        )
    ]


async def test_nul_characters_large_numbers_and_odd_entry_ids_round_trip(store: PostgresAdapter) -> None:
    weird = {"nul": "a\x00b", "big": 2**63 - 1, "float": 1e-7, "unicode": "ß ✓ 日本"}
    evidence = [{"entry_id": "e\x1fsplit", "quote": "q"}, {"entry_id": "e_ok", "quote": "q"}]
    item = _item(2, metadata=weird, evidence=evidence)
    unwrap(await store.add_items([item]))
    got = unwrap(await store.get_items([item["id"]]))[0]
    assert got.metadata == weird
    assert [e.entry_id for e in got.evidence] == ["e\x1fsplit", "e_ok"]
    found = unwrap(await store.query_items({"within": {"agent_id": "concierge"}, "entry_ids": ["e_ok"]}))
    assert [i.id for i in found] == [item["id"]]
    assert unwrap(await store.query_items({"within": {"agent_id": "concierge"}, "entry_ids": ["split"]})) == []


async def test_times_round_trip_to_the_microsecond_at_the_edges(store: PostgresAdapter) -> None:
    times = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)]
    for n, at in enumerate(times, start=10):
        unwrap(await store.add_items([_item(n, recorded_at=at, last_retrieved_at=at, valid_from=at)]))
        got = unwrap(await store.get_items([f"mem_pg{n:06d}"]))[0]
        assert (got.recorded_at, got.last_retrieved_at, got.valid_from) == (at, at, at)


async def test_queries_use_the_indexes(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    from cogitator_memory.engines.postgres.items import _query_sql
    from cogitator_memory.items.records import check_filter

    unwrap(
        await store.add_items(
            [
                _item(n, evidence=[{"entry_id": f"e{n}", "quote": "q"}], status=("active", "superseded")[n % 2])
                for n in range(3000)
            ]
        )
    )
    table = f"{quote_ident(schema)}.memory_items"
    ana = {"agent_id": "concierge", "user_id": "u7"}
    filters: list[tuple[dict[str, Any], str]] = [
        ({"visible_to": ana, "statuses": ["active"], "as_of": T0}, "memory_items_by_scope"),
        ({"scope": ana, "slot": {"subject": "ana", "attribute": "a2"}}, "memory_items_by_s"),
        ({"visible_to": ana, "subject": "Ana"}, "memory_items_by_s"),
        ({"within": {"agent_id": "concierge", "user_id": "u7"}}, "memory_items_by_agent"),
        ({"within": {"agent_id": "concierge"}, "entry_ids": ["e5", "e6"]}, "memory_items_by_entry"),
    ]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {table}")
        for flt, index in filters:
            sql, params = _query_sql(table, check_filter(flt))
            cur = await conn.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(r[0] for r in await cur.fetchall())
            assert index in plan and "Seq Scan" not in plan, (flt, plan)


async def test_a_schema_at_version_2_gains_items_on_connect(pg_url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await migrate(conn, schema, MIGRATIONS[:2]) == (0, 2)
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as memory:
        thread = unwrap(await memory.create_thread("concierge"))
        unwrap(await memory.add_items([_item(1, scope={"agent_id": "concierge", "thread_id": thread.id})]))
        found = unwrap(await memory.query_items({"within": {"agent_id": "concierge", "thread_id": thread.id}}))
        assert [i.id for i in found] == ["mem_pg000001"]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert [v for v, _ in await applied_migrations(conn, schema)] == [m.version for m in MIGRATIONS]


async def test_racing_batches_over_the_same_items_neither_deadlock_nor_lose_counts(store: PostgresAdapter) -> None:
    items = [_item(n) for n in range(40)]
    unwrap(await store.add_items(items))
    ids = [i["id"] for i in items]
    forward, backward = ids, ids[::-1]
    counts = [store.count_retrieved(forward if n % 2 else backward, T0) for n in range(12)]
    updates = [
        store.update_items(
            [{"id": i, "expected_version": 1, "confidence": 0.5} for i in (forward if n % 2 else backward)]
        )
        for n in range(4)
    ]
    results = await asyncio.gather(*counts, *updates)
    assert all(r.success for r in results[:12]), [r.error for r in results[:12] if not r.success]
    won = [r for r in results[12:] if r.success]
    assert len(won) == 1, [r.error for r in results[12:]]
    assert all(
        r.error_type is not None and issubclass(r.error_type, ConflictError) for r in results[12:] if not r.success
    )
    stored = unwrap(await store.get_items(ids))
    assert {(i.times_retrieved, i.version, i.confidence) for i in stored} == {(12, 2, 0.5)}


async def test_a_racing_add_of_the_same_id_is_a_named_conflict(store: PostgresAdapter) -> None:
    results = await asyncio.gather(*(store.add_items([_item(n), _item(99)]) for n in range(1, 6)))
    assert sum(r.success for r in results) == 1
    for r in results:
        if not r.success:
            assert (
                r.error_type is not None
                and issubclass(r.error_type, ConflictError)
                and "mem_pg000099" in (r.error or "")
            )
    assert len(unwrap(await store.query_items({"within": {"agent_id": "concierge"}}))) == 2
