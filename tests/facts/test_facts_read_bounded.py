"""A build of the present reads the facts it sends, not every item that holds: the states read
latest started first, group by group, in pages that grow until no state left unread could be
sent. What it sends is what choosing among every state that holds sends (a randomised check
against that rule, with slots shared across scopes and kinds, equal times and closed states),
and what it reads follows the limit, not the history."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.context.facts import _sent_now, chosen_states
from cogitator_memory.items import rules
from cogitator_memory.items.records import ITEM_KINDS, LAID_OUT_STATUSES, MemoryItem

AGENT = "concierge"
SCOPES = [
    {"agent_id": AGENT},
    {"agent_id": AGENT, "user_id": "ana"},
    {"agent_id": AGENT, "user_id": "ana", "thread_id": "t1"},
    {"agent_id": AGENT, "user_id": "bo"},  # not seen by Ana's run
]
RUN = {"agent_id": AGENT, "user_id": "ana", "thread_id": "t1"}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=400)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    adapter = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=tmp_path / "memory.db")
    async with adapter:
        yield adapter


def random_items(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Items over a few scopes and kinds, few slots (so slots repeat across scopes and kinds),
    days that repeat (equal starts and equal recorded times), some closed or let go."""
    items = []
    for n in range(count):
        recorded = T0 + timedelta(days=rng.randrange(300))
        item: dict[str, Any] = {
            "id": f"mem_{rng.randrange(10**6):06d}_{n:05d}",
            "kind": rng.choice(ITEM_KINDS),
            "subject": rng.choice(["Ana", "Hotel"]),
            "attribute": rng.choice([None, "city", "seat", "diet", "wifi", "pet", f"a{n % 37}"]),
            "value": f"value {n}",
            "trust": "user",
            "status": rng.choice(["active"] * 6 + ["superseded", "stale"]),
            "scope": rng.choice(SCOPES),
            "recorded_at": recorded,
        }
        if rng.random() < 0.5:
            item["valid_from"] = T0 + timedelta(days=rng.randrange(300))
        if rng.random() < 0.15:
            start = item.get("valid_from", recorded)
            item["valid_to"] = start + timedelta(days=rng.choice([1, 500]))
        items.append(item)
    return items


async def every_state_chosen(store: Any, limit: int) -> list[MemoryItem]:
    """The rule itself: read every state that holds now and choose among them."""
    found = unwrap(await store.query_items({"visible_to": RUN, "statuses": sorted(LAID_OUT_STATUSES), "as_of": NOW}))
    return chosen_states(rules.holding(found, as_of=NOW, known_at_time=NOW, relayout=False))[:limit]


class Counting:
    """The store, counting the items its queries return."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.read = 0

    async def query_items(self, flt: Any) -> Any:
        result = await self.store.query_items(flt)
        self.read += len(unwrap(result))
        return result


@pytest.mark.parametrize("seed", range(6))
async def test_what_is_sent_is_what_choosing_among_every_state_sends(store: Any, seed: int) -> None:
    rng = random.Random(seed)
    unwrap(await store.add_items(random_items(rng, 700)))
    for limit in (1, 5, 40, 100, 1000):
        expected = [i.id for i in await every_state_chosen(store, limit)]
        got = [i.id for i in await _sent_now(store, RUN, NOW, limit)]
        assert got == expected, f"limit {limit}"
    assert await _sent_now(store, RUN, NOW, 0) == []


async def test_a_state_of_the_other_group_in_a_sent_slot_is_seen(store: Any) -> None:
    # Ana's seat as a preference (sent first, as its group is) and, started later in the shared
    # scope, as a fact: the later state is the one the slot sends, though its group was not read
    # that far; and many newer facts push it out of the first page of its group.
    old_pref = {"kind": "preference", "subject": "Ana", "attribute": "seat", "value": "aisle"}
    later_fact = {"kind": "fact", "subject": "Ana", "attribute": "seat", "value": "window"}
    rows = [
        {**old_pref, "id": "mem_pref", "scope": SCOPES[1], "recorded_at": T0},
        {**later_fact, "id": "mem_fact", "scope": SCOPES[0], "recorded_at": T0 + timedelta(days=1)},
    ]
    rows += [
        {
            "id": f"mem_new{n:04d}",
            "kind": "fact",
            "subject": "Ana",
            "attribute": f"x{n}",
            "value": str(n),
            "scope": SCOPES[1],
            "recorded_at": T0 + timedelta(days=2, minutes=n),
        }
        for n in range(300)
    ]
    unwrap(await store.add_items([{**row, "trust": "user", "status": "active"} for row in rows]))
    sent = await _sent_now(store, RUN, NOW, 5)
    assert [i.id for i in sent] == [i.id for i in await every_state_chosen(store, 5)]
    assert "mem_pref" not in {i.id for i in sent}
    sent_all = await _sent_now(store, RUN, NOW, 400)
    assert "mem_fact" in {i.id for i in sent_all} and "mem_pref" not in {i.id for i in sent_all}


async def test_what_is_read_follows_the_limit_not_the_history(store: Any) -> None:
    rows = [
        {
            "id": f"mem_{n:05d}",
            "kind": "preference" if n % 50 == 0 else "fact",
            "subject": "Ana",
            "attribute": f"a{n}",
            "value": str(n),
            "trust": "user",
            "status": "active",
            "scope": SCOPES[n % 3],
            "recorded_at": T0 + timedelta(minutes=n),
        }
        for n in range(5_000)
    ]
    for start in range(0, len(rows), 1000):
        unwrap(await store.add_items(rows[start : start + 1000]))
    counting = Counting(store)
    sent = await _sent_now(counting, RUN, NOW, 20)
    assert [i.id for i in sent] == [i.id for i in await every_state_chosen(store, 20)]
    assert counting.read <= 2 * 64 + 20, counting.read  # two first pages and the sent slots, of 5,000
