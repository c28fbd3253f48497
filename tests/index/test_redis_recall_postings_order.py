"""Redis's postings carry each record's write sequence (``"<count> <length> <scope> <seq>"``), by
which a keyword search past the postings budget reads the records indexed last. Postings written
before the sequence was kept have three fields: they are still scored, and count as indexed
before any other until their record is written again.

Each test runs under a key prefix of its own, deleted afterwards. Servers come from
``COGMEM_TEST_REDIS_URL`` and ``COGMEM_TEST_REDIS_CLUSTER_NODES``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import RedisAdapter
from cogitator_memory.result import unwrap
from cogitator_memory.testing import service_url

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["standalone", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if request.param == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        memory = RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    else:
        memory = RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


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


async def _as_old_posting(store: RedisAdapter, source: str) -> None:
    """Rewrite the ``zebra`` posting of a record as an older version wrote it: without its seq."""
    key = f"{store.key_prefix}recall:term:zebra"
    value = await store.client.hget(key, f"turn:{source}")
    count, length, scope, _seq = value.split(" ")
    await store.client.hset(key, f"turn:{source}", f"{count} {length} {scope}")


async def _zebra(store: RedisAdapter, limit: int, **flt: Any) -> list[tuple[str, float]]:
    found = unwrap(await store.recall_keyword("zebra", filter=flt or None, limit=limit))
    return [(c.record.source_id, c.score) for c in found]


async def test_postings_hold_the_write_sequence(store: RedisAdapter) -> None:
    unwrap(await store.index_recall_records([_rec(0), _rec(1)]))
    unwrap(await store.index_recall_records([_rec(0)]))
    postings = await store.client.hgetall(f"{store.key_prefix}recall:term:zebra")
    assert {k: v.split(" ")[3] for k, v in postings.items()} == {"turn:z00": "3", "turn:z01": "2"}
    assert (await store.client.hget(f"{store.key_prefix}recall:stats", "seq")) == "3"


async def test_an_old_posting_is_scored_and_counts_as_indexed_first(store: RedisAdapter) -> None:
    for start in range(0, 30, 10):  # three writes, z00 indexed first
        unwrap(await store.index_recall_records([_rec(n) for n in range(start, start + 10)]))
    before = await _zebra(store, 60)
    await _as_old_posting(store, "z25")

    # every posting read: the old one is scored as before
    assert await _zebra(store, 60) == before
    assert len(before) == 30 and "z25" in {s for s, _ in before}

    store.postings_budget = 20  # past it, the 20 postings indexed last are read first
    top = [s for s, _ in await _zebra(store, 5, user_id="ana")]
    assert top == ["z09", "z10", "z11", "z12", "z13"], "z25 (seq 0) is older than z09 (seq 10)"

    # written again, it has a seq: the newest
    unwrap(await store.index_recall_records([_rec(25)]))
    top = [s for s, _ in await _zebra(store, 5, user_id="ana")]
    assert top == ["z10", "z11", "z12", "z13", "z14"]


async def test_old_postings_past_the_budget_are_still_scored(store: RedisAdapter) -> None:
    unwrap(await store.index_recall_records([_rec(n) for n in range(30)]))
    for n in range(20):
        await _as_old_posting(store, f"z{n:02d}")
    store.postings_budget = 20
    # read: the 10 with a seq, then 10 of the 20 old ones (all seq 0: ties by id); every posting
    # read would give z00..z19 instead
    found = await _zebra(store, 20, user_id="ana")
    assert [s for s, _ in found] == [f"z{n:02d}" for n in [*range(10), *range(20, 30)]]
    assert len({score for _, score in found}) == 1
