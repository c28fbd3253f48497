"""``MemoryItems.add_many`` writes a batch in one ``update_items`` and one ``add_items`` call and
ends where the same items added one by one end: on random batches (a seeded generator), on the
in-memory store and on SQLite."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.errors import ConflictError, StoreUnavailableError
from cogitator_memory.items import MemoryItem, MemoryItems, rules
from cogitator_memory.items.batching import new_item
from cogitator_memory.items.records import check_new_item, scope_key
from cogitator_memory.result import MemoryResult, err

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPES = [
    {"agent_id": "concierge", "user_id": "ana"},
    {"agent_id": "concierge", "user_id": "bo"},
    {"agent_id": "concierge", "user_id": "ana", "thread_id": "t1"},
    {"agent_id": "planner", "user_id": "ana"},
]
SLOTS: list[tuple[str, str | None]] = [("Ana", "city"), ("Ana", "employer"), ("Ana", None), ("trip", "budget")]
VALUES = ["Lisbon", "Porto", "Braga", " Lisbon ", "lisbon"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


class Counting:
    """Passes item calls to a store, counting them and failing those numbered in ``fail``."""

    def __init__(self, inner: Any, fail: dict[str, set[int]] | None = None) -> None:
        self.inner = inner
        self.fail = fail or {}
        self.calls: dict[str, int] = {}

    @property
    def provider(self) -> str:
        return "counting"

    def _failed(self, name: str) -> MemoryResult[Any] | None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] in self.fail.get(name, set()):
            return err(StoreUnavailableError(f"{name} failed on purpose"))
        return None

    async def add_items(self, items: Sequence[Any]) -> MemoryResult[list[MemoryItem]]:
        failed = self._failed("add_items")
        return failed if failed is not None else await self.inner.add_items(items)

    async def get_items(self, ids: Sequence[str]) -> MemoryResult[list[MemoryItem]]:
        failed = self._failed("get_items")
        return failed if failed is not None else await self.inner.get_items(ids)

    async def query_items(self, filter: Any) -> MemoryResult[list[MemoryItem]]:
        failed = self._failed("query_items")
        return failed if failed is not None else await self.inner.query_items(filter)

    async def update_items(self, updates: Sequence[Any]) -> MemoryResult[list[MemoryItem]]:
        failed = self._failed("update_items")
        return failed if failed is not None else await self.inner.update_items(updates)

    async def delete_items(self, ids: Sequence[str]) -> MemoryResult[int]:
        failed = self._failed("delete_items")
        return failed if failed is not None else await self.inner.delete_items(ids)


def _random_item(rng: random.Random, scopes: Sequence[dict[str, str]]) -> dict[str, Any]:
    subject, attribute = rng.choice(SLOTS)
    value = rng.choice(VALUES)
    trust = rng.choice(["system", "user", "user", "tool", "model", "web"])
    verified = rng.random() < 0.6
    item: dict[str, Any] = {
        "kind": rng.choice(["fact", "fact", "opinion", "preference", "event"]),
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "trust": trust,
        "verified": verified,
        "confidence": round(rng.uniform(0.3, 1.0), 2),
        "scope": rng.choice(scopes),
        "evidence": (
            [{"entry_id": f"entry_{rng.randint(0, 5)}", "thread_id": "t1", "quote": value.strip()}]
            if verified or rng.random() < 0.5
            else []
        ),
    }
    if rng.random() < 0.35:
        item["valid_from"] = T0 + timedelta(days=rng.randint(-30, 3), hours=rng.randint(0, 23))
    if rng.random() < 0.15:
        start = item.get("valid_from") or T0
        item["valid_to"] = start + timedelta(days=rng.randint(1, 20))
    if rng.random() < 0.1:
        item["related_entity_ids"] = [f"ent_{rng.randint(0, 2)}"]
    return item


async def add_as_before(svc: MemoryItems, item: dict[str, Any], shadow: bool) -> MemoryItem:
    """One item written as ``MemoryItems.add`` wrote it before batches (the reference): its
    slot read, the merge or the new state (and the opinions it contradicts), then the slot laid
    out again, each call on its own."""
    new = check_new_item("item", item)
    state = svc._agent(new.scope.agent_id)
    recorded = svc._tick(state)
    slotted = new.slot.attribute is not None
    query = {"scope": new.scope, "slot": new.slot}
    existing = unwrap(await svc.adapter.query_items(query))
    target = rules.merge_target(existing, new, recorded, slotted=slotted)
    if target is not None:
        update = rules.merge_update(target, new, activation_confidence=svc.activation_confidence, shadow=shadow)
        if update is not None:
            unwrap(await svc.adapter.update_items([update]))
        written_id = target.id
    else:
        losses = rules.contradicted_opinions(existing, new, recorded) if slotted else []
        if losses:
            unwrap(await svc.adapter.update_items(losses))
        written = new_item(new, recorded, shadow=shadow, activation_confidence=svc.activation_confidence)
        unwrap(await svc.adapter.add_items([written]))
        written_id = written.id
    now = svc._now_for(new.scope.agent_id)
    while updates := rules.layout_updates(unwrap(await svc.adapter.query_items(query)), now, slotted=slotted):
        unwrap(await svc.adapter.update_items(updates))
    return unwrap(await svc.adapter.get_items([written_id]))[0]


async def _everything(store: Any) -> list[MemoryItem]:
    found: list[MemoryItem] = []
    for agent in sorted({s["agent_id"] for s in SCOPES}):
        found.extend(unwrap(await store.query_items({"within": {"agent_id": agent}})))
    return found


def _canonical(items: Sequence[MemoryItem]) -> dict[tuple[str, datetime], dict[str, Any]]:
    """The items by (agent, record time), which the two runs share (their ids are random; one
    agent records each write at least a millisecond after the one before)."""
    out: dict[tuple[str, datetime], dict[str, Any]] = {}
    for item in items:
        key = (item.scope.agent_id, item.recorded_at)
        assert key not in out
        out[key] = item.model_dump(exclude={"id", "version"})
    return out


def _key(item: MemoryItem) -> tuple[str, datetime]:
    return (item.scope.agent_id, item.recorded_at)


@pytest.fixture(params=["memory", "sqlite"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _store(engine: str, path: Path) -> Any:
    return InMemoryAdapter() if engine == "memory" else SQLiteAdapter(path=path)


@pytest.mark.parametrize("seed", range(12))
async def test_add_many_ends_where_adds_one_by_one_end(engine: str, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    rounds = 10 if engine == "memory" else 4
    for round_no in range(rounds):
        scopes = SCOPES if rng.random() < 0.5 else SCOPES[:1]
        history = [_random_item(rng, scopes) for _ in range(rng.randint(0, 8))]
        batch = [_random_item(rng, scopes) for _ in range(rng.randint(1, 25))]
        shadow = rng.random() < 0.2
        clock = Clock()
        async with (
            _store(engine, tmp_path / f"batch-{round_no}.db") as batched_store,
            _store(engine, tmp_path / f"single-{round_no}.db") as single_store,
            _store(engine, tmp_path / f"before-{round_no}.db") as reference_store,
        ):
            counting = Counting(batched_store)
            batched = MemoryItems(adapter=counting, clock=clock)
            single = MemoryItems(adapter=single_store, clock=clock)
            reference = MemoryItems(adapter=reference_store, clock=clock)
            for item in history:  # the same past in every store, added one by one
                await batched.add(item)
                await single.add(item)
                await add_as_before(reference, item, False)
            clock.at = T0 + timedelta(hours=rng.randint(0, 48))
            before = dict(counting.calls)
            written = await batched.add_many(batch, shadow=shadow)
            one_by_one = [await single.add(item, shadow=shadow) for item in batch]
            as_before = [await add_as_before(reference, item, shadow) for item in batch]

            calls = {name: n - before.get(name, 0) for name, n in counting.calls.items()}
            assert calls.get("add_items", 0) <= 1 and calls.get("update_items", 0) <= 1, calls
            scopes_touched = len({scope_key(unwrap(await batched_store.get_items([w.id]))[0].scope) for w in written})
            assert calls["query_items"] == 2 * scopes_touched, "each scope read once before and once after"

            stored = await _everything(batched_store)
            expected = await _everything(single_store)
            assert _canonical(stored) == _canonical(expected), (seed, round_no)
            assert _canonical(stored) == _canonical(await _everything(reference_store)), (seed, round_no)
            assert [_key(w) for w in written] == [_key(o) for o in one_by_one], "each item lands where it would"
            assert [_key(w) for w in written] == [_key(o) for o in as_before]
            by_id = {item.id: item for item in stored}
            assert all(w == by_id[w.id] for w in written), "add_many returns the items as stored"
            versions = {_key(i): i.version for i in expected}
            assert all(1 <= i.version <= versions[_key(i)] for i in stored), "one step per item and batch"


async def test_a_batch_is_one_read_one_update_and_one_insert_per_scope(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        counting = Counting(store)
        svc = MemoryItems(adapter=counting, clock=clock)
        scope = SCOPES[0]
        old = [
            {"kind": "fact", "subject": "Ana", "attribute": f"a{n}", "value": "old", "trust": "system", "scope": scope}
            for n in range(600)
        ]
        await svc.add_many(old)
        counting.calls.clear()
        clock.at = T0 + timedelta(days=1)
        written = await svc.add_many([{**item, "value": "new"} for item in old])
        assert counting.calls == {"query_items": 4, "update_items": 1, "add_items": 1}, "600 slots: 2 reads of 500"
        assert {(w.value, w.status) for w in written} == {("new", "active")}
        history = unwrap(
            await store.query_items(
                {"scope": scope, "slot": {"subject": "Ana", "attribute": "a7"}, "statuses": ["superseded"]}
            )
        )
        assert [(i.value, i.valid_to) for i in history] == [("old", written[7].recorded_at)]


async def test_a_batch_whose_insert_fails_changes_nothing(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        scope = SCOPES[0]
        first = await svc.add_many(
            [
                {
                    "kind": "fact",
                    "subject": "Ana",
                    "attribute": "city",
                    "value": "Lisbon",
                    "trust": "system",
                    "scope": scope,
                },
                {
                    "kind": "opinion",
                    "subject": "Ana",
                    "attribute": "mood",
                    "value": "calm",
                    "trust": "system",
                    "scope": scope,
                },
            ]
        )
        before = await _everything(store)
        flaky = MemoryItems(adapter=Counting(store, fail={"add_items": {1}}), clock=clock)
        clock.at = T0 + timedelta(days=1)
        batch = [
            {"kind": "fact", "subject": "Ana", "attribute": "city", "value": "Porto", "trust": "system"},
            {"kind": "opinion", "subject": "Ana", "attribute": "mood", "value": "tense", "trust": "model"},
        ]
        with pytest.raises(StoreUnavailableError):
            await flaky.add_many([{**i, "scope": scope} for i in batch])
        after = await _everything(store)
        assert [i.model_dump(exclude={"version"}) for i in after] == [i.model_dump(exclude={"version"}) for i in before]
        assert {i.id for i in after} == {i.id for i in first}, "the closes and losses were set back, nothing added"


async def test_a_batch_that_keeps_conflicting_gives_up(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        svc = MemoryItems(adapter=store, clock=clock)
        item = {"kind": "fact", "subject": "Ana", "attribute": "city", "trust": "system", "scope": SCOPES[0]}
        await svc.add({**item, "value": "Lisbon"})

        class Moving(Counting):
            async def update_items(self, updates: Sequence[Any]) -> MemoryResult[list[MemoryItem]]:
                # another writer changes the item between every read and this write
                for update in updates:
                    current = unwrap(await self.inner.get_items([update.id]))[0]
                    unwrap(await self.inner.update_items([{"id": current.id, "expected_version": current.version}]))
                return await self.inner.update_items(updates)

        racing = MemoryItems(adapter=Moving(store), clock=clock)
        clock.at = T0 + timedelta(days=1)
        with pytest.raises(ConflictError, match="kept changing under this write"):
            await racing.add_many([{**item, "value": "Porto"}])
        assert [i.value for i in await _everything(store)] == ["Lisbon"], "nothing of the batch was written"


async def test_writers_with_other_record_times_agree_on_what_ended(engine: str, tmp_path: Path) -> None:
    clock = Clock()
    async with _store(engine, tmp_path / "items.db") as store:
        item = {"kind": "fact", "subject": "Ana", "attribute": "city", "trust": "system", "scope": SCOPES[0]}
        first = MemoryItems(adapter=Counting(store), clock=clock)  # as in one process
        lisbon = await first.add({**item, "value": "Lisbon"})  # recorded at T0
        await first.add({**item, "value": "Porto"})  # at T0 + 1 ms: Lisbon ended then
        other = MemoryItems(adapter=Counting(store), clock=clock)  # another process: its record is at T0
        await other.add({**item, "value": "Braga", "valid_from": T0 - timedelta(days=30)})
        states = {i.value: i for i in unwrap(await store.query_items({"scope": SCOPES[0]}))}
        assert (states["Lisbon"].status, states["Lisbon"].valid_to) == ("superseded", T0 + timedelta(milliseconds=1))
        assert states["Lisbon"].version == lisbon.version + 1, "the other writer left Lisbon as it was"
        assert (states["Braga"].status, states["Braga"].valid_to) == ("superseded", T0)
        assert (states["Porto"].status, states["Porto"].valid_to) == ("active", None)
