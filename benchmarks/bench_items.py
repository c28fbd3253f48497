"""Memory items on SQLite (a file, WAL), each figure beside raw ``sqlite3`` in the same run.

* Item writes per second through ``MemoryItems.add`` (the rules: the slot read, the insert, the
  layout read and the read back, one item at a time) and through ``add_items`` in batches of
  500, against raw ``sqlite3`` inserting the same rows (one transaction per item, and one per
  batch). A write through the rules costs several statements, so its bar is lower.
* ``MemoryItems.query(scope)`` p50/p95 for a scope of 100 items among 10,000 and among 100,000
  items of the same agent (the other users' items). Target: the 100,000 figure within 1.5x of the
  10,000 one. Beside it, raw ``sqlite3`` selecting the same 100 rows by their scope keys and
  parsing their JSON.

PostgreSQL rows are added by its port of the item store.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.items import MemoryItem, MemoryItems, MemoryScope
from cogitator_memory.items.records import scope_key, visible_scope_keys

from .common import Row, percentiles

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = "bench"
SCOPE_SIZE = 100
BATCH = 500


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


def _new(n: int) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "writer",
        "attribute": f"attribute {n % 1000}",
        "value": f"The value number {n} said while planning a trip.",
        "evidence": [{"entry_id": f"entry_{n}", "thread_id": "thread_w", "quote": f"value number {n}"}],
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "scope": {"agent_id": AGENT, "user_id": "writer"},
    }


_RAW_COLUMNS = (
    "id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status, start_us,"
    " valid_to_us, recorded_us, expired_us, times_retrieved, last_retrieved_us, version, body"
)


def _raw_row(item: MemoryItem) -> tuple[Any, ...]:
    return (
        item.id,
        item.scope.agent_id,
        item.scope.user_id,
        None,
        None,
        scope_key(item.scope),
        item.subject_key,
        item.slot_key,
        item.kind,
        item.status,
        to_micros(item.start),
        None,
        to_micros(item.recorded_at),
        None,
        0,
        None,
        1,
        item.model_dump_json(exclude_none=True, exclude={"times_retrieved", "last_retrieved_at", "version"}),
    )


def _raw_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE memory_items (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, agent_id TEXT, user_id TEXT,"
        " project_id TEXT, thread_id TEXT, scope_key TEXT, subject_key TEXT, slot_key TEXT, kind TEXT, status TEXT,"
        " start_us INTEGER, valid_to_us INTEGER, recorded_us INTEGER, expired_us INTEGER, times_retrieved INTEGER,"
        " last_retrieved_us INTEGER, version INTEGER, body TEXT)"
    )
    db.execute("CREATE INDEX s ON memory_items (scope_key, recorded_us)")
    db.execute(
        "CREATE TABLE memory_item_evidence (entry_id TEXT, rid INTEGER, PRIMARY KEY (entry_id, rid)) WITHOUT ROWID"
    )
    return db


def _raw_insert(db: sqlite3.Connection, items: list[MemoryItem]) -> None:
    db.execute("BEGIN IMMEDIATE")
    for item in items:
        rid = db.execute(
            f"INSERT INTO memory_items ({_RAW_COLUMNS}) VALUES ({','.join('?' * 18)})", _raw_row(item)
        ).lastrowid
        db.executemany(
            "INSERT INTO memory_item_evidence (entry_id, rid) VALUES (?, ?)",
            [(e.entry_id, rid) for e in item.evidence],
        )
    db.execute("COMMIT")


async def _fill(store: Any, total: int) -> None:
    users = total // SCOPE_SIZE
    items = [_item(n, f"u{user}") for user in range(users) for n in range(SCOPE_SIZE)]
    for i in range(0, len(items), 5_000):
        unwrap(await store.add_items(items[i : i + 5_000]))


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def _timed_sync(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def _writes(folder: Path, writes: int) -> list[Row]:
    """Each write through the store alternates with the raw write of the same size, so both see
    the same load on the machine."""
    raw = _raw_db(folder / "raw.db")
    singles = [_item(n, "single") for n in range(writes)]
    batched = [_item(n, "batched") for n in range(writes * 4)]
    news = [_new(n) for n in range(writes)]
    spent = {"rules": 0.0, "raw single": 0.0, "batch": 0.0, "raw batch": 0.0}
    async with SQLiteAdapter(path=folder / "writes.db") as store:
        items = MemoryItems(adapter=store)
        for new, item in zip(news, singles, strict=True):
            spent["rules"] += await _timed(lambda n=new: items.add(n))
            spent["raw single"] += _timed_sync(lambda i=item: _raw_insert(raw, [i]))
        for i in range(0, len(batched), BATCH):
            chunk = batched[i : i + BATCH]
            spent["batch"] += await _timed(lambda c=chunk: store.add_items(c))
            spent["raw batch"] += _timed_sync(lambda c=chunk: _raw_insert(raw, c))
    raw.close()
    rules_rate, raw_single = writes / spent["rules"], writes / spent["raw single"]
    batch_rate, raw_batch = len(batched) / spent["batch"], len(batched) / spent["raw batch"]
    return [
        Row(
            "item writes",
            "SQLite, MemoryItems.add (rules), items/s",
            rules_rate,
            "items/s",
            raw_single,
            "raw sqlite3 insert, same rows, 1 tx/item",
            rules_rate / raw_single,
            ">= 15% of raw (3 statements: slot read, insert, layout read)",
            rules_rate / raw_single >= 0.15,
            {"slots": min(writes, 1000), "writes into a slot already holding a value": max(0, writes - 1000)},
        ),
        Row(
            "item writes",
            f"SQLite, add_items batches of {BATCH}, items/s",
            batch_rate,
            "items/s",
            raw_batch,
            f"raw sqlite3 insert, same rows, 1 tx/{BATCH}",
            batch_rate / raw_batch,
            ">= 30% of raw (every item checked whole)",
            batch_rate / raw_batch >= 0.30,
        ),
    ]


async def run(quick: bool) -> list[Row]:
    writes = 1_000 if quick else 5_000
    small_size, big_size = (2_000, 20_000) if quick else (10_000, 100_000)
    repeat = 100 if quick else 400
    scope = MemoryScope(agent_id=AGENT, user_id="u0")
    keys = visible_scope_keys(scope)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = await _writes(folder, writes)
        for label in ("SQLite", "InMemory"):
            small: Any = SQLiteAdapter(path=folder / "small.db") if label == "SQLite" else InMemoryAdapter()
            big: Any = SQLiteAdapter(path=folder / "big.db") if label == "SQLite" else InMemoryAdapter()
            async with small, big:
                await _fill(small, small_size)
                await _fill(big, big_size)
                on_small, on_big = MemoryItems(adapter=small), MemoryItems(adapter=big)
                for service in (on_small, on_big):
                    found = await service.query(scope)
                    if len(found) != SCOPE_SIZE:
                        raise RuntimeError(f"query(scope) found {len(found)} items, not {SCOPE_SIZE}")
                db = sqlite3.connect(folder / "big.db") if label == "SQLite" else None

                def raw_query(db: sqlite3.Connection | None = db) -> None:
                    assert db is not None
                    fetched = db.execute(
                        f"SELECT body, times_retrieved, version FROM memory_items WHERE scope_key IN"
                        f" ({','.join('?' * len(keys))}) AND status IN ('active', 'superseded')"
                        " ORDER BY recorded_us, id",
                        keys,
                    ).fetchall()
                    [json.loads(r[0]) for r in fetched]

                samples: dict[str, list[float]] = {"small": [], "big": [], "raw": []}
                for _ in range(repeat):  # alternating, so every figure sees the same load
                    samples["small"].append(await _timed(lambda s=on_small: s.query(scope)))
                    samples["big"].append(await _timed(lambda s=on_big: s.query(scope)))
                    if db is not None:
                        samples["raw"].append(_timed_sync(raw_query))
                if db is not None:
                    db.close()
            small_p, big_p = percentiles(samples["small"]), percentiles(samples["big"])
            rows.append(
                Row(
                    "query(scope)",
                    f"{label}, scope of {SCOPE_SIZE} among {big_size:,}, p50 ms",
                    big_p[0] * 1e3,
                    "ms",
                    small_p[0] * 1e3,
                    f"{label}, among {small_size:,}, p50",
                    big_p[0] / small_p[0],
                    "within 1.5x",
                    big_p[0] / small_p[0] <= 1.5,
                    {"p95_ms": big_p[1] * 1e3, f"p95_ms_among_{small_size}": small_p[1] * 1e3},
                )
            )
            if samples["raw"]:
                raw_p = percentiles(samples["raw"])
                rows.append(
                    Row(
                        "query(scope)",
                        f"SQLite vs raw sqlite3 among {big_size:,}, p50 ms",
                        big_p[0] * 1e3,
                        "ms",
                        raw_p[0] * 1e3,
                        "raw sqlite3 select + json.loads of the same rows",
                        big_p[0] / raw_p[0],
                        "within 8x (validated records, one state per slot read from the times)",
                        big_p[0] / raw_p[0] <= 8.0,
                        {"raw_p95_ms": raw_p[1] * 1e3},
                    )
                )
    return rows
