"""The recall-index conformance suite on MongoDBAdapter (``COGMEM_TEST_MONGODB_URL``), in the
adapter's default mode and again with transactions forced on, plus what is MongoDB's own: the
collections and their indexes, the documents' fields, the stats kept by every write, and
batches that fail part way without transactions.

Every test gets a database of its own, dropped after.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter, retry_pause, server_has_transactions
from cogitator_memory.engines.mongodb.recall import RECALL_INDEXES, STATS_ID, bm25_pipeline
from cogitator_memory.errors import StoreUnavailableError
from cogitator_memory.index.records import RecallFilter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.recall_index import RecallIndexConformanceCase, recall_index_conformance_cases

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def make_adapter(**options: Any) -> MongoDBAdapter:
    """An adapter on the test server with a database of its own."""
    options.setdefault("database", f"cogmem_recall_{uuid.uuid4().hex[:12]}")
    # mongoeco answers nothing, heartbeats included, while it stores a batch (the 2,000-record
    # case): pymongo must not drop the server meanwhile.
    options.setdefault("connect_timeout", 60.0)
    options.setdefault("socket_timeout", 300.0)
    return MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), **options)


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


@pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
async def test_recall_index_conformance(case: RecallIndexConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)


# --- MongoDB's own ------------------------------------------------------------------------


def _rec(source: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "turn", "source_id": source, "text": text, "said_at": T0, "agent_id": "agent", **fields}


async def _stats(store: MongoDBAdapter) -> tuple[int, int]:
    doc = await store.recall_meta_collection.find_one({"_id": STATS_ID})
    assert doc is not None
    return int(doc["records"]), int(doc["total"])


def test_a_transaction_retried_thousands_of_times_waits_at_most_50ms() -> None:
    # mongoeco fails a transaction's commit when any other write landed meanwhile, in any
    # database: with other tests writing, a batch was retried 1,024 times and the pause overflowed.
    assert all(0 <= retry_pause(n) <= 0.05 for n in (0, 1, 5, 1024, 100_000))


def test_recall_index_is_a_capability() -> None:
    assert "recall-index" in MongoDBAdapter.capabilities


async def test_the_collections_documents_and_indexes(store: MongoDBAdapter) -> None:
    assert store.recall_collection.name == f"{store.collection_prefix}recall_records"
    found = {ix["name"]: list(ix["key"].items()) async for ix in await store.recall_collection.list_indexes()}
    for name, keys in RECALL_INDEXES:
        assert found.get(name) == keys, (name, found.get(name))
    far = datetime(9000, 1, 1, tzinfo=UTC) + timedelta(microseconds=7)
    unwrap(await store.index_recall_records([_rec("e1", "paint painted walls", user_id="ana", time_start=far)]))
    doc = await store.recall_collection.find_one({"_id": "turn:e1"})
    assert doc is not None
    assert (doc["kind"], doc["source_id"], doc["agent_id"], doc["user_id"], doc["thread_id"]) == (
        "turn",
        "e1",
        "agent",
        "ana",
        None,
    ), "the scope fields, None for a shared one"
    assert doc["said_us"] == to_micros(T0) and doc["time_start_us"] == to_micros(far), "exact integer microseconds"
    assert doc["len"] == 3, "paint, paint, wall: no roots (stems of five letters or fewer)"
    assert sorted((p["t"], p["f"]) for p in doc["post"]) == [("paint", 2), ("wall", 1)], "one posting per term"
    [got] = unwrap(await store.get_recall_records(["turn:e1"]))
    assert got.time_start == far and got.terms == ["paint", "wall"] and got.term_counts == [2, 1]


async def test_stats_follow_every_write(store: MongoDBAdapter) -> None:
    assert await _stats(store) == (0, 0)
    unwrap(await store.index_recall_records([_rec("a", "one two three"), _rec("b", "four")]))
    assert await _stats(store) == (2, 4)
    unwrap(await store.index_recall_records([_rec("a", "one")]))
    assert await _stats(store) == (2, 2), "a replaced record takes its old length away"
    unwrap(await store.delete_recall_records(["turn:b", "turn:nope"]))
    assert await _stats(store) == (1, 1)
    unwrap(await store.index_recall_records([_rec("c", "five six", thread_id="t9")]))
    assert unwrap(await store.delete_recall_scope(thread_id="t9")) == 1
    assert await _stats(store) == (1, 1)


def test_a_keyword_search_is_one_bounded_aggregation_over_the_terms_index() -> None:
    pipeline = bm25_pipeline([("paint", 1.5), ("~paint", 0.5)], 4.0, RecallFilter(user_id="ana"), 7)
    first = pipeline[0]["$match"]
    assert first["post.t"] == {"$in": ["paint", "~paint"]}, "only the postings of the query's terms"
    assert first["user_id"] == {"$in": [None, "ana"]}, "scope filtered by the server"
    assert pipeline[-1] == {"$limit": 7} and pipeline[-2] == {"$sort": {"score": -1, "_id": 1}}


async def test_scope_delete_goes_in_chunks(store: MongoDBAdapter, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogitator_memory.engines.mongodb import recall

    monkeypatch.setattr(recall, "SCOPE_CHUNK", 3)
    unwrap(await store.index_recall_records([_rec(f"e{i}", "chunked words", user_id="ana") for i in range(8)]))
    unwrap(await store.index_recall_records([_rec("bob", "chunked words", user_id="bob")]))
    assert unwrap(await store.delete_recall_scope(user_id="ana")) == 8
    assert [c.record.source_id for c in unwrap(await store.recall_keyword("chunked"))] == ["bob"]
    assert await _stats(store) == (1, 2)


class _FailingStats:
    """The meta collection, except that moving the stats fails (a server lost mid-batch)."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    async def update_one(self, *args: Any, **kwargs: Any) -> Any:
        from pymongo.errors import AutoReconnect

        raise AutoReconnect("lost while moving the stats")


@pytest.mark.parametrize("transactions", [False, True])
async def test_a_batch_that_fails_part_way_leaves_nothing(transactions: bool) -> None:
    store = make_adapter(transactions=transactions)
    async with store:
        try:
            unwrap(await store.index_recall_records([_rec("a", "lisbon river"), _rec("b", "keep me")]))
            meta = store.recall_meta_collection
            store._recall_meta_col = _FailingStats(meta)  # type: ignore[assignment]
            put = await store.index_recall_records([_rec("a", "porto bridge"), _rec("new", "porto tower")])
            deleted = await store.delete_recall_records(["turn:b"])
            store._recall_meta_col = meta
            assert put.error_type is StoreUnavailableError and deleted.error_type is StoreUnavailableError
            got = unwrap(await store.get_recall_records(["turn:a", "turn:b", "turn:new"]))
            assert [(r.source_id, r.text) for r in got] == [("a", "lisbon river"), ("b", "keep me")]
            assert [c.record.source_id for c in unwrap(await store.recall_keyword("lisbon"))] == ["a"]
            assert unwrap(await store.recall_keyword("porto")) == [], "the failed put's terms are not found"
            assert await _stats(store) == (2, 4)
        finally:
            await store.client.drop_database(store.database)
