"""The conformance suite of fact stores, written once and run against every store.

:func:`fact_adapter_conformance_cases` returns named cases; each takes a fresh, connected, empty
store that keeps facts (see :class:`~cogitator_memory.items.facts.FactAdapter`; every built-in
store that keeps memory items does) and raises ``AssertionError`` saying what differed. Run them
on a store of your own::

    import pytest
    from cogitator_memory.testing.facts import fact_adapter_conformance_cases

    @pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
    async def test_fact_conformance(case, store):  # `store`: a fixture yielding a fresh connected store
        await case.run(store)

The cases check facts through the item calls too (a fact is kept as memory items), so the store
must keep items as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..clock import frozen_clock
from ..errors import InvalidArgumentError, NotFoundError
from ..items.facts import Fact
from ..result import MemoryResult, unwrap
from .cases import CaseList, NamedCase, expect, expect_equal, expect_failed

FactCase = Callable[[Any], Awaitable[None]]


class FactConformanceCase(NamedCase[Any]):
    """One named check of the fact store contract."""


_CASES = CaseList(FactConformanceCase)
_case = _CASES.case
_eq = expect_equal
_true = expect


def fact_adapter_conformance_cases() -> list[FactConformanceCase]:
    """Every case of the fact store contract, in a stable order."""
    return _CASES.cases()


# --- helpers ------------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
AGENT = "concierge"


_fails = expect_failed


async def _add(store: Any, content: str, **fields: Any) -> Fact:
    fact: Fact = unwrap(await store.add_fact({"agent_id": AGENT, "content": content, **fields}))
    return fact


async def _contents(result: Awaitable[MemoryResult[list[Fact]]]) -> list[str]:
    return [f.content for f in unwrap(await result)]


# --- cases ---------------------------------------------------------------------------------


@_case
async def case_add_and_get_round_trip(store: Any) -> None:
    expires = datetime(2099, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    evidence = [{"entry_id": "entry_1", "thread_id": "thread_1", "quote": "I prefer dark mode"}]
    added = await _add(
        store,
        "User prefers dark mode",
        category="preference",
        confidence=0.95,
        source="inferred",
        metadata={"user_id": "alice", "origin": {"app": "settings", "n": 3}},
        evidence=evidence,
        expires_at=expires,
    )
    _true(added.id.startswith("fact_"), f"a fact id starts with fact_: {added.id}")
    _eq(added.item_id, added.id, "the first state's item is the fact's id")
    _eq(
        (added.agent_id, added.content, added.category, added.confidence, added.source),
        (AGENT, "User prefers dark mode", "preference", 0.95, "inferred"),
        "fields of the added fact",
    )
    _eq(added.metadata, {"user_id": "alice", "origin": {"app": "settings", "n": 3}}, "metadata")
    _eq(added.user_id, "alice", "user_id")
    _eq([e.model_dump(exclude_none=True) for e in added.evidence], evidence, "evidence")
    _eq(added.expires_at, expires, "expires_at, to the microsecond")
    _eq(added.created_at, added.updated_at, "a new fact was updated when it was created")
    got = unwrap(await store.get_fact(added.id))
    _eq(got, added, "get_fact returns the fact as added")
    got.metadata["origin"]["app"] = "changed"
    got.evidence.clear()
    again = unwrap(await store.get_fact(added.id))
    _eq(again, added, "a returned fact is a copy")
    _eq(unwrap(await store.get_fact("fact_missing")), None, "a missing fact is None")
    defaults = await _add(store, "The office closes at 6pm")
    _eq(
        (defaults.category, defaults.confidence, defaults.source, defaults.metadata, defaults.expires_at),
        ("general", 1.0, "user", {}, None),
        "defaults of a fact",
    )


@_case
async def case_facts_are_memory_items(store: Any) -> None:
    pref = await _add(store, "Answer in Portuguese", category="Instruction", metadata={"user_id": "ana"})
    plain = await _add(store, "The spa opens at 8", category="hotel")
    items = {i.id: i for i in unwrap(await store.query_items({"within": {"agent_id": AGENT}}))}
    _eq(sorted(items), sorted([pref.id, plain.id]), "one item per fact, with the fact's id")
    item = items[pref.id]
    _eq(
        (item.kind, item.trust, item.status, item.value, item.attribute),
        ("instruction", "system", "active", "Answer in Portuguese", pref.id),
        "the fact's item",
    )
    _eq(item.scope.model_dump(exclude_none=True), {"agent_id": AGENT, "user_id": "ana"}, "the fact's scope")
    _eq(items[plain.id].kind, "fact", "a category that names no item kind is kept as kind fact")
    _eq(items[plain.id].scope.model_dump(exclude_none=True), {"agent_id": AGENT}, "a shared fact's scope")
    # An item that is not a fact is not a fact, even under its own id.
    other = {
        "id": "mem_conf_other",
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": "Lisbon",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": AGENT},
        "recorded_at": T0,
    }
    unwrap(await store.add_items([other]))
    _eq(unwrap(await store.get_fact("mem_conf_other")), None, "an item that holds no fact")
    _eq(
        sorted(f.id for f in unwrap(await store.get_facts(AGENT, all_users=True))),
        sorted([pref.id, plain.id]),
        "get_facts returns facts only",
    )
    unwrap(await store.delete_fact("mem_conf_other"))
    _eq(len(unwrap(await store.get_items(["mem_conf_other"]))), 1, "delete_fact leaves other items alone")


@_case
async def case_a_fact_with_a_user_goes_to_that_user_only(store: Any) -> None:
    await _add(store, "Alice is vegetarian", metadata={"user_id": "alice"})
    await _add(store, "Bo is allergic to nuts", metadata={"user_id": "bo"})
    await _add(store, "Breakfast is served until 10")
    await store.add_fact({"agent_id": "other-agent", "content": "Another agent's fact"})
    shared = "Breakfast is served until 10"
    _eq(
        sorted(await _contents(store.get_facts(AGENT, user_id="alice"))),
        ["Alice is vegetarian", shared],
        "alice sees hers and the shared facts",
    )
    _eq(
        sorted(await _contents(store.get_facts(AGENT, user_id="bo"))),
        ["Bo is allergic to nuts", shared],
        "bo sees his and the shared facts",
    )
    _eq(await _contents(store.get_facts(AGENT)), [shared], "without a user, only the shared facts")
    _eq(await _contents(store.get_facts(AGENT, user_id="carol")), [shared], "a user without facts")
    _eq(
        sorted(await _contents(store.get_facts(AGENT, all_users=True))),
        ["Alice is vegetarian", "Bo is allergic to nuts", shared],
        "all_users: every fact of the agent",
    )
    _eq(await _contents(store.get_facts("other-agent", all_users=True)), ["Another agent's fact"], "other agent")
    _eq(
        await _contents(store.search_facts(AGENT, "nuts vegetarian", user_id="alice")),
        ["Alice is vegetarian"],
        "search is scoped as get_facts is",
    )


@_case
async def case_expired_facts_are_not_returned(store: Any) -> None:
    with frozen_clock(T0):
        soon = await _add(store, "Pool closed for cleaning", expires_at=T0 + timedelta(hours=1))
        await _add(store, "Old promotion", expires_at=T0 - timedelta(days=1))
        await _add(store, "Late checkout costs 20 EUR")
        _eq(
            sorted(await _contents(store.get_facts(AGENT))),
            ["Late checkout costs 20 EUR", "Pool closed for cleaning"],
            "a fact expiring later holds, one expired when added does not",
        )
        _eq(await _contents(store.search_facts(AGENT, "promotion")), [], "search skips expired facts")
    with frozen_clock(T0 + timedelta(hours=2)):
        _eq(await _contents(store.get_facts(AGENT)), ["Late checkout costs 20 EUR"], "after it expired")
        _eq(unwrap(await store.get_fact(soon.id)), None, "get_fact of an expired fact")
        _fails(await store.update_fact(soon.id, {"confidence": 0.5}), "update of an expired fact", NotFoundError)


@_case
async def case_a_new_content_is_a_new_state(store: Any) -> None:
    with frozen_clock(T0):
        fact = await _add(store, "User prefers dark mode", category="preference", metadata={"user_id": "alice"})
    with frozen_clock(T0 + timedelta(days=3)):
        changed = unwrap(await store.update_fact(fact.id, {"content": "User prefers light mode"}))
    _eq((changed.id, changed.content), (fact.id, "User prefers light mode"), "same fact, new content")
    _true(changed.item_id != fact.item_id, "a new content is a new item")
    _eq(changed.created_at, fact.created_at, "created_at stays")
    _eq(changed.updated_at, T0 + timedelta(days=3), "updated_at is when the new state was written")
    _eq((changed.category, changed.metadata), ("preference", {"user_id": "alice"}), "other fields carried over")
    _eq(unwrap(await store.get_fact(fact.id)), changed, "get_fact returns the new state")
    states = sorted(
        unwrap(await store.query_items({"within": {"agent_id": AGENT}, "statuses": ["active", "superseded"]})),
        key=lambda i: i.recorded_at,
    )
    _eq(
        [(s.value, s.status) for s in states],
        [
            ("User prefers dark mode", "superseded"),
            ("User prefers light mode", "active"),
        ],
        "the old state is kept, closed",
    )
    _eq(states[0].valid_to, T0 + timedelta(days=3), "the old state closes where the new one starts")
    _eq(await _contents(store.search_facts(AGENT, "dark", user_id="alice")), [], "search reads the current state")
    _eq(
        await _contents(store.search_facts(AGENT, "light", user_id="alice")),
        ["User prefers light mode"],
        "search finds the new content",
    )
    same = unwrap(await store.update_fact(fact.id, {"content": "User  prefers light mode "}))
    _eq(same.item_id, changed.item_id, "the same content again (spacing aside) is no new state")


@_case
async def case_other_fields_change_in_place(store: Any) -> None:
    with frozen_clock(T0):
        fact = await _add(store, "Guest speaks German", metadata={"user_id": "ana", "tag": "lang"})
    later = T0 + timedelta(hours=5)
    with frozen_clock(later):
        changed = unwrap(
            await store.update_fact(
                fact.id,
                {
                    "confidence": 0.4,
                    "category": "language",
                    "metadata": {"tag": "spoken"},
                    "evidence": [{"entry_id": "entry_9", "quote": "Ich spreche Deutsch"}],
                    "expires_at": T0 + timedelta(days=30),
                },
            )
        )
    _eq(changed.item_id, fact.item_id, "an in-place change keeps the item")
    _eq(
        (changed.confidence, changed.category, changed.metadata, changed.expires_at),
        (0.4, "language", {"tag": "spoken", "user_id": "ana"}, T0 + timedelta(days=30)),
        "the changed fields (metadata keeps the user)",
    )
    _eq([e.quote for e in changed.evidence], ["Ich spreche Deutsch"], "evidence replaced")
    _eq((changed.created_at, changed.updated_at), (T0, later), "created and updated times")
    with frozen_clock(later):
        _eq(unwrap(await store.get_fact(fact.id)), changed, "get_fact sees the change")
        forever = unwrap(await store.update_fact(fact.id, {"expires_at": None}))
        _eq(forever.expires_at, None, "expires_at=None makes the fact hold for good")
        untouched = unwrap(await store.update_fact(fact.id, {}))
        _eq(untouched, forever, "an empty update changes nothing")
        ended = unwrap(await store.update_fact(fact.id, {"expires_at": later - timedelta(minutes=1)}))
        _eq(ended.expires_at, later - timedelta(minutes=1), "a past expiry ends the fact")
        _eq(unwrap(await store.get_fact(fact.id)), None, "an ended fact is not returned")
        item = unwrap(await store.get_items([fact.id]))[0]
        _eq((item.status, item.valid_to), ("superseded", later - timedelta(minutes=1)), "its item is closed")


@_case
async def case_racing_updates_both_land(store: Any) -> None:
    fact = await _add(store, "Room 12 has a view")
    first, second = await asyncio.gather(
        store.update_fact(fact.id, {"confidence": 0.3}), store.update_fact(fact.id, {"category": "rooms"})
    )
    _true(first.success and second.success, f"both updates succeed: {first.error} {second.error}")
    final = unwrap(await store.get_fact(fact.id))
    _eq((final.confidence, final.category), (0.3, "rooms"), "neither update is lost")


@_case
async def case_update_refusals(store: Any) -> None:
    fact = await _add(store, "Alice likes tea", metadata={"user_id": "alice"})
    _fails(await store.update_fact("fact_missing", {"confidence": 0.5}), "missing fact", NotFoundError, "fact_missing")
    _fails(await store.update_fact(fact.id, {"color": "red"}), "unknown field", InvalidArgumentError, "updates.color")
    _fails(
        await store.update_fact(fact.id, {"metadata": {"user_id": "bo"}}),
        "moving a fact to another user",
        InvalidArgumentError,
        "updates.metadata.user_id",
    )
    _fails(await store.update_fact(fact.id, {"content": " "}), "empty content", InvalidArgumentError, "updates.content")
    _fails(await store.update_fact(fact.id, {"content": None}), "clearing content", InvalidArgumentError, "content")
    _fails(await store.update_fact(fact.id, {"agent_id": "x"}), "changing the agent", InvalidArgumentError, "agent_id")
    _fails(
        await store.update_fact(fact.id, {"confidence": 1.5}), "confidence", InvalidArgumentError, "updates.confidence"
    )
    _fails(await store.update_fact(fact.id, ["content"]), "updates not a dict", InvalidArgumentError, "updates")
    _eq(unwrap(await store.get_fact(fact.id)), fact, "a refused update changes nothing")


@_case
async def case_delete_fact(store: Any) -> None:
    fact = await _add(store, "Dinner at 8")
    unwrap(await store.update_fact(fact.id, {"content": "Dinner at 9"}))
    keep = await _add(store, "Lunch at 1")
    _eq(unwrap(await store.delete_fact(fact.id)), None, "delete_fact returns None")
    _eq(unwrap(await store.get_fact(fact.id)), None, "a deleted fact is gone")
    left = unwrap(await store.query_items({"within": {"agent_id": AGENT}, "statuses": ["active", "superseded"]}))
    _eq([i.value for i in left], ["Lunch at 1"], "every state of the deleted fact went, the other fact stays")
    _eq(unwrap(await store.delete_fact(fact.id)), None, "deleting again is fine")
    _eq(unwrap(await store.get_fact(keep.id)), keep, "the other fact")


@_case
async def case_get_facts_order_category_and_limit(store: Any) -> None:
    with frozen_clock(T0):
        await _add(store, "low", confidence=0.2, category="a")
    with frozen_clock(T0 + timedelta(hours=1)):
        await _add(store, "high old", confidence=0.9, category="b")
    with frozen_clock(T0 + timedelta(hours=2)):
        await _add(store, "high new", confidence=0.9, category="a")
    with frozen_clock(T0 + timedelta(hours=3)):
        _eq(
            await _contents(store.get_facts(AGENT)),
            ["high new", "high old", "low"],
            "most confident first, then most recently updated",
        )
        _eq(await _contents(store.get_facts(AGENT, category="a")), ["high new", "low"], "category narrows")
        _eq(await _contents(store.get_facts(AGENT, limit=2)), ["high new", "high old"], "limit keeps the best")
        _eq(len(unwrap(await store.get_facts(AGENT, limit=0))), 3, "limit=0 returns all")


@_case
async def case_search_ranks_by_keywords(store: Any) -> None:
    await _add(store, "Ana loves jazz and jazz clubs")
    await _add(store, "Ana loves jazz")
    await _add(store, "Bo plays chess on Sundays")
    await _add(store, "Jazz brunch every Sunday", category="events")
    _eq(
        await _contents(store.search_facts(AGENT, "JAZZ")),
        ["Ana loves jazz and jazz clubs", "Ana loves jazz", "Jazz brunch every Sunday"],
        "BM25: more occurrences first, shorter first on the same count",
    )
    _eq(await _contents(store.search_facts(AGENT, "jazz", limit=1)), ["Ana loves jazz and jazz clubs"], "limit")
    _eq(await _contents(store.search_facts(AGENT, "jazz", category="events")), ["Jazz brunch every Sunday"], "category")
    _eq(await _contents(store.search_facts(AGENT, "the and of")), [], "a query of stopwords finds nothing")
    _eq(await _contents(store.search_facts(AGENT, "")), [], "an empty query finds nothing")
    _eq(await _contents(store.search_facts(AGENT, "tennis")), [], "no match")


@_case
async def case_bad_arguments_are_named(store: Any) -> None:
    good = {"agent_id": AGENT, "content": "x"}
    for bad, name in (
        ("not a dict", "fact"),
        ({"content": "x"}, "fact.agent_id"),
        ({"agent_id": "", "content": "x"}, "fact.agent_id"),
        ({"agent_id": AGENT}, "fact.content"),
        ({**good, "content": 5}, "fact.content"),
        ({**good, "confidence": 2}, "fact.confidence"),
        ({**good, "source": "web"}, "fact.source"),
        ({**good, "category": ""}, "fact.category"),
        ({**good, "expires_at": "tomorrow"}, "fact.expires_at"),
        ({**good, "metadata": {"user_id": 3}}, "fact.metadata.user_id"),
        ({**good, "metadata": {"fact": {}}}, "fact.metadata.fact"),
        ({**good, "metadata": []}, "fact.metadata"),
        ({**good, "evidence": [{"entry_id": "e"}]}, "fact.evidence"),
        ({**good, "kind": "fact"}, "fact.kind"),
    ):
        _fails(await store.add_fact(bad), f"add_fact({bad!r})", InvalidArgumentError, name)
    _eq(unwrap(await store.get_facts(AGENT, all_users=True)), [], "nothing was written")
    for result, name in (
        (await store.get_fact(7), "fact_id"),
        (await store.get_facts(7), "agent_id"),
        (await store.get_facts(AGENT, user_id=""), "user_id"),
        (await store.get_facts(AGENT, category=3), "category"),
        (await store.get_facts(AGENT, limit=-1), "limit"),
        (await store.get_facts(AGENT, all_users="yes"), "all_users"),
        (await store.get_facts(AGENT, user_id="ana", all_users=True), "all_users"),
        (await store.search_facts(AGENT, 3), "query"),
        (await store.search_facts(AGENT, "x", limit=True), "limit"),
        (await store.update_fact(None, {}), "fact_id"),
        (await store.delete_fact(""), "fact_id"),
    ):
        _fails(result, name, InvalidArgumentError, name)


__all__ = ["FactConformanceCase", "fact_adapter_conformance_cases"]
