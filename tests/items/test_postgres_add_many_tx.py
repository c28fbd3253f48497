"""``MemoryItems.add_many`` on PostgreSQL writes a batch in one transaction (``PostgresItems._write_plan``):
the slots' changes, the new items and their recall-index records together, so a batch that fails
part way leaves every stored item as it was (same version, same record) and adds nothing; when
only the records fail, the items are written and the failure is logged, as on every store; and
batches of two processes racing over the same slots leave them laid out, each item's record at
its status."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import quote_ident
from cogitator_memory.errors import ConflictError
from cogitator_memory.items import MemoryItem, MemoryItems, rules
from cogitator_memory.items.records import NewMemoryItem
from cogitator_memory.testing import postgres_database

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
SCOPE = {"agent_id": "concierge", "user_id": "ana"}


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_addmany") as url:
        yield url


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresAdapter]:
    schema = f"cogmem_am_{secrets.token_hex(6)}"
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=3, dimensions=8) as memory:
        yield memory


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


class TakenIds(MemoryItems):
    """Gives the new item of ``value`` the id ``taken`` (stored already), the others their own."""

    def __init__(self, taken: str, value: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.taken, self.value = taken, value

    def _new_item(self, new: NewMemoryItem, recorded: datetime, shadow: bool) -> MemoryItem:
        item = super()._new_item(new, recorded, shadow)
        return item.model_copy(update={"id": self.taken}) if new.value == self.value else item


def _fact(attribute: str, value: str) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "Ana",
        "attribute": attribute,
        "value": value,
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "evidence": [{"entry_id": f"entry_{attribute}", "quote": value}],
        "scope": SCOPE,
    }


async def _records(store: PostgresAdapter) -> dict[str, str]:
    """Every recall record of the store, by id: its stored row as text."""

    async def op(conn: Any) -> dict[str, str]:
        cur = await conn.execute(f"SELECT id, r::text FROM {quote_ident(store.schema)}.recall_records r")
        return {str(row[0]): str(row[1]) for row in await cur.fetchall()}

    return await store.run(op)


async def _items(store: PostgresAdapter) -> dict[str, MemoryItem]:
    return {i.id: i for i in unwrap(await store.query_items({"scope": SCOPE}))}


async def test_a_batch_failing_on_a_taken_id_leaves_everything_as_it_was(store: PostgresAdapter) -> None:
    clock = Clock()
    items = MemoryItems(adapter=store, clock=clock)
    stored = await items.add_many([_fact("city", "Lisbon"), _fact("employer", "Acme")])
    before, records_before = await _items(store), await _records(store)
    assert len(before) == 2 and len(records_before) == 2

    # the batch supersedes the city (an update of the stored state) and adds two new states,
    # the second of which takes the id of the stored employer: the insert fails
    writer = TakenIds(stored[1].id, "Braga", adapter=store, clock=clock)
    with pytest.raises(ConflictError, match=stored[1].id):
        await writer.add_many([_fact("city", "Porto"), _fact("team", "Braga")])

    after = await _items(store)
    assert after == before  # the city's state closed and set back would have moved its version
    assert [i.version for i in after.values()] == [1, 1]
    assert await _records(store) == records_before


async def test_items_are_written_when_only_their_records_fail(
    store: PostgresAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    async def drop_df(conn: Any) -> None:
        await conn.execute(f"DROP TABLE {quote_ident(store.schema)}.recall_df")

    await store.run(drop_df)  # every write of the index fails from now on
    items = MemoryItems(adapter=store, clock=Clock())
    with caplog.at_level(logging.WARNING, logger="cogitator_memory"):
        written = await items.add_many([_fact("city", "Lisbon"), _fact("employer", "Acme")])

    assert sorted(await _items(store)) == sorted(i.id for i in written)
    assert await _records(store) == {}
    assert any("2 items written but not indexed" in r.getMessage() for r in caplog.records)


async def test_racing_batches_over_the_same_slots_converge_with_their_records(pg_url: str) -> None:
    schema = f"cogmem_am_{secrets.token_hex(6)}"
    stores = [PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=3, dimensions=8) for _ in range(2)]
    for one in stores:
        unwrap(await one.connect())
    try:
        first = stores[0]
        attributes = [f"slot {n}" for n in range(30)]
        await MemoryItems(adapter=first).add_many([_fact(a, "Lisbon") for a in attributes])
        # two processes (a store and its agent locks each) write every slot at once, three times
        for round_ in range(3):
            await asyncio.gather(
                *(
                    MemoryItems(adapter=one).add_many([_fact(a, f"value {round_} {w}") for a in attributes])
                    for w, one in enumerate(stores)
                )
            )
        stored = list((await _items(first)).values())
        assert len(stored) == 30 * 7
        by_slot: dict[str, list[MemoryItem]] = {}
        for item in stored:
            by_slot.setdefault(item.slot_key, []).append(item)
        now = max(i.recorded_at for i in stored)
        for slot in by_slot.values():
            assert [i.status for i in slot].count("active") == 1
            assert rules.layout_updates(slot, now) == []  # laid out: no writer left it half done
        records = unwrap(await first.get_recall_records([f"item:{i.id}" for i in stored]))
        assert {r.source_id: r.status for r in records} == {i.id: i.status for i in stored}
    finally:
        for one in stores:
            await one.disconnect()
