"""``MemoryItems.add_many`` on SQLite beside a raw ``executemany`` of the same rows, same schema.

Each round writes a batch of 500 items (a window of extraction: one user's new facts, each in a
slot of its own, evidence quoting its entry) through ``MemoryItems.add_many`` into one store, and
the same 500 rows (the items as ``add_many`` stored them, read back) through raw ``sqlite3``
into a second file made by the same adapter (same tables and indexes): turning each item into
its row (the JSON body) and one ``executemany`` for the rows and one for the evidence, in one
transaction. Rounds alternate so both see the same load; the first round of each is a warm-up and
not counted. A second figure writes batches whose every item supersedes the value its slot held
(each slot read, the old state closed, the new one added). Target: ``add_many`` at least 0.5 of
the raw insert's items/s.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.items import MemoryItem, MemoryItems
from cogitator_memory.items.records import scope_key

from .common import Row

AGENT = "bench"
BATCH = 500

_COLUMNS = (
    "id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status, start_us,"
    " valid_to_us, recorded_us, expired_us, times_retrieved, last_retrieved_us, version, body"
)
_BODY_EXCLUDE = {"times_retrieved", "last_retrieved_at", "version"}


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


def _raw_insert(db: sqlite3.Connection, items: list[MemoryItem], suffix: str) -> None:
    """The rows of ``items`` (ids suffixed, so the same items go in again) in one transaction."""
    rows = [
        (
            f"{item.id}{suffix}",
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
    evidence = [(e.entry_id, f"{item.id}{suffix}") for item in items for e in item.evidence if e.entry_id]
    db.execute("BEGIN IMMEDIATE")
    db.executemany(f"INSERT INTO memory_items ({_COLUMNS}) VALUES ({','.join('?' * 18)})", rows)
    db.executemany(
        "INSERT INTO memory_item_evidence (entry_id, rid) SELECT ?, rid FROM memory_items WHERE id = ?", evidence
    )
    db.execute("COMMIT")


async def _measure(folder: Path, rounds: int, supersede: bool) -> tuple[float, float]:
    """Items/s of ``add_many`` and of the raw insert over ``rounds`` counted rounds."""
    tag = "supersede" if supersede else "fresh"
    async with SQLiteAdapter(path=folder / f"raw-{tag}.db"):
        pass  # the same schema, made by the adapter's migrations
    raw = sqlite3.connect(folder / f"raw-{tag}.db", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    spent = {"add_many": 0.0, "raw": 0.0}
    async with SQLiteAdapter(path=folder / f"store-{tag}.db") as store:
        items = MemoryItems(adapter=store)
        for round_no in range(rounds + 1):
            if supersede:  # every slot holds a value already (not timed)
                await items.add_many([_new(round_no, n, "old") for n in range(BATCH)])
            batch = [_new(round_no, n, "new") for n in range(BATCH)]
            start = time.perf_counter()
            written = await items.add_many(batch)
            took = time.perf_counter() - start
            stored = unwrap(await store.get_items([i.id for i in written]))
            start = time.perf_counter()
            _raw_insert(raw, stored, f"_r{round_no}")
            raw_took = time.perf_counter() - start
            if round_no:  # the first round warms both up
                spent["add_many"] += took
                spent["raw"] += raw_took
    raw.close()
    count = rounds * BATCH
    return count / spent["add_many"], count / spent["raw"]


async def run(quick: bool) -> list[Row]:
    rounds = 5 if quick else 20
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for supersede in (False, True):
            rate, raw_rate = await _measure(Path(tmp), rounds, supersede)
            what = "each superseding its slot's value" if supersede else "each in a new slot"
            rows.append(
                Row(
                    "item writes",
                    f"SQLite, MemoryItems.add_many({BATCH}), {what}, items/s",
                    rate,
                    "items/s",
                    raw_rate,
                    f"raw sqlite3 executemany of the same {BATCH} rows, same schema, 1 tx",
                    rate / raw_rate,
                    ">= 0.5 of raw",
                    rate / raw_rate >= 0.5,
                    {"rounds": rounds},
                )
            )
    return rows
