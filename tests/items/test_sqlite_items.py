"""SQLite specifics of memory items: the migration, persistence, several connections, indexed queries."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.engines.sqlite.schema import MIGRATIONS, applied_migrations, migrate
from cogitator_memory.errors import ConflictError
from cogitator_memory.items.records import MemoryScope

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _item(n: int, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": f"mem_{n:06d}",
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": f"v{n}",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": "a", "user_id": "ana"},
        "recorded_at": T0 + timedelta(seconds=n),
    }
    item.update(fields)
    return item


async def test_an_older_file_gains_the_item_tables_and_keeps_its_threads(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:3])  # the schema before items
    db.execute("INSERT INTO threads (id, agent_id, metadata, created_at, updated_at) VALUES ('t1', 'a', '{}', 1, 1)")
    assert "memory_items" not in {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    async with SQLiteAdapter(path=path) as memory:
        names = [name for _, name in applied_migrations(memory.connection)]
        assert names[:4] == ["m001_initial", "m002_embeddings", "m003_keyword_index", "m004_memory_items"]
        assert unwrap(await memory.get_thread("t1")) is not None
        unwrap(await memory.add_items([_item(1)]))
        assert [i.id for i in unwrap(await memory.get_items(["mem_000001"]))] == ["mem_000001"]


async def test_items_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    async with SQLiteAdapter(path=path) as memory:
        unwrap(await memory.add_items([_item(1, evidence=[{"entry_id": "e1", "quote": "q"}])]))
        unwrap(await memory.count_retrieved(["mem_000001"], T0))
    async with SQLiteAdapter(path=path) as memory:
        (item,) = unwrap(await memory.get_items(["mem_000001"]))
        assert (item.value, item.times_retrieved, item.last_retrieved_at) == ("v1", 1, T0)
        found = unwrap(await memory.query_items({"within": {"agent_id": "a"}, "entry_ids": ["e1"]}))
        assert [i.id for i in found] == ["mem_000001"]


async def test_two_connections_to_one_file_keep_versions_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with SQLiteAdapter(path=path) as one, SQLiteAdapter(path=path) as two:
        unwrap(await one.add_items([_item(1)]))
        unwrap(await two.update_items([{"id": "mem_000001", "expected_version": 1, "status": "superseded"}]))
        late = await one.update_items([{"id": "mem_000001", "expected_version": 1, "status": "stale"}])
        assert not late.success and late.error_type is ConflictError
        counts = await asyncio.gather(*(s.count_retrieved(["mem_000001"], T0) for s in (one, two) for _ in range(10)))
        assert all(c.success for c in counts)
        (item,) = unwrap(await one.get_items(["mem_000001"]))
        assert (item.status, item.version, item.times_retrieved) == ("superseded", 2, 20)
        taken = await two.add_items([_item(2), _item(1)])
        assert not taken.success and taken.error_type is ConflictError and "mem_000001" in (taken.error or "")
        assert unwrap(await one.get_items(["mem_000002"])) == []


async def test_the_queries_the_store_makes_read_by_index(tmp_path: Path) -> None:
    async with SQLiteAdapter(path=tmp_path / "plan.db") as memory:
        batch = [
            _item(
                n,
                scope={"agent_id": "a", "user_id": f"u{n % 5}"},
                attribute=f"a{n % 40}",
                evidence=[{"entry_id": f"e{n}", "quote": "q"}],
            )
            for n in range(2_000)
        ]
        unwrap(await memory.add_items(batch))
        db = memory.connection
        statements: list[str] = []
        db.set_trace_callback(statements.append)
        scope = MemoryScope(agent_id="a", user_id="u1")
        filters: list[dict[str, Any]] = [
            {"visible_to": scope},
            {"visible_to": scope, "statuses": ["active", "superseded"], "as_of": T0},
            {"scope": scope, "slot": {"subject": "Ana", "attribute": "a3"}},
            {"scope": scope, "subject": "Ana"},
            {"within": {"agent_id": "a"}, "entry_ids": ["e7"]},
            {"within": {"agent_id": "a", "user_id": "u1"}},
            {"visible_to": scope, "limit": 5},
        ]
        for flt in filters:
            unwrap(await memory.query_items(flt))
        db.set_trace_callback(None)
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) == len(filters)
        for sql in selects:
            plan = " | ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "USING" in plan and "SCAN memory_items" not in plan, f"{sql}: {plan}"
        slot_plan = " ".join(str(r[-1]) for r in db.execute(f"EXPLAIN QUERY PLAN {selects[2]}"))
        assert "memory_items_by_slot" in slot_plan, "a slot is read through its index, not the whole scope"
