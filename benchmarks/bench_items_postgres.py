"""Memory items on PostgresAdapter (PostgreSQL 18), each figure beside raw psycopg in the same run.

* Item writes per second through ``MemoryItems.add`` (the rules, one item at a time: the slot
  read, the insert and the layout reads, plus an update when the write supersedes the slot's
  state), for new slots and for writes superseding them, and through ``add_items`` in batches of
  500, against raw psycopg inserting the same rows into a table made by the same migration (one
  autocommitted ``INSERT`` per item; ``executemany`` in one transaction per batch). Rounds
  alternate between the two; the best round of each counts.
* ``MemoryItems.query(scope)`` and ``query_items({"visible_to": scope})`` p50/p95 for a scope
  of 100 items among 10,000 and among 100,000 items of the same agent (the other users' items),
  all in one table; each size has a schema of its own and the two are queried in turn, call by
  call. Target: the 100,000 figure within 1.5x of the 10,000 one. Beside them, raw psycopg selecting the same 100
  rows by their scope keys and parsing their JSON, at both sizes.

The server comes from ``COGMEM_TEST_POSTGRES_URL`` (default: the one ``scripts/services.sh``
starts on :5433). Each run uses a database of its own and drops it at the end.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import migrate, quote_ident
from cogitator_memory.items import MemoryItem, MemoryItems, MemoryScope
from cogitator_memory.items.records import visible_scope_keys
from cogitator_memory.testing.services import own_database

from .common import Row, percentiles, time_async

ADMIN_URL = os.environ.get("COGMEM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5433/postgres")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = "bench"
SCOPE_SIZE = 100
BATCH = 500
_RAW_COLUMNS = (
    "id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status, start_at,"
    " valid_to, recorded_at, expired_at, entry_ids, times_retrieved, last_retrieved_at, version, body"
)
_RAW_INSERT = f"INSERT INTO {{t}} ({_RAW_COLUMNS}) VALUES ({', '.join(['%s'] * 19)})"


def _item(n: int, user: str) -> MemoryItem:
    return MemoryItem(
        id=f"mem_{user}_{n:07d}",
        kind="fact",
        subject=user,
        attribute=f"attribute {n % SCOPE_SIZE}",
        value=f"The value number {n} that {user} mentioned while planning a trip to Lisbon.",
        evidence=[{"entry_id": f"entry_{user}_{n}", "thread_id": f"thread_{user}", "quote": f"value number {n}"}],
        trust="user",
        verified=True,
        confidence=0.9,
        status="active",
        scope=MemoryScope(agent_id=AGENT, user_id=user),
        recorded_at=T0 + timedelta(milliseconds=n),
    )


def _new(n: int, slots: int) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "writer",
        "attribute": f"attribute {n % slots}",
        "value": f"The value number {n} said while planning a trip.",
        "evidence": [{"entry_id": f"entry_{n}", "thread_id": "thread_w", "quote": f"value number {n}"}],
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "scope": {"agent_id": AGENT, "user_id": "writer"},
    }


def _raw_row(item: MemoryItem) -> tuple[Any, ...]:
    """The row the store writes for ``item``, built before the clock starts."""
    return (
        item.id,
        item.scope.agent_id,
        item.scope.user_id,
        None,
        None,
        item.scope_key,
        item.subject_key,
        item.slot_key,
        item.kind,
        item.status,
        item.start,
        None,
        item.recorded_at,
        None,
        [e.entry_id for e in item.evidence if e.entry_id],
        0,
        None,
        1,
        item.model_dump_json(exclude_none=True, exclude={"times_retrieved", "last_retrieved_at", "version"}),
    )


async def _raw_singles(conn: psycopg.AsyncConnection[Any], sql: str, rows: list[tuple[Any, ...]]) -> float:
    start = time.perf_counter()
    for row in rows:
        await conn.execute(sql, row)
    return len(rows) / (time.perf_counter() - start)


async def _raw_batches(conn: psycopg.AsyncConnection[Any], sql: str, rows: list[tuple[Any, ...]]) -> float:
    start = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        async with conn.transaction(), conn.cursor() as cur:
            await cur.executemany(sql, rows[i : i + BATCH])
    return len(rows) / (time.perf_counter() - start)


async def _store_batches(store: PostgresAdapter, items: list[MemoryItem]) -> float:
    start = time.perf_counter()
    for i in range(0, len(items), BATCH):
        unwrap(await store.add_items(items[i : i + BATCH]))
    return len(items) / (time.perf_counter() - start)


async def _service_singles(items: MemoryItems, news: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for new in news:
        await items.add(new)
    return len(news) / (time.perf_counter() - start)


async def _bench_writes(url: str, quick: bool) -> list[Row]:
    rounds = 3
    per_round = 200 if quick else 1_000
    batched_per_round = 2_000 if quick else 10_000
    async with (
        PostgresAdapter(url=url, schema="bench_items_writes", dimensions=8, pool_size=2) as store,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
    ):
        await migrate(conn, "bench_items_raw")
        sql = _RAW_INSERT.format(t=f"{quote_ident('bench_items_raw')}.memory_items")
        service = MemoryItems(adapter=store)
        service_rates, raw_single_rates, batch_rates, raw_batch_rates = [], [], [], []
        for r in range(rounds):
            singles = [_raw_row(_item(n, f"single{r}")) for n in range(per_round)]
            raw_single_rates.append(await _raw_singles(conn, sql, singles))
            # round 0 opens per_round slots; each later round supersedes every one of them
            news = [_new(r * per_round + n, per_round) for n in range(per_round)]
            service_rates.append(await _service_singles(service, news))
            raw_rows = [_raw_row(_item(n, f"rawbatch{r}")) for n in range(batched_per_round)]
            raw_batch_rates.append(await _raw_batches(conn, sql, raw_rows))
            ours = [_item(n, f"batch{r}") for n in range(batched_per_round)]
            batch_rates.append(await _store_batches(store, ours))
    new_slot, superseding, raw_single = service_rates[0], max(service_rates[1:]), max(raw_single_rates)
    batch_rate, raw_batch = max(batch_rates), max(raw_batch_rates)
    return [
        Row(
            "item writes",
            "PostgreSQL, MemoryItems.add (rules), a new slot, items/s",
            new_slot,
            "items/s",
            raw_single,
            "raw psycopg INSERT, same rows, 1 tx/item",
            new_slot / raw_single,
            None,
            None,
            {"statements per write": "2 slot reads, 1 insert", "raw_rounds": raw_single_rates},
        ),
        Row(
            "item writes",
            "PostgreSQL, MemoryItems.add (rules), superseding, items/s",
            superseding,
            "items/s",
            raw_single,
            "raw psycopg INSERT, same rows, 1 tx/item",
            superseding / raw_single,
            None,
            None,
            {"statements per write": "3 slot reads, 1 insert, 1 update", "rounds": service_rates[1:]},
        ),
        Row(
            "item writes",
            f"PostgreSQL, add_items batches of {BATCH}, items/s",
            batch_rate,
            "items/s",
            raw_batch,
            f"raw psycopg executemany, same rows, 1 tx/{BATCH}",
            batch_rate / raw_batch,
            ">= 40% of raw",
            batch_rate / raw_batch >= 0.40,
            {"rounds": batch_rates, "raw_rounds": raw_batch_rates},
        ),
    ]


async def _fill(store: PostgresAdapter, total: int) -> None:
    items = [_item(n, f"u{user}") for user in range(total // SCOPE_SIZE) for n in range(SCOPE_SIZE)]
    for i in range(0, len(items), 5_000):
        unwrap(await store.add_items(items[i : i + 5_000]))


async def _bench_query(url: str, quick: bool) -> list[Row]:
    """Both sizes loaded side by side (a schema each) and queried in turn, call by call, so a
    busy machine slows both alike."""
    sizes = (2_000, 20_000) if quick else (10_000, 100_000)
    repeat = 100 if quick else 400
    scope = MemoryScope(agent_id=AGENT, user_id="u0")
    keys = visible_scope_keys(scope)
    samples: dict[tuple[str, int], list[float]] = {}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        calls: list[tuple[str, int, Callable[[], Awaitable[Any]]]] = []
        stores = [PostgresAdapter(url=url, schema=f"bench_items_q{size}", dimensions=8, pool_size=2) for size in sizes]
        for size, store in zip(sizes, stores, strict=True):
            unwrap(await store.connect())
            await _fill(store, size)
            service = MemoryItems(adapter=store)
            found = await service.query(scope)
            if len(found) != SCOPE_SIZE:
                raise RuntimeError(f"query(scope) found {len(found)} items, not {SCOPE_SIZE}")
            raw_sql = (
                f"SELECT body, times_retrieved, last_retrieved_at, version FROM {quote_ident(store.schema)}.memory_items"
                " WHERE scope_key = ANY(%s::text[]) AND status = ANY(%s::text[]) ORDER BY recorded_at, id"
            )

            async def raw(sql: str = raw_sql) -> None:
                cur = await conn.execute(sql, (keys, ["active", "superseded"]))
                [json.loads(r[0]) for r in await cur.fetchall()]

            async def direct(store: PostgresAdapter = store) -> None:
                unwrap(await store.query_items({"visible_to": scope}))

            async def rules(service: MemoryItems = service) -> None:
                await service.query(scope)

            calls += [("raw", size, raw), ("query_items", size, direct), ("MemoryItems.query", size, rules)]
        try:
            for _, _, fn in calls:
                await time_async(fn, 20)  # warm up: prepared statements, caches
            for _ in range(repeat):
                for name, size, fn in calls:
                    start = time.perf_counter()
                    await fn()
                    samples.setdefault((name, size), []).append(time.perf_counter() - start)
        finally:
            for store in stores:
                await store.disconnect()
    small, big = sizes
    p = {key: percentiles(values) for key, values in samples.items()}
    rows = []
    for label in ("MemoryItems.query", "query_items"):
        at_small, at_big = p[(label, small)], p[(label, big)]
        rows.append(
            Row(
                "query(scope)",
                f"PostgreSQL {label}, scope of {SCOPE_SIZE} among {big:,}, p50 ms",
                at_big[0] * 1e3,
                "ms",
                at_small[0] * 1e3,
                f"same, among {small:,}, p50",
                at_big[0] / at_small[0],
                "within 1.5x",
                at_big[0] / at_small[0] <= 1.5,
                {
                    "p95_ms": at_big[1] * 1e3,
                    f"p95_ms_at_{small}": at_small[1] * 1e3,
                    "raw_p50_ms": p[("raw", big)][0] * 1e3,
                    "raw_p95_ms": p[("raw", big)][1] * 1e3,
                    f"raw_p50_ms_at_{small}": p[("raw", small)][0] * 1e3,
                    f"raw_p95_ms_at_{small}": p[("raw", small)][1] * 1e3,
                },
            )
        )
    ours, raw_big = p[("query_items", big)], p[("raw", big)]
    rows.append(
        Row(
            "query(scope)",
            f"PostgreSQL query_items vs raw psycopg among {big:,}, p50 ms",
            ours[0] * 1e3,
            "ms",
            raw_big[0] * 1e3,
            "raw psycopg select + json.loads of the same rows",
            ours[0] / raw_big[0],
            "within 8x (records built and checked)",
            ours[0] / raw_big[0] <= 8.0,
            {"p95_ms": ours[1] * 1e3, "raw_p95_ms": raw_big[1] * 1e3},
        )
    )
    return rows


async def run(quick: bool) -> list[Row]:
    with own_database(ADMIN_URL, "cogmem_bench_items") as url:
        return [*await _bench_writes(url, quick), *await _bench_query(url, quick)]
