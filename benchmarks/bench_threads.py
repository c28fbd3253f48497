"""Thread stores on the embedded engines: InMemoryAdapter and SQLiteAdapter.

- ``add_entry`` rate on a SQLite file (WAL) against raw ``sqlite3`` statements writing the same
  rows with one transaction per entry (target: at least 40% of raw), and InMemory's rate
  (target: at least 100,000 entries/s).
- ``get_entries(limit=50)`` and ``get_path(limit=50)`` on a 100,000-entry thread against the
  same call on a 1,000-entry thread (target: within 1.5x) and against the raw ``sqlite3``
  query that reads and parses the same rows (target: within 3x).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from pathlib import Path

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.ids import entry_id

from .common import Row, percentiles, time_async, time_sync

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes on everything it hears."


def _message(i: int) -> dict[str, object]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"{TEXT} #{i}"}


async def _add_rate(memory: InMemoryAdapter | SQLiteAdapter, count: int) -> float:
    thread = unwrap(await memory.create_thread("bench"))
    start = time.perf_counter()
    for i in range(count):
        result = await memory.add_entry({"thread_id": thread.id, "message": _message(i), "token_count": 20})
        if not result.success:
            raise RuntimeError(result.error)
    return count / (time.perf_counter() - start)


def _raw_add_rate(path: Path, count: int) -> float:
    """Raw sqlite3 writing the same rows the adapter writes, one transaction per entry."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, agent_id TEXT, metadata TEXT, created_at INTEGER,"
        " updated_at INTEGER, active_leaf_id TEXT, next_seq INTEGER)"
    )
    db.execute(
        "CREATE TABLE entries (id TEXT PRIMARY KEY, thread_id TEXT, parent_id TEXT, seq INTEGER, type TEXT,"
        " created_at INTEGER, body TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX e_seq ON entries (thread_id, seq)")
    db.execute("CREATE INDEX e_parent ON entries (parent_id) WHERE parent_id IS NOT NULL")
    db.execute("INSERT INTO threads VALUES ('t', 'bench', '{}', 0, 0, NULL, 1)")
    start = time.perf_counter()
    for i in range(count):
        db.execute("BEGIN IMMEDIATE")
        leaf, seq = db.execute("SELECT active_leaf_id, next_seq FROM threads WHERE id = 't'").fetchone()
        eid = entry_id()
        now = to_micros_now()
        body = json.dumps(
            {"id": eid, "thread_id": "t", "parent_id": leaf, "seq": seq, "message": _message(i), "token_count": 20}
        )
        db.execute("INSERT INTO entries VALUES (?, 't', ?, ?, 'message', ?, ?)", (eid, leaf, seq, now, body))
        db.execute("UPDATE threads SET next_seq = ?, active_leaf_id = ? WHERE id = 't'", (seq + 1, eid))
        db.execute("COMMIT")
    rate = count / (time.perf_counter() - start)
    db.close()
    return rate


def to_micros_now() -> int:
    from cogitator_memory.clock import now

    return to_micros(now())


async def _fill(memory: InMemoryAdapter | SQLiteAdapter, count: int) -> str:
    thread = unwrap(await memory.create_thread("bench"))
    for i in range(count):
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": _message(i), "token_count": 20}))
    return thread.id


async def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    adds = 3_000 if quick else 20_000
    big = 20_000 if quick else 100_000
    repeat = 200 if quick else 1_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        raw_rate = _raw_add_rate(folder / "raw.db", adds)
        async with SQLiteAdapter(path=folder / "adapter.db") as sqlite_store:
            sqlite_rate = await _add_rate(sqlite_store, adds)
        rows.append(
            Row(
                "add_entry",
                "SQLite file (WAL), entries/s",
                sqlite_rate,
                "entries/s",
                raw_rate,
                "raw sqlite3, same rows, 1 tx/entry",
                sqlite_rate / raw_rate,
                ">= 40% of raw",
                sqlite_rate / raw_rate >= 0.40,
            )
        )
        async with InMemoryAdapter(max_entries=adds + 10) as memory_store:
            memory_rate = await _add_rate(memory_store, adds)
        rows.append(
            Row(
                "add_entry",
                "InMemory, entries/s",
                memory_rate,
                "entries/s",
                None,
                None,
                None,
                ">= 100,000/s",
                memory_rate >= 100_000,
            )
        )

        for label, make in (
            ("SQLite", lambda size: SQLiteAdapter(path=folder / f"read-{size}.db")),
            ("InMemory", lambda size: InMemoryAdapter(max_entries=size + 10)),
        ):
            timings: dict[tuple[str, int], tuple[float, float]] = {}
            for size in (1_000, big):
                store = make(size)
                async with store:
                    tid = await _fill(store, size)
                    for call in ("get_entries", "get_path"):
                        if call == "get_entries":
                            samples = await time_async(
                                lambda s=store, t=tid: s.get_entries(thread_id=t, limit=50), repeat
                            )
                        else:
                            samples = await time_async(lambda s=store, t=tid: s.get_path(thread_id=t, limit=50), repeat)
                        timings[(call, size)] = percentiles(samples)
                    if label == "SQLite" and size == big:
                        db = sqlite3.connect(folder / f"read-{size}.db")

                        def raw_entries(db: sqlite3.Connection = db, t: str = tid) -> None:
                            rows_ = db.execute(
                                "SELECT body FROM entries WHERE thread_id = ? AND type IN ('message','tool_result')"
                                " ORDER BY seq DESC LIMIT 50",
                                (t,),
                            ).fetchall()
                            [json.loads(r[0]) for r in reversed(rows_)]

                        def raw_path(db: sqlite3.Connection = db, t: str = tid) -> None:
                            leaf = db.execute("SELECT active_leaf_id FROM threads WHERE id = ?", (t,)).fetchone()[0]
                            rows_ = db.execute(
                                "WITH RECURSIVE p(id, parent_id, type, body) AS (SELECT id, parent_id, type, body"
                                " FROM entries WHERE id = ? UNION ALL SELECT e.id, e.parent_id, e.type, e.body"
                                " FROM entries e JOIN p ON e.id = p.parent_id)"
                                " SELECT body FROM p WHERE type IN ('message','tool_result') LIMIT 50",
                                (leaf,),
                            ).fetchall()
                            [json.loads(r[0]) for r in reversed(rows_)]

                        raw = {
                            "get_entries": percentiles(time_sync(raw_entries, repeat)),
                            "get_path": percentiles(time_sync(raw_path, repeat)),
                        }
                        db.close()
            for call in ("get_entries", "get_path"):
                small_p50, _ = timings[(call, 1_000)]
                big_p50, big_p95 = timings[(call, big)]
                rows.append(
                    Row(
                        f"{call}(limit=50)",
                        f"{label}, {big:,} entries, p50 ms",
                        big_p50 * 1e3,
                        "ms",
                        small_p50 * 1e3,
                        f"{label}, 1,000 entries, p50",
                        big_p50 / small_p50,
                        "within 1.5x",
                        big_p50 / small_p50 <= 1.5,
                        {"p95_ms": big_p95 * 1e3},
                    )
                )
                if label == "SQLite":
                    raw_p50 = raw[call][0]
                    rows.append(
                        Row(
                            f"{call}(limit=50)",
                            f"SQLite vs raw sqlite3 at {big:,}, p50 ms",
                            big_p50 * 1e3,
                            "ms",
                            raw_p50 * 1e3,
                            "raw sqlite3 query + json.loads",
                            big_p50 / raw_p50,
                            "within 3x",
                            big_p50 / raw_p50 <= 3.0,
                        )
                    )
    return rows
