"""The memory item conformance suite on MongoDBAdapter (``COGMEM_TEST_MONGODB_URL``), in the
adapter's default mode and again with transactions forced on, plus what is MongoDB's own: the
collection and its indexes, the documents' fields, exact times, and batches that fail part way
without transactions.

Every test gets a database of its own, dropped after.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter, server_has_transactions
from cogitator_memory.engines.mongodb.items import ITEM_INDEXES, item_filter, item_index
from cogitator_memory.errors import ConflictError
from cogitator_memory.items.records import check_filter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.items import ItemConformanceCase, memory_item_adapter_conformance_cases

EMULATOR_COUNTS = (
    "mongoeco's transactions lose writes made beside them: an update_many ($inc) that lands while a "
    "transaction on the same document commits is undone by the commit (measured: 30 counts gave 24)"
)


def make_adapter(**options: Any) -> MongoDBAdapter:
    """An adapter on the test server with a database of its own."""
    options.setdefault("database", f"cogmem_items_{uuid.uuid4().hex[:12]}")
    # mongoeco answers nothing, heartbeats included, while it stores a batch (it scans the
    # collection for each document), and pymongo drops a server whose heartbeat goes unanswered
    # for connect_timeout: the 1,200-item case needs more than the 5 s of the thread tests.
    options.setdefault("connect_timeout", 60.0)
    options.setdefault("socket_timeout", 300.0)
    return MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), **options)


async def is_emulator(store: MongoDBAdapter) -> bool:
    """Whether the test server is the mongoeco emulator rather than a real MongoDB."""
    hello = await store.client.admin.command("hello")
    return hello.get("gitVersion") == "mongoeco"


@pytest.fixture(params=["default", "transactions"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[MongoDBAdapter]:
    """A store in its default mode (transactions when the server runs them), or with transactions
    forced on (not on a real standalone mongod, which refuses them)."""
    memory = make_adapter(transactions=True) if request.param == "transactions" else make_adapter()
    async with memory:
        try:
            if request.param == "transactions":
                hello = await memory.client.admin.command("hello")
                if not server_has_transactions(hello) and hello.get("gitVersion") != "mongoeco":
                    pytest.skip("a standalone mongod runs no multi-document transactions")
            yield memory
        finally:
            await memory.client.drop_database(memory.database)


@pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
async def test_item_conformance(case: ItemConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)


# --- MongoDB's own ------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _item(n: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"mem_m{n:05d}",
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": f"value {n}",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": "agent", "user_id": "ana"},
        "recorded_at": T0 + timedelta(seconds=n),
    }
    base.update(fields)
    return base


async def _ids(store: MongoDBAdapter, **flt: Any) -> list[str]:
    return [item.id for item in unwrap(await store.query_items(flt))]


def test_items_are_a_capability() -> None:
    assert "items" in MongoDBAdapter.capabilities


def test_each_query_names_the_index_it_reads() -> None:
    scope = {"agent_id": "agent", "user_id": "ana", "thread_id": "t1"}
    cases = [
        ({"visible_to": scope}, "scope_recorded"),
        ({"visible_to": scope, "slot": {"subject": "Ana", "attribute": "city"}, "limit": 3}, "scope_slot_status"),
        ({"scope": scope, "subject": "Ana"}, "scope_subject"),
        ({"within": {"agent_id": "agent", "user_id": "ana"}, "slot": {"subject": "Ana"}}, "agent_limits"),
        ({"visible_to": scope, "entry_ids": ["e1"]}, "entries"),
    ]
    names = {name for name, _ in ITEM_INDEXES}
    for flt, index in cases:
        assert item_index(check_filter(flt)) == index, flt
        assert index in names
    visible = item_filter(check_filter({"visible_to": scope, "as_of": T0}))
    keys = visible["$and"][0]["scope_key"]["$in"]
    assert len(keys) == 4 and all(k.startswith("agent\x1f") for k in keys), "the four scopes a thread of Ana sees"
    within = item_filter(check_filter({"within": {"agent_id": "agent", "thread_id": "t1"}}))
    assert within == {"agent_id": "agent", "thread_id": "t1"}, "within: the agent and the limits set, nothing else"


async def test_the_collection_and_its_indexes(store: MongoDBAdapter) -> None:
    assert store.items_collection.name == f"{store.collection_prefix}items"
    found = {ix["name"]: list(ix["key"].items()) async for ix in await store.items_collection.list_indexes()}
    for name, keys in ITEM_INDEXES:
        assert found.get(name) == keys, (name, found.get(name))
    unwrap(
        await store.add_items(
            [
                _item(
                    1,
                    evidence=[{"entry_id": "e2", "quote": "a"}, {"entry_id": "e1", "quote": "b"}],
                    metadata={"a.b": 1, "$c": {"d": None}},
                    last_retrieved_at=T0 + timedelta(microseconds=7),
                    times_retrieved=3,
                )
            ]
        )
    )
    doc = await store.items_collection.find_one({"_id": "mem_m00001"})
    assert doc is not None
    assert doc["scope_key"] == "agent\x1fana\x1f\x1f" and doc["slot_key"] == "s:ana\x1fcity"
    assert (doc["agent_id"], doc["user_id"], doc["project_id"], doc["thread_id"]) == ("agent", "ana", None, None)
    assert doc["entry_ids"] == ["e1", "e2"], "the quoted entries, once each, for the multikey index"
    assert doc["recorded_us"] == to_micros(T0 + timedelta(seconds=1)) == doc["start_us"]
    assert (doc["times_retrieved"], doc["last_retrieved_us"], doc["version"]) == (3, to_micros(T0) + 7, 1)
    assert doc["valid_to_us"] is None and doc["expired_us"] is None
    body = json.loads(doc["body"])
    assert "times_retrieved" not in body and "version" not in body and body["metadata"] == {"a.b": 1, "$c": {"d": None}}
    got = unwrap(await store.get_items(["mem_m00001"]))[0]
    assert got.metadata == {"a.b": 1, "$c": {"d": None}}, "keys with dots and dollars are data"
    assert got.last_retrieved_at == T0 + timedelta(microseconds=7)


async def test_times_compare_exactly_to_the_microsecond_far_from_now(store: MongoDBAdapter) -> None:
    # BSON dates keep milliseconds and doubles lose microseconds past 2^53 of them: the store
    # compares integer microseconds.
    far = datetime(9000, 1, 1, tzinfo=UTC)
    scope = {"agent_id": "agent"}
    items = [_item(n, scope=scope, recorded_at=far + timedelta(microseconds=n)) for n in range(1, 6)]
    items.append(_item(9, scope=scope, valid_from=far + timedelta(microseconds=3), recorded_at=T0))
    unwrap(await store.add_items(items))
    recorded = [i["id"] for i in items[:5]]
    assert await _ids(store, scope=scope, recorded_after=far + timedelta(microseconds=2)) == recorded[2:]
    assert await _ids(store, scope=scope, known_at=far + timedelta(microseconds=2)) == [items[5]["id"], *recorded[:2]]
    assert await _ids(store, scope=scope, as_of=far + timedelta(microseconds=2)) == recorded[:2]
    assert await _ids(store, scope=scope, as_of=far + timedelta(microseconds=3)) == [items[5]["id"], *recorded[:3]]
    assert await _ids(store, scope=scope, limit=2) == recorded[3:]
    got = unwrap(await store.get_items([recorded[4]]))[0]
    assert got.recorded_at == far + timedelta(microseconds=5)


class _Interfering:
    """The items collection, except that before a ``bulk_write`` (the batch's writes, sent in one
    round trip) ``then`` runs: another writer acting after the batch read its items."""

    def __init__(self, collection: Any, then: Callable[[], Awaitable[None]]) -> None:
        self._collection, self._then, self.calls = collection, then, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    async def bulk_write(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            await self._then()
        return await self._collection.bulk_write(*args, **kwargs)


async def test_a_batch_that_fails_part_way_is_undone_without_transactions() -> None:
    store = make_adapter(transactions=False)
    async with store:
        try:
            a, b, c = _item(1, metadata={"k": 1}), _item(2), _item(3)
            unwrap(await store.add_items([a, b, c]))
            unwrap(await store.count_retrieved([a["id"]], T0))
            collection = store.items_collection

            async def meanwhile() -> None:  # b moves on, and a is counted, between the batch's read and write
                await collection.update_one({"_id": b["id"]}, {"$inc": {"version": 1}})
                await collection.update_many({"_id": a["id"]}, {"$inc": {"times_retrieved": 1}})

            interfering = _Interfering(collection, meanwhile)
            store._items_col = interfering  # type: ignore[assignment]
            updates = [
                {
                    "id": i["id"],
                    "expected_version": 1,
                    "status": "stale",
                    "evidence": [{"entry_id": "e9", "quote": "q"}],
                }
                for i in (a, b, c)
            ]
            failed = await store.update_items(updates)
            store._items_col = collection
            assert failed.error_type is ConflictError and b["id"] in (failed.error or ""), failed.error
            assert interfering.calls == 1, "the batch's writes go in one round trip"
            back = unwrap(await store.get_items([a["id"], b["id"], c["id"]]))
            assert [(i.status, i.version) for i in back] == [("active", 1), ("active", 2), ("active", 1)]
            assert back[0].metadata == {"k": 1} and back[0].evidence == []
            assert back[0].times_retrieved == 2, "a count made during the batch stays"
            assert await _ids(store, within={"agent_id": "agent"}, entry_ids=["e9"]) == [], "the entry index too"
        finally:
            await store.client.drop_database(store.database)


async def test_a_racing_add_of_the_same_id_is_a_named_conflict(store: MongoDBAdapter) -> None:
    results = await asyncio.gather(*(store.add_items([_item(n), _item(99)]) for n in range(1, 6)))
    assert sum(r.success for r in results) == 1, [r.error for r in results]
    for r in results:
        if not r.success:
            assert r.error_type is ConflictError and "mem_m00099" in (r.error or ""), r.error
    assert len(await _ids(store, within={"agent_id": "agent"})) == 2, "the losers' other items were taken back"


async def test_counts_race_updates_without_loss(store: MongoDBAdapter) -> None:
    if store.uses_transactions and await is_emulator(store):
        pytest.xfail(EMULATOR_COUNTS)
    item = _item(1)
    unwrap(await store.add_items([item]))

    async def update_loop() -> int:
        done = 0
        for _ in range(10):
            current = unwrap(await store.get_items([item["id"]]))[0]
            result = await store.update_items(
                [{"id": item["id"], "expected_version": current.version, "confidence": 0.5}]
            )
            done += result.success
        return done

    counts = [store.count_retrieved([item["id"]], T0 + timedelta(seconds=n)) for n in range(30)]
    results = await asyncio.gather(update_loop(), *counts)
    got = unwrap(await store.get_items([item["id"]]))[0]
    assert got.times_retrieved == 30 and got.last_retrieved_at == T0 + timedelta(seconds=29)
    assert got.version == 1 + results[0]


async def test_random_writes_agree_with_the_reference(store: MongoDBAdapter) -> None:
    # Random adds, updates (status, times, evidence), deletes and counts on MongoDB and on the
    # in-memory reference; afterwards every kind of query answers the same on both.
    rng = random.Random(1313)
    users, entries = ["ana", "bo", None], [f"e{n}" for n in range(8)]
    reference = InMemoryAdapter()
    await reference.connect()
    live: list[str] = []

    def evidence() -> list[dict[str, str]]:
        return [{"entry_id": e, "quote": "q"} for e in rng.sample(entries, rng.randint(0, 2))]

    async def both(call: str, *args: Any) -> Any:
        ours, theirs = await getattr(store, call)(*args), await getattr(reference, call)(*args)
        assert (ours.success, ours.data) == (theirs.success, theirs.data), (call, args, ours.error, theirs.error)
        return ours.data

    for step in range(150):
        roll = rng.random()
        if roll < 0.45 or not live:
            scope = {"agent_id": rng.choice(["agent", "other"]), "user_id": rng.choice(users)}
            if rng.random() < 0.3:
                scope["thread_id"] = rng.choice(["t1", "t2"])
            batch = [
                _item(
                    step * 10 + k,
                    scope=scope,
                    attribute=rng.choice(["city", "diet", None]),
                    subject=rng.choice(["Ana", "Bo"]),
                    evidence=evidence(),
                    status=rng.choice(["active", "suggested", "superseded"]),
                    valid_from=T0 + timedelta(seconds=rng.randint(-50, 3000)) if rng.random() < 0.5 else None,
                )
                for k in range(rng.randint(1, 3))
            ]
            await both("add_items", batch)
            live += [b["id"] for b in batch]
        elif roll < 0.75:
            picked = rng.sample(live, min(len(live), rng.randint(1, 3)))
            current = {i.id: i for i in unwrap(await store.get_items(picked))}
            changes: list[dict[str, Any]] = []
            for item_id in picked:
                change: dict[str, Any] = {"id": item_id, "expected_version": current[item_id].version}
                field = rng.choice(["status", "evidence", "valid_to", "expired_at"])
                if field == "status":
                    change["status"] = rng.choice(["active", "stale", "superseded"])
                elif field == "evidence":
                    change["evidence"] = evidence()
                else:
                    change[field] = T0 + timedelta(seconds=rng.randint(0, 9000)) if rng.random() < 0.7 else None
                changes.append(change)
            await both("update_items", changes)
        elif roll < 0.9:
            gone = rng.sample(live, min(len(live), rng.randint(1, 2)))
            await both("delete_items", [*gone, "mem_never"])
            live = [i for i in live if i not in gone]
        else:
            await both("count_retrieved", rng.sample(live, min(len(live), 2)), T0 + timedelta(seconds=step))
    at = T0 + timedelta(seconds=1500)
    for agent in ("agent", "other"):
        for user in users:
            scope = {"agent_id": agent, "user_id": user, "thread_id": "t1"}
            for flt in (
                {"visible_to": scope},
                {"scope": {"agent_id": agent, "user_id": user}},
                {"within": {"agent_id": agent, "user_id": user} if user else {"agent_id": agent}},
                {"within": {"agent_id": agent, "thread_id": "t2"}, "subject": "ana"},
                {"visible_to": scope, "slot": {"subject": "ANA", "attribute": "city"}, "limit": 2},
                {"within": {"agent_id": agent}, "entry_ids": ["e1", "e2"], "statuses": ["active", "stale"]},
                {"visible_to": scope, "as_of": at, "known_at": at + timedelta(seconds=2000)},
                {"within": {"agent_id": agent}, "recorded_after": at, "kinds": ["fact"], "limit": 3},
            ):
                await both("query_items", flt)
    await both("get_items", [*live, "mem_never"])


def test_docs_example_runs(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "mongodb.md").read_text()
    example = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "MemoryItems" in b)
    database = f"cogmem_items_docs_{uuid.uuid4().hex[:8]}"
    example = example.replace(
        "mongodb://127.0.0.1:27019/?directConnection=true", service_url("COGMEM_TEST_MONGODB_URL")
    )
    assert '"docs_items"' in example
    example = example.replace('"docs_items"', repr(database))
    script = tmp_path / "example.py"
    script.write_text(example)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.splitlines() == ["Ana city Porto active", "Ana city Lisbon superseded", "1"], out
