"""MemoryItems: every write rule, on the in-memory store and on SQLite."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.errors import ConflictError, InvalidArgumentError, StoreUnavailableError
from cogitator_memory.items import MemoryItem, MemoryItems, rules, without_entries
from cogitator_memory.items.base import MemoryItemAdapter
from cogitator_memory.result import MemoryResult, err

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ANA = {"agent_id": "concierge", "user_id": "ana"}
CITY = ("Ana", "city")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, at: datetime = T0) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> datetime:
        self.at += timedelta(**delta)
        return self.at


class Relay:
    """Passes item calls to a store, yielding to the event loop first (so writers interleave as
    they would across processes) and failing the calls numbered in ``fail`` (1-based, per method)."""

    def __init__(self, inner: Any, *, fail: dict[str, set[int]] | None = None, yields: int = 0) -> None:
        self.inner = inner
        self.fail = fail or {}
        self.calls: dict[str, int] = {}
        self.yields = yields
        self.conflicts = 0

    @property
    def provider(self) -> str:
        return "relay"

    async def _step(self, name: str) -> MemoryResult[Any] | None:
        for _ in range(random.randint(0, self.yields)):
            await asyncio.sleep(0)
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] in self.fail.get(name, set()):
            return err(StoreUnavailableError(f"{name} failed on purpose"))
        return None

    async def add_items(self, items: Sequence[Any]) -> MemoryResult[list[MemoryItem]]:
        failed = await self._step("add_items")
        return failed if failed is not None else await self.inner.add_items(items)

    async def get_items(self, ids: Sequence[str]) -> MemoryResult[list[MemoryItem]]:
        failed = await self._step("get_items")
        return failed if failed is not None else await self.inner.get_items(ids)

    async def query_items(self, filter: Any) -> MemoryResult[list[MemoryItem]]:
        failed = await self._step("query_items")
        return failed if failed is not None else await self.inner.query_items(filter)

    async def update_items(self, updates: Sequence[Any]) -> MemoryResult[list[MemoryItem]]:
        failed = await self._step("update_items")
        result = failed if failed is not None else await self.inner.update_items(updates)
        if not result.success and result.error_type is ConflictError:
            self.conflicts += 1
        return result

    async def delete_items(self, ids: Sequence[str]) -> MemoryResult[int]:
        failed = await self._step("delete_items")
        return failed if failed is not None else await self.inner.delete_items(ids)


class CountingRelay(Relay):
    async def count_retrieved(self, ids: Sequence[str], at: datetime | None = None) -> MemoryResult[int]:
        failed = await self._step("count_retrieved")
        return failed if failed is not None else await self.inner.count_retrieved(ids, at)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    adapter = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=tmp_path / "items.db")
    async with adapter:
        yield adapter


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def items(store: Any, clock: Clock) -> MemoryItems:
    return MemoryItems(adapter=store, clock=clock)


def said(
    value: str, *, trust: str = "user", verified: bool = True, slot: tuple[str, str | None] = CITY, **fields: Any
) -> dict[str, Any]:
    """A new item; verified ones quote an entry named after the value."""
    item: dict[str, Any] = {
        "kind": "fact",
        "subject": slot[0],
        "attribute": slot[1],
        "value": value,
        "trust": trust,
        "verified": verified,
        "scope": ANA,
        "evidence": [{"entry_id": f"entry_{value.strip().lower()}", "thread_id": "t1", "quote": value.strip()}],
        "confidence": 0.9,
    }
    item.update(fields)
    return item


def layout(items: Sequence[MemoryItem]) -> list[tuple[str, str, datetime | None]]:
    return [(i.value, i.status, i.valid_to) for i in sorted(items, key=rules.layout_order)]


# --- activation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"trust": "system", "verified": False, "evidence": [], "confidence": 0.1}, "active"),
        ({"trust": "user", "verified": True, "confidence": 0.7}, "active"),
        ({"trust": "user", "verified": True, "confidence": 0.69}, "suggested"),
        ({"trust": "user", "verified": False}, "suggested"),
        ({"trust": "model", "verified": True}, "suggested"),
        ({"trust": "tool", "verified": True, "confidence": 1.0}, "suggested"),
        ({"trust": "web", "verified": True, "confidence": 1.0}, "suggested"),
    ],
)
async def test_only_system_or_a_user_with_holding_quotes_activates(
    items: MemoryItems, fields: dict[str, Any], status: str
) -> None:
    item = await items.add(said("Lisbon", **fields))
    assert item.status == status
    assert item.id.startswith("mem_") and item.recorded_at == T0


async def test_activation_confidence_and_shadow(store: Any, clock: Clock) -> None:
    strict = MemoryItems(adapter=store, clock=clock, activation_confidence=0.95)
    assert (await strict.add(said("Lisbon", confidence=0.9))).status == "suggested"
    loose = MemoryItems(adapter=store, clock=clock, activation_confidence=0.5)
    assert (await loose.add(said("Porto", confidence=0.6, slot=("Ana", "diet")))).status == "active"
    shadowed = await loose.add(said("Faro", trust="system", slot=("Ana", "home")), shadow=True)
    assert shadowed.status == "suggested", "shadow writes every new item as suggested"


# --- merging --------------------------------------------------------------------------------


async def test_the_same_value_merges_into_the_open_item(items: MemoryItems, clock: Clock) -> None:
    first = await items.add(said("Lisbon"))
    clock.advance(hours=1)
    again = await items.add(said("  Lisbon ", evidence=[{"entry_id": "entry_2", "quote": "Lisbon"}]))
    assert again.id == first.id, "spacing aside, the value is the same"
    assert again.recorded_at == first.recorded_at
    assert [e.entry_id for e in again.evidence] == ["entry_lisbon", "entry_2"], "the new quotes are added"
    other_case = await items.add(said("lisbon"))
    assert other_case.id != first.id, "case counts"
    signed = await items.add(said("-5", slot=("Ana", "offset")))
    assert (await items.add(said("5", slot=("Ana", "offset")))).id != signed.id, "signs count"
    assert len(await items.history(ANA, CITY)) == 2


async def test_a_value_another_followed_is_a_new_state(items: MemoryItems, clock: Clock) -> None:
    lisbon = await items.add(said("Lisbon"))
    clock.advance(days=1)
    await items.add(said("Porto"))
    clock.advance(days=1)
    back = await items.add(said("Lisbon"))
    assert back.id != lisbon.id
    history = await items.history(ANA, CITY)
    assert [(i.value, i.status) for i in history] == [
        ("Lisbon", "superseded"),
        ("Porto", "superseded"),
        ("Lisbon", "active"),
    ]
    assert history[0].valid_to == history[1].start and history[1].valid_to == history[2].start


async def test_trust_and_verified_come_from_the_better_source(items: MemoryItems, clock: Clock) -> None:
    model = await items.add(said("Lisbon", trust="model"))
    assert model.status == "suggested"
    merged = await items.add(said("Lisbon", trust="user", verified=False, evidence=[]))
    assert (merged.id, merged.trust, merged.verified, merged.status) == (model.id, "user", False, "suggested")
    confirmed = await items.add(said("Lisbon", trust="user", verified=True))
    assert (confirmed.id, confirmed.trust, confirmed.verified, confirmed.status) == (model.id, "user", True, "active")

    system = await items.add(said("vegan", trust="system", slot=("Ana", "diet"), evidence=[], verified=False))
    restated = await items.add(said("vegan", trust="user", slot=("Ana", "diet")))
    assert (restated.id, restated.trust, restated.verified) == (system.id, "system", False), "system stays system"
    assert [e.entry_id for e in restated.evidence] == ["entry_vegan"], "quotes that hold are kept"

    verified = await items.add(said("tea", slot=("Ana", "drink")))
    claim = await items.add(
        said("tea", trust="model", verified=False, slot=("Ana", "drink"), evidence=[{"quote": "maybe tea"}])
    )
    assert claim.id == verified.id and claim.status == "active", "a merge never demotes"
    assert [e.quote for e in claim.evidence] == ["tea"], "an unverified quote does not sit under a verified item"


async def test_opinions_gain_and_lose_confidence(items: MemoryItems) -> None:
    slot = ("Ana", "view of the hotel")
    opinion = await items.add(said("too noisy", kind="opinion", confidence=0.75, slot=slot))
    assert opinion.status == "active"
    gained = await items.add(said("too noisy", kind="opinion", confidence=0.75, slot=slot))
    assert gained.confidence == pytest.approx(0.85), "said again with holding quotes: +0.1"
    flat = await items.add(said("too noisy", kind="opinion", verified=False, evidence=[], slot=slot))
    assert flat.confidence == pytest.approx(0.85), "said again without holding quotes: unchanged"
    contradiction = await items.add(said("quiet", trust="model", kind="opinion", slot=slot))
    assert contradiction.status == "suggested"
    (held,) = await items.query(ANA, slot=slot)
    assert (held.id, held.confidence) == (opinion.id, pytest.approx(0.65)), "a less trusted contradiction: -0.2"
    peer = await items.add(said("lovely", kind="opinion", slot=slot, confidence=0.8))
    assert peer.status == "active"
    old = (await items.history(ANA, slot))[0]
    assert (old.status, old.confidence) == ("superseded", pytest.approx(0.65)), "an equal source supersedes, no loss"


async def test_repeats_cap_confidence_at_one(items: MemoryItems) -> None:
    slot = ("Ana", "opinion of jazz")
    for _ in range(5):
        last = await items.add(said("great", kind="opinion", confidence=0.95, slot=slot))
    assert last.confidence == 1.0


# --- order of writes ------------------------------------------------------------------------


async def test_one_agents_writes_are_a_millisecond_apart(store: Any, clock: Clock) -> None:
    one = MemoryItems(adapter=store, clock=clock)
    two = MemoryItems(adapter=store, clock=clock)
    written = await asyncio.gather(
        *(svc.add(said(f"v{n}", slot=("Ana", f"a{n}"))) for n, svc in enumerate([one, two] * 5))
    )
    times = sorted(i.recorded_at for i in written)
    assert times == [T0 + timedelta(milliseconds=n) for n in range(10)], (
        "services over one store share the agent's clock"
    )
    other = await one.add(said("x", scope={"agent_id": "other"}))
    assert other.recorded_at == T0, "another agent keeps its own"


# --- layout by time -------------------------------------------------------------------------


async def test_a_new_value_supersedes_and_the_old_one_stays(items: MemoryItems, clock: Clock) -> None:
    lisbon = await items.add(said("Lisbon"))
    porto_at = clock.advance(days=10)
    porto = await items.add(said("Porto"))
    assert [i.value for i in await items.query(ANA)] == ["Porto"]
    assert [i.value for i in await items.query(ANA, as_of=T0 + timedelta(days=1))] == ["Lisbon"]
    assert layout(await items.history(ANA, CITY)) == [("Lisbon", "superseded", porto_at), ("Porto", "active", None)]
    assert (await items.history(ANA, CITY))[0].id == lisbon.id and porto.valid_to is None


async def test_a_state_told_late_takes_its_place(items: MemoryItems, clock: Clock) -> None:
    await items.add(said("Lisbon"))  # starts when recorded: T0
    clock.advance(days=30)
    await items.add(said("Faro", valid_from=T0 - timedelta(days=60)))  # "I lived in Faro since January"
    history = await items.history(ANA, CITY)
    assert layout(history) == [("Faro", "superseded", T0), ("Lisbon", "active", None)]
    assert [i.value for i in await items.query(ANA)] == ["Lisbon"]
    assert [i.value for i in await items.query(ANA, as_of=T0 - timedelta(days=1))] == ["Faro"]


async def test_a_state_set_to_start_later_leaves_the_current_one(items: MemoryItems, clock: Clock) -> None:
    await items.add(said("Lisbon"))
    move = T0 + timedelta(days=10)
    await items.add(said("Porto", valid_from=move))
    assert layout(await items.history(ANA, CITY)) == [("Lisbon", "active", move), ("Porto", "active", None)]
    assert [i.value for i in await items.query(ANA)] == ["Lisbon"]
    assert [i.value for i in await items.query(ANA, as_of=move)] == ["Porto"]
    clock.advance(days=11)
    assert [i.value for i in await items.query(ANA)] == ["Porto"], "read from the times"
    await items.add(said("vegan", slot=("Ana", "diet")))
    await items.add(said("Porto"))  # a repeat: merges, and the slot is laid out again
    assert layout(await items.history(ANA, CITY)) == [("Lisbon", "superseded", move), ("Porto", "active", None)]


async def test_a_state_told_with_its_end(items: MemoryItems, clock: Clock) -> None:
    y2019, y2021 = datetime(2019, 1, 1, tzinfo=UTC), datetime(2021, 1, 1, tzinfo=UTC)
    faro = await items.add(said("Faro", valid_from=y2019, valid_to=y2021))
    assert (faro.status, faro.valid_to, faro.ends_at) == ("superseded", y2021, y2021)
    assert await items.query(ANA) == []
    assert [i.value for i in await items.query(ANA, as_of=datetime(2020, 5, 1, tzinfo=UTC))] == ["Faro"]
    await items.add(said("Lisbon"))
    assert layout(await items.history(ANA, CITY)) == [("Faro", "superseded", y2021), ("Lisbon", "active", None)]


async def test_items_without_an_attribute_do_not_replace_each_other(items: MemoryItems) -> None:
    hiking = await items.add(said("likes hiking", slot=("Ana", None)))
    jazz = await items.add(said("likes jazz", slot=("Ana", None)))
    again = await items.add(said("likes hiking", slot=("Ana", None)))
    assert again.id == hiking.id
    assert {(i.id, i.status, i.valid_to) for i in await items.query(ANA)} == {
        (hiking.id, "active", None),
        (jazz.id, "active", None),
    }


async def test_let_go_keeps_the_state_in_place(items: MemoryItems, clock: Clock) -> None:
    await items.add(said("Lisbon"))
    clock.advance(days=1)
    await items.add(said("Porto"))
    gone_at = clock.advance(days=1)
    ended = await items.let_go(ANA, CITY)
    assert len(ended) == 1
    assert await items.query(ANA) == [], "nothing holds once the value is let go"
    assert layout(await items.history(ANA, CITY)) == [
        ("Lisbon", "superseded", T0 + timedelta(days=1)),
        ("Porto", "superseded", gone_at),
    ], "the state before does not come back"
    assert await items.let_go(ANA, CITY) == [], "letting go again changes nothing"
    clock.advance(days=1)
    await items.add(said("Braga"))
    assert [i.value for i in await items.query(ANA)] == ["Braga"]
    assert layout(await items.history(ANA, CITY))[1] == ("Porto", "superseded", gone_at)


# --- status changes -------------------------------------------------------------------------


async def test_mark_stale_lets_an_item_go_and_the_one_before_holds(items: MemoryItems, clock: Clock) -> None:
    lisbon = await items.add(said("Lisbon"))
    clock.advance(days=1)
    porto = await items.add(said("Porto"))
    at = clock.advance(hours=1)
    because = {"reason": "rewound", "thread_id": "t1", "to_entry_id": "entry_1"}
    assert await items.mark_stale([porto.id, "mem_missing"], because) == [porto.id]
    (stale,) = unwrap(await items.adapter.get_items([porto.id]))
    assert (stale.status, stale.expired_at) == ("stale", at)
    assert stale.stale_because == {**because, "at": at.isoformat()}
    assert [(i.id, i.status, i.valid_to) for i in await items.query(ANA)] == [(lisbon.id, "active", None)]
    assert [i.id for i in await items.query(ANA, statuses=["stale"])] == [porto.id]
    assert await items.mark_stale([porto.id]) == [], "a stale item is not marked again"
    suggested = await items.add(said("Faro", trust="model"))
    assert await items.mark_stale([lisbon.id, suggested.id], "duplicate", only_from=["suggested"]) == [suggested.id]
    assert unwrap(await items.adapter.get_items([lisbon.id]))[0].status == "active", "only_from leaves the rest"
    (dup,) = unwrap(await items.adapter.get_items([suggested.id]))
    assert dup.stale_because["reason"] == "duplicate"


async def test_activate_a_reviewed_item(items: MemoryItems, clock: Clock) -> None:
    await items.add(said("Lisbon"))
    clock.advance(days=1)
    proposal = await items.add(said("Porto", trust="model"))
    assert [i.value for i in await items.query(ANA)] == ["Lisbon"], "a suggestion stays out"
    assert [i.id for i in await items.query(ANA, statuses=["suggested"])] == [proposal.id]
    reviewed_at = clock.advance(days=1)
    assert await items.activate([proposal.id]) == [proposal.id]
    (active,) = unwrap(await items.adapter.get_items([proposal.id]))
    assert (active.status, active.activated_at) == ("active", reviewed_at)
    assert [i.value for i in await items.query(ANA)] == ["Porto"]
    assert layout(await items.history(ANA, CITY))[0][1:] == ("superseded", proposal.start)
    before_review = reviewed_at - timedelta(hours=1)
    assert [i.value for i in await items.query(ANA, known_at=before_review)] == ["Lisbon"]
    assert await items.activate([proposal.id]) == [], "an active item is not activated again"


async def test_revise_evidence_trims_and_purges(items: MemoryItems, clock: Clock) -> None:
    lisbon = await items.add(said("Lisbon"))
    clock.advance(days=1)
    porto = await items.add(
        said(
            "Porto",
            evidence=[{"entry_id": "entry_a", "quote": "Porto"}, {"entry_id": "entry_b", "quote": "Porto"}],
        )
    )
    diet = await items.add(said("vegan", slot=("Ana", "diet")))
    assert await items.revise_evidence([porto.id, diet.id, lisbon.id], without_entries({"entry_a"})) == [porto.id]
    (trimmed,) = unwrap(await items.adapter.get_items([porto.id]))
    assert [e.entry_id for e in trimmed.evidence] == ["entry_b"] and trimmed.verified
    assert await items.revise_evidence([porto.id], without_entries({"entry_b"})) == [porto.id]
    assert unwrap(await items.adapter.get_items([porto.id])) == [], "an item with no quote left is purged"
    assert [(i.id, i.valid_to) for i in await items.query(ANA, slot=CITY)] == [(lisbon.id, None)]
    with pytest.raises(InvalidArgumentError, match="keep"):
        await items.revise_evidence([lisbon.id], "entry_a")  # type: ignore[arg-type]


async def test_note_retrieved_in_one_store_step_or_under_the_lock(store: Any, clock: Clock) -> None:
    for adapter in (CountingRelay(store), Relay(store)):
        svc = MemoryItems(adapter=adapter, clock=clock)
        item = await svc.add(said(f"v-{type(adapter).__name__}", slot=("Ana", type(adapter).__name__)))
        at = clock.advance(minutes=5)
        counts = await asyncio.gather(*(svc.note_retrieved([item.id, "mem_missing"]) for _ in range(5)))
        assert counts == [1] * 5
        (counted,) = unwrap(await store.get_items([item.id]))
        assert (counted.times_retrieved, counted.last_retrieved_at) == (5, at)
        assert await svc.note_retrieved([item.id], at=at - timedelta(days=1)) == 1
        (again,) = unwrap(await store.get_items([item.id]))
        assert again.last_retrieved_at == at, "an earlier time does not move it back"
        used_store_step = "count_retrieved" in adapter.calls
        assert used_store_step == isinstance(adapter, CountingRelay)


# --- bitemporal reads -----------------------------------------------------------------------


async def test_what_memory_knew_then(items: MemoryItems, clock: Clock) -> None:
    await items.add(said("Lisbon"))  # recorded T0
    told = clock.advance(days=30)
    await items.add(said("Porto", valid_from=T0 + timedelta(days=10)))  # told on day 30: moved on day 10
    day15 = T0 + timedelta(days=15)
    assert [i.value for i in await items.query(ANA, as_of=day15)] == ["Porto"], "what held then, as known now"
    assert [i.value for i in await items.query(ANA, known_at=day15)] == ["Lisbon"], "as memory knew it on day 15"
    assert [i.value for i in await items.query(ANA, as_of=told, known_at=day15)] == ["Lisbon"], (
        "a close recorded later does not count"
    )
    assert await items.query(ANA, known_at=T0 - timedelta(seconds=1)) == [], "nothing was known before"
    assert [i.value for i in await items.query(ANA, statuses="all")] == ["Porto"]
    all_known = await items.query(ANA, statuses=["active", "superseded", "suggested"], as_of=T0 + timedelta(days=5))
    assert [i.value for i in all_known] == ["Lisbon"]


# --- scopes and input -----------------------------------------------------------------------


async def test_query_scopes_and_filters(items: MemoryItems) -> None:
    shared = await items.add(
        said("Hotel Avenida", trust="system", slot=("agent", "hotel"), scope={"agent_id": "concierge"})
    )
    mine = await items.add(said("Lisbon"))
    await items.add(said("Porto", scope={"agent_id": "concierge", "user_id": "bo"}))
    pref = await items.add(said("window seat", kind="preference", slot=("Ana", "seat")))
    assert {i.id for i in await items.query(ANA)} == {shared.id, mine.id, pref.id}
    assert {i.id for i in await items.query(ANA, exact=True)} == {mine.id, pref.id}
    assert [i.id for i in await items.query({"agent_id": "concierge"})] == [shared.id]
    assert [i.id for i in await items.query(ANA, kinds=["preference"])] == [pref.id]
    assert [i.id for i in await items.query(ANA, subject="ANA", slot=("ana", "SEAT"))] == [pref.id]
    assert [i.id for i in await items.query(ANA, limit=1)] == [pref.id]


async def test_bad_input_is_named(items: MemoryItems) -> None:
    cases: list[tuple[Any, str]] = [
        (items.add(said("x", kind="rumour")), "item.kind"),
        (items.add(said("x", scope={"user_id": "ana"})), "item.scope.agent_id"),
        (items.add(said("x", trust="friend")), "item.trust"),
        (items.add(said("x", verified=True, evidence=[])), "item"),
        (items.add(said("x", valid_from=T0, valid_to=T0)), "item"),
        (items.add("Lisbon"), "item"),
        (items.add_many([said("ok"), said("x", confidence=2)]), "items[1].confidence"),
        (items.add_many(said("x")), "items"),  # type: ignore[arg-type]
        (items.query({"user_id": "ana"}), "scope.agent_id"),
        (items.query(ANA, kinds=["rumour"]), "kinds"),
        (items.query(ANA, statuses=["gone"]), "statuses"),
        (items.query(ANA, as_of="today"), "as_of"),  # type: ignore[arg-type]
        (items.query(ANA, limit=-1), "limit"),
        (items.history(ANA, ("Ana",)), "slot"),  # type: ignore[arg-type]
        (items.mark_stale(["mem_1"], because=3), "because"),  # type: ignore[arg-type]
        (items.activate("mem_1"), "ids"),
        (items.note_retrieved([1]), "ids[0]"),  # type: ignore[list-item]
    ]
    for call, field in cases:
        with pytest.raises(InvalidArgumentError) as caught:
            await call
        assert caught.value.argument == field, f"{field}: {caught.value}"
    assert await items.query(ANA, statuses="all") == [], "bad input wrote nothing"
    with pytest.raises(InvalidArgumentError, match="adapter"):
        MemoryItems(adapter=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="activation_confidence"):
        MemoryItems(adapter=items.adapter, activation_confidence=1.5)


# --- racing writers and failures ------------------------------------------------------------


async def _expected_layout(svc: MemoryItems) -> None:
    history = await svc.history(ANA, CITY)
    wanted = rules.lay_out(history, svc._now_for(ANA["agent_id"]))
    assert {i.id: (i.status, i.valid_to) for i in history} == {k: (p.status, p.valid_to) for k, p in wanted.items()}
    assert sum(1 for i in history if i.valid_to is None) == 1, "one state stays open"


@pytest.mark.parametrize("seed", range(12))
async def test_racing_writers_converge(store: Any, clock: Clock, seed: int) -> None:
    random.seed(seed)
    second: Any = store if isinstance(store, InMemoryAdapter) else SQLiteAdapter(path=store.path)
    async with second if second is not store else _noop():
        # four writers with locks of their own, as four processes would be, two connections on SQLite
        relays = [Relay(s, yields=6) for s in (store, second, store, second)]
        writers = [MemoryItems(adapter=relay, clock=clock) for relay in relays]
        values = [f"city {n}" for n in range(40)]
        starts = [T0 - timedelta(days=random.randint(0, 40)) for _ in values]
        await asyncio.gather(
            *(
                writers[n % 4].add(said(v, valid_from=start if n % 3 else None))
                for n, (v, start) in enumerate(zip(values, starts, strict=True))
            )
        )
        assert sum(r.conflicts for r in relays) > 0, "the writers raced (some layouts were refused as stale)"
        await _expected_layout(writers[0])
        history = await writers[0].history(ANA, CITY)
        assert len(history) == len(values)
        assert [i.value for i in await writers[1].query(ANA)] == [max(history, key=rules.layout_order).value]


class _noop:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


async def test_a_failed_close_writes_nothing(store: Any, clock: Clock) -> None:
    flaky = Relay(store, fail={"update_items": {1}})
    svc = MemoryItems(adapter=flaky, clock=clock)
    await svc.add(said("Lisbon"))
    clock.advance(days=1)
    with pytest.raises(StoreUnavailableError):
        await svc.add(said("Porto"))  # the close of Lisbon failed: Porto is not stored either
    assert layout(await svc.history(ANA, CITY)) == [("Lisbon", "active", None)]


async def test_a_close_left_undone_is_repaired_by_the_next_write(store: Any, clock: Clock) -> None:
    svc = MemoryItems(adapter=store, clock=clock)
    lisbon = await svc.add(said("Lisbon"))
    clock.advance(days=1)
    porto = lisbon.model_copy(  # stored without closing Lisbon, as a write that failed half-way leaves it
        update={"id": "mem_porto", "value": "Porto", "recorded_at": T0 + timedelta(days=1), "evidence": []}
    )
    unwrap(await store.add_items([porto]))
    stored = unwrap(await store.query_items({"scope": ANA}))
    assert sorted((i.value, i.valid_to) for i in stored) == [("Lisbon", None), ("Porto", None)]
    assert [i.value for i in await svc.query(ANA)] == ["Porto"], "reads keep the state that started last"
    clock.advance(days=1)
    await svc.add(said("Braga"))
    assert layout(await svc.history(ANA, CITY)) == [
        ("Lisbon", "superseded", T0 + timedelta(days=1)),
        ("Porto", "superseded", T0 + timedelta(days=2)),
        ("Braga", "active", None),
    ]


async def test_a_failed_insert_writes_nothing(store: Any, clock: Clock) -> None:
    flaky = Relay(store, fail={"add_items": {2}})
    svc = MemoryItems(adapter=flaky, clock=clock)
    await svc.add(said("Lisbon"))
    with pytest.raises(StoreUnavailableError):
        await svc.add(said("Porto"))
    assert layout(await svc.history(ANA, CITY)) == [("Lisbon", "active", None)]


async def test_a_failed_merge_is_made_again(store: Any, clock: Clock) -> None:
    flaky = Relay(store, fail={"update_items": {1}})
    svc = MemoryItems(adapter=flaky, clock=clock)
    first = await svc.add(said("Lisbon", trust="model"))
    with pytest.raises(StoreUnavailableError):
        await svc.add(said("Lisbon"))
    assert unwrap(await store.get_items([first.id]))[0].status == "suggested"
    again = await svc.add(said("Lisbon"))
    assert (again.id, again.status, again.trust) == (first.id, "active", "user")


def test_the_service_types_against_the_protocol() -> None:
    adapter: MemoryItemAdapter = InMemoryAdapter()
    assert MemoryItems(adapter=adapter).adapter is adapter


def test_a_store_used_from_two_event_loops(tmp_path: Path) -> None:
    memory = InMemoryAdapter()
    relay = Relay(memory, yields=2)  # calls that suspend, so the writes wait for the agent's lock
    clock = Clock()

    async def write(value: str) -> MemoryItem:
        await memory.connect()
        svc = MemoryItems(adapter=relay, clock=clock)
        written = await asyncio.gather(*(svc.add(said(f"{value}{n}", slot=("Ana", f"{value}{n}"))) for n in range(3)))
        return written[-1]

    first = asyncio.run(write("a"))
    second = asyncio.run(write("b"))
    assert second.recorded_at == first.recorded_at + timedelta(milliseconds=3), "the agent's clock carries over"
