"""How ``MemoryItems.add_many`` writes a batch into a store that keeps items itself (every
built-in one): the items it built are written in one ``update_items`` and one ``add_items`` step
without being checked again, with the recall-index records of the whole batch in one write, and
the slots read back as ids and versions only unless another writer changed them."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.errors import ConflictError
from cogitator_memory.items import MemoryItem, MemoryItems, NewMemoryItem
from cogitator_memory.items.records import ItemUpdate

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPE = {"agent_id": "concierge", "user_id": "ana"}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


def _fact(attribute: str, value: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "Ana",
        "attribute": attribute,
        "value": value,
        "trust": "system",
        "scope": SCOPE,
        **extra,
    }


def _store(engine: str, path: Path) -> Any:
    return InMemoryAdapter() if engine == "memory" else SQLiteAdapter(path=path)


@pytest.fixture(params=["memory", "sqlite"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _everything(store: Any) -> list[MemoryItem]:
    return sorted(
        unwrap(
            await store.query_items(
                {"within": {"agent_id": "concierge"}, "statuses": ["suggested", "active", "superseded", "stale"]}
            )
        ),
        key=lambda i: (i.recorded_at, i.id),
    )


@pytest.mark.parametrize("seed", range(6))
async def test_a_batch_returns_its_items_as_stored(engine: str, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        for round_no in range(4):
            batch = [
                _fact(
                    rng.choice(["city", "employer", "mood"]),
                    rng.choice(["Lisbon", "Porto", " Lisbon ", "Braga"]),
                    trust=rng.choice(["system", "user", "model"]),
                    kind=rng.choice(["fact", "opinion"]),
                    valid_from=T0 - timedelta(days=rng.randint(0, 40)) if rng.random() < 0.3 else None,
                )
                for _ in range(rng.randint(1, 20))
            ]
            clock.at = T0 + timedelta(hours=round_no * 7)
            written = await svc.add_many(batch)
            stored = {item.id: item for item in await _everything(store)}
            assert all(item == stored[item.id] for item in written), (seed, round_no)
            assert all(item.version >= 1 for item in stored.values())


async def test_a_new_item_is_stored_at_version_one_whatever_the_batch_did_to_it(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        # Lisbon is closed by Porto within the same batch: it changed in memory before it was stored
        lisbon, porto = await svc.add_many([_fact("city", "Lisbon"), _fact("city", "Porto")])
        assert (lisbon.status, lisbon.version, porto.status, porto.version) == ("superseded", 1, "active", 1)
        assert lisbon.valid_to == porto.recorded_at


class _FixedIds(MemoryItems):
    """Items whose new state takes an id chosen in advance (as a fact's first state does)."""

    def __init__(self, adapter: Any, clock: Clock, first_id: str) -> None:
        super().__init__(adapter=adapter, clock=clock)
        self.first_id = first_id

    def _new_item(self, new: NewMemoryItem, recorded: datetime, shadow: bool) -> MemoryItem:
        return super()._new_item(new, recorded, shadow).model_copy(update={"id": self.first_id})


async def test_a_batch_whose_new_id_is_taken_sets_its_changes_back(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        lisbon = await svc.add(_fact("city", "Lisbon"))
        taken = await svc.add(_fact("employer", "ACME"))
        before = await _everything(store)
        clock.at = T0 + timedelta(days=1)
        with pytest.raises(ConflictError, match="taken"):
            # Porto would close Lisbon; its id is taken, so nothing of the batch stays
            await _FixedIds(store, clock, taken.id).add_many([_fact("city", "Porto")])
        after = await _everything(store)
        assert [i.model_dump(exclude={"version"}) for i in after] == [i.model_dump(exclude={"version"}) for i in before]
        assert next(i for i in after if i.id == lisbon.id).status == "active"


class _Racing(SQLiteAdapter):
    """A SQLite store on which another writer changes the first item of each batch right after
    the batch is written (before its slots are read back)."""

    async def _write_plan(
        self, updates: list[ItemUpdate], adds: list[MemoryItem], undo: Any
    ) -> list[MemoryItem] | None:
        written = await super()._write_plan(updates, adds, undo)
        if written:
            first = written[0]
            unwrap(await self.update_items([{"id": first.id, "expected_version": first.version, "confidence": 0.5}]))
        return written


async def test_a_slot_another_writer_changed_is_read_back_whole(tmp_path: Path) -> None:
    clock = Clock()
    async with _Racing(path=tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        written = await svc.add(_fact("city", "Lisbon"))
        stored = unwrap(await store.get_items([written.id]))[0]
        assert (written.confidence, written.version) == (0.5, 2), "the other writer's change is what is returned"
        assert written == stored


async def test_a_batch_is_three_sqlite_writes_with_one_for_its_recall_records(tmp_path: Path) -> None:
    clock = Clock()
    async with SQLiteAdapter(path=tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        await svc.add_many([_fact(f"a{n}", "old") for n in range(500)])
        clock.at = T0 + timedelta(days=1)
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        try:
            written = await svc.add_many([_fact(f"a{n}", "new") for n in range(500)])
        finally:
            store.connection.set_trace_callback(None)
        begins = [s for s in statements if s.startswith("BEGIN")]
        assert len(begins) == 3, "the closes, the new items and the recall records of all 1,000"
        assert sum(s.startswith("INSERT INTO recall_records") for s in statements) == 1000
        full_reads = [s for s in statements if s.startswith("SELECT rid, body") and "slot_key IN" in s]
        assert len(full_reads) == 1, "the slots are read whole once, before the write; after it as versions"
        records = unwrap(await store.get_recall_records([f"item:{w.id}" for w in written]))
        assert [r.status for r in records] == ["active"] * 500
        db = sqlite3.connect(tmp_path / "items.db")
        try:
            counts = dict(db.execute("SELECT status, count(*) FROM recall_records GROUP BY status").fetchall())
        finally:
            db.close()
        assert counts == {"active": 500, "superseded": 500}
