"""MongoDB's record documents carry each record's write sequence ``wseq`` (from the ``wseq``
counter document of ``<prefix>recall_meta``), by which a keyword search past the postings budget
reads the records indexed last. Documents written before the sequence was kept have no ``wseq``:
they are still found, and count as indexed before any other (a missing field sorts last in the
search's descending sort) until their record is written again.

Server from ``COGMEM_TEST_MONGODB_URL``; every test gets a database of its own, dropped after.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.engines.mongodb.recall import WSEQ_ID, bm25_pipeline
from cogitator_memory.index.records import RecallFilter
from cogitator_memory.testing import service_url

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store() -> AsyncIterator[MongoDBAdapter]:
    memory = MongoDBAdapter(
        uri=service_url("COGMEM_TEST_MONGODB_URL"),
        database=f"cogmem_order_{uuid.uuid4().hex[:12]}",
        connect_timeout=60.0,
        socket_timeout=300.0,
    )
    async with memory:
        try:
            yield memory
        finally:
            await memory.client.drop_database(memory.database)


def _rec(n: int, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "turn",
        "source_id": f"z{n:02d}",
        "text": f"zebra number{n}",
        "user_id": "ana",
        "said_at": T0 + timedelta(minutes=n),
    }
    out.update(fields)
    return out


async def _wseqs(store: MongoDBAdapter) -> dict[str, int | None]:
    docs = await store.recall_collection.find({}, {"wseq": 1}).to_list()
    return {str(d["_id"]).removeprefix("turn:"): d.get("wseq") for d in docs}


async def _as_old_document(store: MongoDBAdapter, source: str, how: str) -> None:
    """Make a record's document as an older version wrote it: without ``wseq``."""
    collection = store.recall_collection
    if how == "unset":
        await collection.update_one({"_id": f"turn:{source}"}, {"$unset": {"wseq": ""}})
    else:  # a raw insert of the same document (the stats are left as they are)
        doc = await collection.find_one({"_id": f"turn:{source}"})
        assert doc is not None
        del doc["wseq"]
        await collection.delete_one({"_id": doc["_id"]})
        await collection.insert_one(doc)
    assert (await _wseqs(store))[source] is None


async def _zebra(store: MongoDBAdapter, limit: int) -> list[str]:
    found = unwrap(await store.recall_keyword("zebra", filter={"user_id": "ana"}, limit=limit))
    return [c.record.source_id for c in found]


async def test_documents_hold_the_write_sequence(store: MongoDBAdapter) -> None:
    unwrap(await store.index_recall_records([_rec(0), _rec(1), _rec(2)]))
    unwrap(await store.index_recall_records([_rec(0)]))
    assert await _wseqs(store) == {"z00": 4, "z01": 2, "z02": 3}, "in list order; written again: a new one"
    counter = await store.recall_meta_collection.find_one({"_id": WSEQ_ID})
    assert counter is not None and counter["value"] == 4


@pytest.mark.parametrize("how", ["unset", "raw insert"])
async def test_a_document_without_the_sequence_is_found_and_counts_as_oldest(store: MongoDBAdapter, how: str) -> None:
    unwrap(await store.index_recall_records([_rec(n) for n in range(5)]))  # wseq 1..5
    await _as_old_document(store, "z04", how)  # indexed last, but now as if by an older version

    # the server's sort: a missing wseq sorts after every number in a descending sort
    pipeline = bm25_pipeline([("zebra", 1.0)], 2.0, RecallFilter(user_id="ana"), 10, newest=4)
    cursor = await store.recall_collection.aggregate(pipeline)
    assert sorted(str(d["_id"]) for d in await cursor.to_list()) == [f"turn:z{n:02d}" for n in range(4)]

    store.postings_budget = 2  # past it, the 2 records indexed last are read first
    assert await _zebra(store, 2) == ["z02", "z03"], "z04 (no wseq) is older than z00 (wseq 1)"
    # fewer than limit among those: every posting is read, the old document with them
    assert await _zebra(store, 5) == ["z00", "z01", "z02", "z03", "z04"]

    # written again, it has a wseq: the newest
    unwrap(await store.index_recall_records([_rec(4)]))
    assert (await _wseqs(store))["z04"] == 6
    assert await _zebra(store, 2) == ["z03", "z04"]
