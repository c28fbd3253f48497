"""``MemoryItems.add_many(500)`` on every store beside a raw batch insert of the same rows, same schema.

Each round writes a batch of 500 items (a window of extraction: one user's new facts, each in a
slot of its own, evidence quoting its entry) through ``MemoryItems.add_many`` into one store, and
the same 500 items (as ``add_many`` stored them, read back, ids suffixed so they go in again)
through the raw driver into a second store of the same schema, made by the same adapter, in one
transaction, pipeline or bulk call: turning each item into its row or document (the JSON body
made in the timed part) and one batched write. Rounds alternate so both see the same load; the
first round of each is a warm-up and not counted. A second figure writes batches whose every item
supersedes the value its slot held (each slot read, the old state closed, the new one added; the
raw side still inserts the 500 new rows only).

``add_many`` also writes each item's recall-index record (its text, stemmed terms and postings:
see ``docs/recall-index.md``). On SQLite and PostgreSQL (``COGMEM_TEST_POSTGRES_URL``) the raw
side is measured twice: the item rows (and SQLite's evidence rows) alone, and the same rows with
the recall-index rows the store holds for them (the records, their postings, the terms' record
counts and the totals), so both sides write the same rows (PostgreSQL's raw side writes the
postings, some 15 a record, by ``COPY``, its bulk path, and the rest by ``executemany``). On
Redis (``COGMEM_TEST_REDIS_URL``) and MongoDB (``COGMEM_TEST_MONGODB_URL``) the raw side writes
the item hashes and index entries, or documents only (the raw writers of
``bench_redis_items`` and ``bench_mongodb_items``; PostgreSQL's item rows are those of
``bench_items_postgres``). Target: ``add_many`` at least 0.5 of the raw insert's items/s.
``COGMEM_BENCH_ADD_MANY_STORES`` (``sqlite,postgresql,redis,mongodb``) measures only those stores.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.index.records import RecallRecord
from cogitator_memory.items import MemoryItem, MemoryItems
from cogitator_memory.items.base import MemoryItemStoreMixin
from cogitator_memory.items.records import scope_key

from .common import Row

AGENT = "bench"
BATCH = 500
#: What the raw side writes, by key: the name the row gives it.
_RAW_NAMES = {
    "items": "raw {driver} of the same {n} item rows, same schema, 1 tx",
    "full": "raw sqlite3 executemany of the same {n} item rows and their recall-index rows, same schema, 1 tx",
    "pg_full": "raw psycopg executemany of the same {n} item rows and their recall-index rows (postings by COPY),"
    " same schema, 1 tx",
}

_COLUMNS = (
    "id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status, start_us,"
    " valid_to_us, recorded_us, expired_us, times_retrieved, last_retrieved_us, version, body"
)
_BODY_EXCLUDE = {"times_retrieved", "last_retrieved_at", "version"}
_RECALL_BODY = {"source_id", "role", "seq", "text", "valid_from", "valid_to", "lineage"}

#: Writes the given items (ids suffixed with the string) the raw way, one batch; the seconds it took.
RawWrite = Callable[[list[MemoryItem], str], Awaitable[float]]


def _new(round_no: int, n: int, value: str) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "writer",
        "attribute": f"attribute {round_no} {n}",
        "value": f"The {value} value number {n} said while planning a trip.",
        "evidence": [{"entry_id": f"entry_{round_no}_{n}", "thread_id": "thread_w", "quote": f"value number {n}"}],
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "scope": {"agent_id": AGENT, "user_id": "writer"},
    }


def _micros(value: Any) -> int | None:
    return None if value is None else to_micros(value)


def _renamed(items: list[MemoryItem], suffix: str) -> list[MemoryItem]:
    return [item.model_copy(update={"id": f"{item.id}{suffix}"}) for item in items]


# --- SQLite --------------------------------------------------------------------------------


def _sqlite_item_rows(db: sqlite3.Connection, items: list[MemoryItem]) -> None:
    rows = [
        (
            item.id,
            item.scope.agent_id,
            item.scope.user_id,
            item.scope.project_id,
            item.scope.thread_id,
            scope_key(item.scope),
            item.subject_key,
            item.slot_key,
            item.kind,
            item.status,
            to_micros(item.start),
            _micros(item.valid_to),
            to_micros(item.recorded_at),
            _micros(item.expired_at),
            item.times_retrieved,
            _micros(item.last_retrieved_at),
            item.version,
            item.model_dump_json(exclude_none=True, exclude=_BODY_EXCLUDE),
        )
        for item in items
    ]
    evidence = [(e.entry_id, item.id) for item in items for e in item.evidence if e.entry_id]
    db.executemany(f"INSERT INTO memory_items ({_COLUMNS}) VALUES ({','.join('?' * 18)})", rows)
    db.executemany(
        "INSERT INTO memory_item_evidence (entry_id, rid) SELECT ?, rid FROM memory_items WHERE id = ?", evidence
    )


def _sqlite_recall_rows(db: sqlite3.Connection, records: list[RecallRecord]) -> None:
    """The rows the SQLite recall index keeps for ``records`` (engines/sqlite/recall.py), written raw."""
    rows = [
        (
            r.id,
            r.kind,
            r.agent_id,
            r.user_id,
            r.thread_id,
            r.status,
            to_micros(r.said_at),
            _micros(r.time_start),
            _micros(r.time_end),
            len(r.terms),
            " ".join(r.terms),
            json.dumps(
                r.model_dump(mode="json", include=_RECALL_BODY, exclude_none=True),
                ensure_ascii=False,
                separators=(",", ":"),
            ),
        )
        for r in records
    ]
    db.executemany(
        "INSERT INTO recall_records (id, kind, agent_id, user_id, thread_id, status, said_us, time_start_us,"
        " time_end_us, term_count, terms, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    ids = [r.id for r in records]
    rids: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rids.update(db.execute(f"SELECT id, rid FROM recall_records WHERE id IN ({marks})", chunk).fetchall())
    postings: list[tuple[str, int, int]] = []
    held: Counter[str] = Counter()
    for record in records:
        counts = Counter(record.terms)
        postings.extend((term, rids[record.id], tf) for term, tf in counts.items())
        held.update(counts.keys())
    postings.sort()
    db.executemany("INSERT INTO recall_terms (term, rid, tf) VALUES (?, ?, ?)", postings)
    db.executemany(
        "INSERT INTO recall_df (term, n) VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET n = n + excluded.n",
        sorted(held.items()),
    )
    db.execute(
        "UPDATE recall_stats SET records = records + ?, total = total + ? WHERE one = 1",
        (len(records), sum(len(r.terms) for r in records)),
    )


@asynccontextmanager
async def _sqlite(full: bool) -> AsyncIterator[tuple[MemoryItemStoreMixin, RawWrite]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        async with SQLiteAdapter(path=folder / "raw.db"):
            pass  # the same schema, made by the adapter's migrations
        raw = sqlite3.connect(folder / "raw.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=NORMAL")
        async with SQLiteAdapter(path=folder / "store.db") as store:

            async def write(items: list[MemoryItem], suffix: str) -> float:
                records: list[RecallRecord] = []
                if full:  # read before the clock starts, as the items were
                    ids = [f"item:{item.id}" for item in items]
                    records = unwrap(await store.get_recall_records(ids))
                    records = [r.model_copy(update={"id": f"{r.id}{suffix}"}) for r in records]
                start = time.perf_counter()
                renamed = _renamed(items, suffix)
                raw.execute("BEGIN IMMEDIATE")
                _sqlite_item_rows(raw, renamed)
                if full:
                    _sqlite_recall_rows(raw, records)
                raw.execute("COMMIT")
                return time.perf_counter() - start

            yield store, write
        raw.close()


# --- PostgreSQL, Redis, MongoDB --------------------------------------------------------------


#: The fields of a recall record PostgreSQL keeps in its JSON body (engines/postgres/recall.py).
_PG_RECALL_BODY = {"source_id", "role", "name", "seq", "text", "valid_from", "valid_to", "lineage"}


async def _postgres_recall_rows(conn: Any, schema: str, records: list[RecallRecord]) -> None:
    """The rows the PostgreSQL recall index keeps for ``records`` (engines/postgres/recall.py),
    written raw in the caller's transaction: the records by ``executemany`` (their generated
    ``rid`` returned), their postings by ``COPY``, the terms' record counts by ``executemany``
    upserts, the totals by one ``UPDATE``."""
    from cogitator_memory.engines.postgres.schema import quote_ident

    s = quote_ident(schema)
    rows = [
        (
            r.id,
            r.kind,
            r.agent_id,
            r.user_id,
            r.thread_id,
            r.status,
            r.said_at,
            r.time_start,
            r.time_end,
            len(r.terms),
            "\x1f".join(r.terms),
            r.model_dump_json(include=_PG_RECALL_BODY, exclude_none=True),
        )
        for r in records
    ]
    async with conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO {s}.recall_records (id, kind, agent_id, user_id, thread_id, status, said_at, time_start,"
            " time_end, term_count, terms, body) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING rid",
            rows,
            returning=True,
        )
        rids: list[int] = []
        while True:
            rids.append((await cur.fetchone())[0])
            if not cur.nextset():
                break
        postings: list[tuple[str, int, int, int]] = []
        held: Counter[str] = Counter()
        for record, rid in zip(records, rids, strict=True):
            counts = Counter(record.terms)
            postings.extend((term, rid, tf, len(record.terms)) for term, tf in counts.items())
            held.update(counts.keys())
        postings.sort()
        async with cur.copy(f"COPY {s}.recall_terms (term, rid, tf, len) FROM STDIN") as copy:
            for posting in postings:
                await copy.write_row(posting)
        await cur.executemany(
            f"INSERT INTO {s}.recall_df AS d (term, df) VALUES (%s, %s)"
            " ON CONFLICT (term) DO UPDATE SET df = d.df + EXCLUDED.df",
            sorted(held.items()),
        )
        await cur.execute(
            f"UPDATE {s}.recall_stats SET records = records + %s, total = total + %s WHERE one = 1",
            (len(records), sum(len(r.terms) for r in records)),
        )


@asynccontextmanager
async def _postgres(full: bool = False) -> AsyncIterator[tuple[MemoryItemStoreMixin, RawWrite]]:
    import psycopg

    from cogitator_memory.engines.postgres.adapter import PostgresAdapter
    from cogitator_memory.engines.postgres.schema import migrate, quote_ident

    from .bench_items_postgres import _RAW_INSERT, _database

    with _database() as url:
        async with (
            PostgresAdapter(url=url, schema="bench_add_many", dimensions=8, pool_size=2) as store,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
        ):
            await migrate(conn, "bench_add_many_raw")
            sql = _RAW_INSERT.format(t=f"{quote_ident('bench_add_many_raw')}.memory_items")

            async def write(items: list[MemoryItem], suffix: str) -> float:
                records: list[RecallRecord] = []
                if full:  # read before the clock starts, as the items were
                    records = unwrap(await store.get_recall_records([f"item:{item.id}" for item in items]))
                    records = [r.model_copy(update={"id": f"{r.id}{suffix}"}) for r in records]
                start = time.perf_counter()
                rows = [
                    (
                        item.id,
                        item.scope.agent_id,
                        item.scope.user_id,
                        item.scope.project_id,
                        item.scope.thread_id,
                        item.scope_key,
                        item.subject_key,
                        item.slot_key,
                        item.kind,
                        item.status,
                        item.start,
                        item.valid_to,
                        item.recorded_at,
                        item.expired_at,
                        sorted({e.entry_id for e in item.evidence if e.entry_id}),
                        item.times_retrieved,
                        item.last_retrieved_at,
                        item.version,
                        item.model_dump_json(exclude_none=True, exclude=_BODY_EXCLUDE),
                    )
                    for item in _renamed(items, suffix)
                ]
                async with conn.transaction():
                    async with conn.cursor() as cur:
                        await cur.executemany(sql, rows)
                    if full:
                        await _postgres_recall_rows(conn, "bench_add_many_raw", records)
                return time.perf_counter() - start

            yield store, write


@asynccontextmanager
async def _redis() -> AsyncIterator[tuple[MemoryItemStoreMixin, RawWrite]]:
    from cogitator_memory.engines.redis.threads import RedisAdapter

    from .bench_redis_items import STANDALONE_URL, _raw_write

    prefix = f"bench:am:{uuid.uuid4().hex[:10]}:"
    async with RedisAdapter(url=STANDALONE_URL, key_prefix=prefix) as store:

        async def write(items: list[MemoryItem], suffix: str) -> float:
            start = time.perf_counter()
            pipe = store.client.pipeline(transaction=True)
            for item in _renamed(items, suffix):
                _raw_write(pipe, f"{prefix}raw:", item)
            await pipe.execute()
            return time.perf_counter() - start

        try:
            yield store, write
        finally:
            keys = [k async for k in store.client.scan_iter(match=f"{prefix}*", count=5000)]
            for start in range(0, len(keys), 5000):
                await store.client.delete(*keys[start : start + 5000])


@asynccontextmanager
async def _mongodb() -> AsyncIterator[tuple[MemoryItemStoreMixin, RawWrite]]:
    from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter

    from .bench_mongodb_items import _raw_document

    url = os.environ.get("COGMEM_TEST_MONGODB_URL", "mongodb://127.0.0.1:27019/?directConnection=true")
    name = uuid.uuid4().hex[:8]
    ours = MongoDBAdapter(uri=url, database=f"bench_am_{name}", connect_timeout=120, socket_timeout=900)
    raw = MongoDBAdapter(uri=url, database=f"bench_amraw_{name}", connect_timeout=120, socket_timeout=900)
    async with ours, raw:
        collection = raw.items_collection

        async def write(items: list[MemoryItem], suffix: str) -> float:
            start = time.perf_counter()
            await collection.insert_many([_raw_document(item) for item in _renamed(items, suffix)], ordered=True)
            return time.perf_counter() - start

        try:
            yield ours, write
        finally:
            for store in (ours, raw):
                await store.client.drop_database(store.database)


# --- the measure ---------------------------------------------------------------------------


async def _measure(
    opened: AbstractAsyncContextManager[tuple[MemoryItemStoreMixin, RawWrite]], rounds: int, supersede: bool
) -> tuple[float, float]:
    """Items/s of ``add_many`` and of the raw write over ``rounds`` counted rounds."""
    spent = {"add_many": 0.0, "raw": 0.0}
    async with opened as (store, raw_write):
        items = MemoryItems(adapter=store)
        for round_no in range(rounds + 1):
            if supersede:  # every slot holds a value already (not timed)
                await items.add_many([_new(round_no, n, "old") for n in range(BATCH)])
            batch = [_new(round_no, n, "new") for n in range(BATCH)]
            start = time.perf_counter()
            written = await items.add_many(batch)
            took = time.perf_counter() - start
            stored = unwrap(await store.get_items([i.id for i in written]))
            raw_took = await raw_write(stored, f"_r{round_no}")
            if round_no:  # the first round warms both up
                spent["add_many"] += took
                spent["raw"] += raw_took
    count = rounds * BATCH
    return count / spent["add_many"], count / spent["raw"]


STORES: dict[str, tuple[str, Callable[[], AbstractAsyncContextManager[tuple[MemoryItemStoreMixin, RawWrite]]]]] = {
    "PostgreSQL": ("psycopg executemany", _postgres),
    "Redis": ("redis-py pipeline (MULTI)", _redis),
    "MongoDB": ("pymongo insert_many", _mongodb),
}


def _row(store: str, what: str, rate: float, raw_rate: float, raw_name: str, rounds: int) -> Row:
    return Row(
        "item writes",
        f"{store}, MemoryItems.add_many({BATCH}), {what}, items/s",
        rate,
        "items/s",
        raw_rate,
        raw_name,
        rate / raw_rate,
        ">= 0.5 of raw",
        rate / raw_rate >= 0.5,
        {"rounds": rounds},
    )


async def run(quick: bool) -> list[Row]:
    rounds = 5 if quick else 20
    # COGMEM_BENCH_ADD_MANY_STORES=sqlite,postgres measures only those (default: every store)
    chosen = {s.strip().casefold() for s in os.environ.get("COGMEM_BENCH_ADD_MANY_STORES", "").split(",") if s.strip()}
    others = {k: v for k, v in STORES.items() if not chosen or k.casefold() in chosen}
    rows: list[Row] = []
    for supersede in (False, True):
        what = "each superseding its slot's value" if supersede else "each in a new slot"
        for full in (False, True) if not chosen or "sqlite" in chosen else ():
            rate, raw_rate = await _measure(_sqlite(full), rounds, supersede)
            raw_name = _RAW_NAMES["full" if full else "items"].format(driver="sqlite3 executemany", n=BATCH)
            rows.append(_row("SQLite", what, rate, raw_rate, raw_name, rounds))
        for store, (driver, opened) in others.items():
            rate, raw_rate = await _measure(opened(), max(2, rounds // 2), supersede)
            raw_name = _RAW_NAMES["items"].format(driver=driver, n=BATCH)
            rows.append(_row(store, what, rate, raw_rate, raw_name, max(2, rounds // 2)))
            if store == "PostgreSQL":  # and beside the same rows, the records' too
                rate, raw_rate = await _measure(_postgres(full=True), max(2, rounds // 2), supersede)
                raw_name = _RAW_NAMES["pg_full"].format(n=BATCH)
                rows.append(_row(store, what, rate, raw_rate, raw_name, max(2, rounds // 2)))
    return rows
