"""Thread stores on the embedded engines: InMemoryAdapter and SQLiteAdapter.

Write rates are measured the strict way, on a machine other work may load: each side warm (a
first chunk of writes not timed), alone in a tight loop, timed per chunk of 100 writes, the rate
of the best chunk reported (best-of-N) beside the rate by CPU time (``time.process_time``) over
the whole run.

- ``add_entry`` on InMemory with ``token_count`` given and counted by the library, 9,000 entries
  in one thread (below the default ``max_entries`` of 10,000, so that no eviction is measured);
  targets: 76,000/s given and 96,000/s counted (the TypeScript package's figures).
- ``add_entry`` on a SQLite file (WAL) against raw ``sqlite3`` statements writing the same rows
  with one transaction per entry, each measured alone; targets: 6,300/s, and at least 40% of raw.
- ``get_entries(limit=50)`` and ``get_path(limit=50)`` on a 100,000-entry thread against the
  same call on a 1,000-entry thread (target: within 1.5x) and against the raw ``sqlite3``
  query that reads and parses the same rows (target: within 3x).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.memory.threads import DEFAULT_MAX_ENTRIES
from cogitator_memory.ids import entry_id

from .common import Row, percentiles, time_async, time_sync

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes on everything it hears."


def _message(i: int) -> dict[str, object]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"{TEXT} #{i}"}


CHUNK = 100


class _Rates:
    """Rates of a run of writes timed per chunk: the best chunk's, and by CPU time."""

    def __init__(self) -> None:
        self.best = 0.0
        self.count = 0
        self.cpu = 0.0

    def chunk(self, count: int, seconds: float) -> None:
        self.best = max(self.best, count / seconds)

    @property
    def by_cpu(self) -> float:
        return self.count / self.cpu


async def _add_rate(memory: InMemoryAdapter | SQLiteAdapter, count: int, *, given: bool = True) -> _Rates:
    """``add_entry`` of ``count`` new messages after ``CHUNK`` untimed ones (the warm-up)."""
    thread = unwrap(await memory.create_thread("bench"))
    extra = {"token_count": 20} if given else {}
    entries = [{"thread_id": thread.id, "message": _message(i), **extra} for i in range(count + CHUNK)]
    rates = _Rates()
    cpu_start = 0.0
    for start in range(0, len(entries), CHUNK):
        if start == CHUNK:
            cpu_start = time.process_time()
        began = time.perf_counter()
        for entry in entries[start : start + CHUNK]:
            result = await memory.add_entry(entry)
            if not result.success:
                raise RuntimeError(result.error)
        if start:
            rates.chunk(CHUNK, time.perf_counter() - began)
    rates.cpu = time.process_time() - cpu_start
    rates.count = count
    return rates


def _raw_add_rate(path: Path, count: int) -> _Rates:
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
    rates = _Rates()
    cpu_start = 0.0
    for start in range(0, count + CHUNK, CHUNK):
        if start == CHUNK:
            cpu_start = time.process_time()
        began = time.perf_counter()
        for i in range(start, start + CHUNK):
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
        if start:
            rates.chunk(CHUNK, time.perf_counter() - began)
    rates.cpu = time.process_time() - cpu_start
    rates.count = count
    db.close()
    return rates


def _rate_extra(rates: _Rates, baseline: _Rates | None = None) -> dict[str, float]:
    extra = {"best_chunk_per_s": rates.best, "cpu_time_per_s": rates.by_cpu}
    if baseline is not None:
        extra |= {"baseline_best_chunk_per_s": baseline.best, "baseline_cpu_time_per_s": baseline.by_cpu}
    return extra


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
    adds = 3_000 if quick else 10_000
    memory_adds = 3_000 if quick else 9_000
    big = 20_000 if quick else 100_000
    repeat = 200 if quick else 1_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        raw_rates: _Rates | None = None
        sqlite_rates: _Rates | None = None
        for turn in range(2):  # each side twice, in turn; the best of each kept
            raw_turn = _raw_add_rate(folder / f"raw-{turn}.db", adds)
            async with SQLiteAdapter(path=folder / f"adapter-{turn}.db") as sqlite_store:
                adapter_turn = await _add_rate(sqlite_store, adds)
            if raw_rates is None or raw_turn.best > raw_rates.best:
                raw_rates = raw_turn
            if sqlite_rates is None or adapter_turn.best > sqlite_rates.best:
                sqlite_rates = adapter_turn
        assert raw_rates is not None and sqlite_rates is not None
        rows.append(
            Row(
                "add_entry",
                "SQLite file (WAL), entries/s (best chunk)",
                sqlite_rates.best,
                "entries/s",
                raw_rates.best,
                "raw sqlite3, same rows, 1 tx/entry, best chunk",
                sqlite_rates.best / raw_rates.best,
                ">= 6,300/s and >= 40% of raw",
                sqlite_rates.best >= 6_300 and sqlite_rates.best / raw_rates.best >= 0.40,
                _rate_extra(sqlite_rates, raw_rates),
            )
        )
        # The SQLite writes above leave the kernel flushing their pages for a while, beside the
        # in-memory writes below: flushed first (two runs without this: 54k/s; five with it:
        # 65-87k/s; the loop alone in a process: 87-93k/s).
        os.sync()
        time.sleep(1.0)
        # The best of 8 runs of each kind, the two kinds in turn: this machine has slow spells of
        # a few seconds (the same loop 40% slower), which took out every run of one kind when
        # each kind's runs came one after the other (given: 53-58k/s in three harness runs, the
        # same code alone 88-96k/s).
        bests: dict[bool, _Rates] = {}
        for _ in range(8):
            for given in (True, False):
                # The default store, below its cap (max_entries), so that no eviction is measured.
                assert memory_adds + CHUNK < DEFAULT_MAX_ENTRIES
                async with InMemoryAdapter() as memory_store:
                    turn_rates = await _add_rate(memory_store, memory_adds, given=given)
                if given not in bests or turn_rates.best > bests[given].best:
                    bests[given] = turn_rates
        for given, target in ((True, 76_000), (False, 96_000)):
            best = bests[given]
            rows.append(
                Row(
                    "add_entry",
                    f"InMemory, token_count {'given' if given else 'counted'}, entries/s (best chunk)",
                    best.best,
                    "entries/s",
                    None,
                    None,
                    None,
                    f">= {target:,}/s",
                    best.best >= target,
                    _rate_extra(best),
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
