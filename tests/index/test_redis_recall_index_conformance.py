"""The recall-index conformance suite on RedisAdapter, on the standalone server and on the cluster,
plus what is Redis's own: ties at a channel's cut, ids ordered as Python orders them, exact times
past 2^53 microseconds, every index kept in step with the in-memory reference through random
writes, and nothing left in Redis once every record is deleted.

Each test runs under a key prefix of its own, deleted afterwards. Servers come from
``COGMEM_TEST_REDIS_URL`` and ``COGMEM_TEST_REDIS_CLUSTER_NODES``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, RedisAdapter
from cogitator_memory.errors import StoreUnavailableError
from cogitator_memory.result import unwrap
from cogitator_memory.testing import service_url
from cogitator_memory.testing.recall_index import RecallIndexConformanceCase, recall_index_conformance_cases


def make_adapter(topology: str) -> RedisAdapter:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if topology == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        return RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    return RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)


@pytest.fixture(params=["standalone", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    memory = make_adapter(str(request.param))
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
async def test_recall_index_conformance(case: RecallIndexConformanceCase, store: RedisAdapter) -> None:
    await case.run(store)


# --- Redis's own ----------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _rec(source: str, text: str = "tulip garden", *, minutes: int = 0, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "turn",
        "source_id": source,
        "text": text,
        "said_at": T0 + timedelta(minutes=minutes),
    }
    out.update(fields)
    return out


async def _recall_keys(store: RedisAdapter) -> list[str]:
    return [key async for key in store.client.scan_iter(match=f"{store.key_prefix}recall:*", count=1000)]


def test_recall_index_is_a_capability() -> None:
    assert "recall-index" in RedisAdapter.capabilities


async def test_ties_at_the_cut_are_kept_by_id_in_both_channels(store: RedisAdapter) -> None:
    # Equal said_at (and equal BM25 scores): a sorted set walks them in reverse id order, so the
    # walk must read the whole tie group at the cut; the records are split between ana's set and
    # the no-user set, which a search for ana merges.
    names = ["e", "b", "d", "a", "c", "f"]
    unwrap(
        await store.index_recall_records(
            [_rec(n, user_id="ana" if i % 2 else None, minutes=5) for i, n in enumerate(names)]
            + [_rec("older", minutes=1, user_id="ana")]
        )
    )
    end = T0 + timedelta(minutes=10)
    for flt in (None, {"user_id": "ana"}):
        found = unwrap(await store.recall_time(T0, end, filter=flt, limit=2))
        assert [c.record.source_id for c in found] == ["a", "b"], flt
        found = unwrap(await store.recall_time(T0, end, filter=flt, limit=7))
        assert [c.record.source_id for c in found] == ["a", "b", "c", "d", "e", "f", "older"], flt
        hits = unwrap(await store.recall_keyword("tulip", filter=flt, limit=3))
        assert [c.record.source_id for c in hits] == ["a", "b", "c"], flt


async def test_ids_tie_in_pythons_order_whatever_the_servers_locale(store: RedisAdapter) -> None:
    names = ["é", "B", "a", "Z", "ä", "ab", "a b"]
    unwrap(await store.index_recall_records([_rec(n) for n in names]))
    expected = sorted(names, key=lambda n: f"turn:{n}")
    hits = unwrap(await store.recall_keyword("tulip", limit=10))
    assert [c.record.source_id for c in hits] == expected
    found = unwrap(await store.recall_time(T0, T0 + timedelta(minutes=1), limit=10))
    assert [c.record.source_id for c in found] == expected


async def test_times_beyond_double_precision_compare_exactly(store: RedisAdapter) -> None:
    # Microseconds in year 9000 are ~2.2e17: doubles there are 32 us apart, so neighbouring
    # instants share a sorted-set score; the script must still tell them apart.
    far = datetime(9000, 1, 1, tzinfo=UTC)
    records = [_rec(f"s{n}", said_at=far + timedelta(microseconds=n)) for n in range(1, 6)]
    records.append(_rec("moment", said_at=T0, time_start=far + timedelta(microseconds=3)))
    records.append(
        _rec("span", said_at=T0, time_start=far - timedelta(days=1), time_end=far + timedelta(microseconds=2))
    )
    unwrap(await store.index_recall_records(records))

    async def between(lo: int, hi: int) -> list[str]:
        start, end = far + timedelta(microseconds=lo), far + timedelta(microseconds=hi)
        return [c.record.source_id for c in unwrap(await store.recall_time(start, end, limit=10))]

    assert await between(2, 4) == ["s3", "s2", "moment"]
    assert await between(4, 5) == ["s4"]
    assert await between(2, 3) == ["s2"]
    assert await between(3, 4) == ["s3", "moment"]
    assert await between(1, 2) == ["s1", "span"]
    [got] = unwrap(await store.get_recall_records(["turn:s5"]))
    assert got.said_at == far + timedelta(microseconds=5)


async def test_random_writes_keep_every_index_in_step(store: RedisAdapter) -> None:
    # Random puts (replacing records across users, threads, statuses and named times), deletes by
    # id and by scope on Redis and on the in-memory reference; after each round every channel
    # answers the same on both (so postings, said_at sets and stats were kept by every write).
    rng = random.Random(3232)
    words = ["paint", "garden", "lisbon", "porto", "peanut", "allergic", "tulip", "diary", "zebra", "hello"]
    users, threads, agents = ["ana", "bo", None], ["t1", "t2", None], ["agent", "other", None]
    reference = InMemoryAdapter()
    await reference.connect()

    async def both(call: str, *args: Any, **kwargs: Any) -> Any:
        ours = await getattr(store, call)(*args, **kwargs)
        theirs = await getattr(reference, call)(*args, **kwargs)
        assert ours.success and theirs.success, (call, ours.error, theirs.error)
        return ours.data, theirs.data

    def record() -> dict[str, Any]:
        fields: dict[str, Any] = {
            "kind": rng.choice(["turn", "item", "core_fact"]),
            "user_id": rng.choice(users),
            "thread_id": rng.choice(threads),
            "agent_id": rng.choice(agents),
            "status": rng.choice(["active", "active", "superseded", "stale"]),
        }
        if rng.random() < 0.3:
            fields["time_start"] = T0 + timedelta(minutes=rng.randint(0, 300))
            if rng.random() < 0.5:
                fields["time_end"] = fields["time_start"] + timedelta(minutes=rng.randint(1, 120))
        text = " ".join(rng.choices(words, k=rng.randint(1, 8)))
        return _rec(f"s{rng.randint(0, 80)}", text, minutes=rng.randint(0, 300), **fields)

    for _round in range(12):
        for _ in range(rng.randint(1, 4)):
            batch = {r["source_id"] + r["kind"]: r for r in (record() for _ in range(rng.randint(1, 25)))}
            await both("index_recall_records", list(batch.values()))
        ours, theirs = await both("delete_recall_records", [f"turn:s{rng.randint(0, 80)}" for _ in range(3)])
        assert ours == theirs
        if rng.random() < 0.3:
            key = rng.choice(["user_id", "thread_id"])
            ours, theirs = await both("delete_recall_scope", **{key: rng.choice(["ana", "bo", "t1", "t2"])})
            assert ours == theirs
        for flt in (
            None,
            {"user_id": "ana"},
            {"user_id": "bo", "agent_id": "agent", "thread_id": "t2"},
            {"thread_id": "t1", "kinds": ["item", "core_fact"]},
            {"agent_id": "other", "statuses": ["stale", "superseded"]},
        ):
            for query in ("paint garden", "allergic zebra hello", "lisbon"):
                ours, theirs = await both("recall_keyword", query, filter=flt, limit=7)
                assert [c.record for c in ours] == [c.record for c in theirs], (query, flt)
                assert [c.score for c in ours] == pytest.approx([c.score for c in theirs]), (query, flt)
            start = T0 + timedelta(minutes=rng.randint(0, 200))
            ours, theirs = await both("recall_time", start, start + timedelta(minutes=60), filter=flt, limit=6)
            assert ours == theirs, flt
            ours, theirs = await both("count_recall_records", filter=flt)
            assert ours == theirs, flt


async def test_deleting_every_record_leaves_no_index_behind(store: RedisAdapter) -> None:
    unwrap(
        await store.index_recall_records(
            [
                _rec("a", "I live in Lisbon", user_id="ana", thread_id="t1", time_start=T0),
                _rec("b", "painted the kitchen", user_id="bo", time_start=T0, time_end=T0 + timedelta(days=1)),
                _rec("c", "peanut allergy", thread_id="t2", kind="item"),
            ]
        )
    )
    unwrap(await store.index_recall_records([_rec("a", "I moved to Porto", user_id="ana", thread_id="t3")]))
    assert unwrap(await store.delete_recall_scope(user_id="ana")) == 1
    assert unwrap(await store.delete_recall_scope(thread_id="t2")) == 1
    assert unwrap(await store.delete_recall_records(["turn:b"])) == 1
    left = await _recall_keys(store)
    assert left == [f"{store.key_prefix}recall:stats"]
    stats = await store.client.hgetall(left[0])
    assert (stats["n"], stats["len"]) == ("0", "0")  # and no scope (with a user's id) left behind


async def test_a_server_error_is_a_store_error_naming_the_call(store: RedisAdapter) -> None:
    # A key of another type where a term's postings should be: Redis answers WRONGTYPE in the script.
    unwrap(await store.index_recall_records([_rec("a", "tulip garden")]))
    await store.client.set(f"{store.key_prefix}recall:term:tulip", "not a hash")
    for result, call in (
        (await store.recall_keyword("tulip"), "recall_keyword"),
        (await store.delete_recall_records(["turn:a"]), "delete_recall_records"),
    ):
        assert result.error_type is StoreUnavailableError, (call, result.error)
        assert f"redis {call} failed" in (result.error or "") and "WRONGTYPE" in (result.error or "")
