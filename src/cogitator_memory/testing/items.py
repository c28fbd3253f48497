"""The conformance suite of memory item stores, written once and run against every store.

:func:`memory_item_adapter_conformance_cases` returns named cases; each takes a fresh,
connected, empty store (one that keeps items, see
:class:`~cogitator_memory.items.base.MemoryItemAdapter`) and raises ``AssertionError`` saying
what differed when the store breaks the contract. Run them on a store of your own::

    import pytest
    from cogitator_memory.testing import memory_item_adapter_conformance_cases

    @pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
    async def test_item_conformance(case, store):  # `store`: a fixture yielding a fresh connected store
        await case.run(store)
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..items.base import MemoryItemAdapter
from ..items.records import ItemUpdate, MemoryItem
from ..result import MemoryResult, unwrap
from .cases import CaseList, NamedCase, expect, expect_equal, expect_failed

ItemCase = Callable[[Any], Awaitable[None]]


class ItemConformanceCase(NamedCase[Any]):
    """One named check of the memory item store contract."""


_CASES = CaseList(ItemConformanceCase)
_case = _CASES.case
_eq = expect_equal
_true = expect


def memory_item_adapter_conformance_cases() -> list[ItemConformanceCase]:
    """Every case of the memory item store contract, in a stable order."""
    return _CASES.cases()


# --- helpers ------------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
AGENT = "concierge"
_serial = itertools.count(1)


_fails = expect_failed


def _item(**fields: Any) -> dict[str, Any]:
    """A complete item as a dict: a fresh id, recorded at T0 plus a serial number of microseconds."""
    serial = next(_serial)
    base: dict[str, Any] = {
        "id": f"mem_conf{serial:08d}",
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": f"value {serial}",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": AGENT, "user_id": "ana"},
        "recorded_at": T0 + timedelta(microseconds=serial),
    }
    base.update(fields)
    return base


async def _add(store: MemoryItemAdapter, *items: dict[str, Any]) -> list[MemoryItem]:
    return unwrap(await store.add_items(list(items)))


async def _ids(result: Awaitable[MemoryResult[list[MemoryItem]]]) -> list[str]:
    return [item.id for item in unwrap(await result)]


async def _query(store: MemoryItemAdapter, **flt: Any) -> list[str]:
    return await _ids(store.query_items(flt))


async def _get(store: MemoryItemAdapter, item_id: str) -> MemoryItem:
    found = unwrap(await store.get_items([item_id]))
    _eq(len(found), 1, f"get_items finds {item_id}")
    return found[0]


# --- adding and reading -------------------------------------------------------------------


@_case
async def case_add_and_get_round_trip(store: MemoryItemAdapter) -> None:
    full = _item(
        kind="preference",
        subject="Ana  Souza",
        attribute="coffee order",
        value="Flat white, oat milk — ✓ 日本語",
        entity_id="node_ana",
        related_entity_ids=["node_cafe", "node_oat"],
        evidence=[
            {"entry_id": "entry_1", "thread_id": "thread_a", "quote": "a flat white with oat milk"},
            {"entry_id": "entry_2", "tool_call_id": "call_9", "quote": "oat", "file_range": {"path": "/m.md"}},
        ],
        trust="system",
        verified=True,
        confidence=0.85,
        scope={"agent_id": AGENT, "user_id": "ana", "project_id": "trip", "thread_id": "thread_a"},
        valid_from=T0 - timedelta(days=30, microseconds=7),
        valid_to=T0 + timedelta(days=3),
        ends_at=T0 + timedelta(days=3),
        expired_at=T0 + timedelta(days=9, microseconds=1),
        times_retrieved=4,
        last_retrieved_at=T0 + timedelta(hours=1, microseconds=123_456),
        metadata={"nested": {"a": [1, None, "x"]}, "stale_because": {"reason": "duplicate"}},
        status="stale",
    )
    added = await _add(store, full)
    _eq(len(added), 1, "add_items returns what it stored")
    got = await _get(store, full["id"])
    _eq(got, added[0], "an item reads back as it was stored")
    _eq(got.version, 1, "a stored item starts at version 1")
    _eq(got.last_retrieved_at, full["last_retrieved_at"], "times keep their microseconds")
    _eq(got.valid_from, full["valid_from"], "valid_from keeps its microseconds")
    _eq(got.evidence[0].thread_id, "thread_a", "a quote keeps its thread")
    _eq(got.metadata["nested"], {"a": [1, None, "x"]}, "nested metadata round-trips, nulls included")
    minimal = _item(attribute=None)
    await _add(store, minimal)
    back = await _get(store, minimal["id"])
    for name in ("attribute", "entity_id", "related_entity_ids", "valid_from", "valid_to", "ends_at", "expired_at"):
        _eq(getattr(back, name), None, f"{name} never set comes back None")
    _eq(back.evidence, [], "no evidence comes back as an empty list")
    _eq(back.metadata, {}, "no metadata comes back as an empty dict")
    _true("attribute" not in back.dump(), "fields never set are left out of a dump")
    _eq(unwrap(await store.add_items([])), [], "adding nothing succeeds")


@_case
async def case_version_given_on_add_is_reset(store: MemoryItemAdapter) -> None:
    item = _item(version=7)
    added = await _add(store, item)
    _eq(added[0].version, 1, "add_items stores version 1 whatever it is given")
    _eq((await _get(store, item["id"])).version, 1, "the stored version is 1")


@_case
async def case_returned_items_are_copies(store: MemoryItemAdapter) -> None:
    record = MemoryItem.model_validate(_item(metadata={"tags": ["a"]}, evidence=[{"entry_id": "e1", "quote": "q"}]))
    added = (await _add(store, record.model_dump()))[0]
    record.metadata["tags"].append("changed by caller")
    added.metadata["tags"].append("changed by caller")
    added.evidence[0].quote = "changed"
    got = await _get(store, record.id)
    _eq(got.metadata, {"tags": ["a"]}, "changing what was given or returned does not change the store")
    _eq(got.evidence[0].quote, "q", "evidence is not shared either")
    got.metadata["tags"].append("x")
    got.evidence.clear()
    again = await _get(store, record.id)
    _eq(again.metadata, {"tags": ["a"]}, "changing a read item does not change the store")
    _eq(len(again.evidence), 1, "a read item's evidence is its own")
    listed = unwrap(await store.query_items({"scope": {"agent_id": AGENT, "user_id": "ana"}}))
    listed[0].metadata["tags"] = []
    _eq((await _get(store, record.id)).metadata, {"tags": ["a"]}, "query results are copies too")
    object_added = MemoryItem.model_validate(_item(metadata={"k": [1]}))
    await _add(store, object_added)  # type: ignore[arg-type]
    object_added.metadata["k"].append(2)
    _eq((await _get(store, object_added.id)).metadata, {"k": [1]}, "a record object given is not kept")


@_case
async def case_add_is_all_or_nothing(store: MemoryItemAdapter) -> None:
    first, bad, third = _item(), _item(kind="rumour"), _item()
    _fails(await store.add_items([first, third, bad]), "an unknown kind", InvalidArgumentError, "items[2].kind")
    _eq(unwrap(await store.get_items([first["id"], third["id"]])), [], "a batch with a bad item stores nothing")
    taken = _item()
    await _add(store, taken)
    fresh = _item()
    _fails(await store.add_items([fresh, dict(_item(), id=taken["id"])]), "a taken id", ConflictError, taken["id"])
    _eq(unwrap(await store.get_items([fresh["id"]])), [], "a batch with a taken id stores nothing")
    twice = _item()
    _fails(await store.add_items([twice, twice]), "an id twice in a batch", InvalidArgumentError, "items[1].id")
    _eq(unwrap(await store.get_items([twice["id"]])), [], "a batch with an id twice stores nothing")
    _eq((await _get(store, taken["id"])).value, taken["value"], "the item whose id was taken is unchanged")


@_case
async def case_get_items_in_order_missing_left_out(store: MemoryItemAdapter) -> None:
    a, b, c = _item(), _item(), _item()
    await _add(store, a, b, c)
    _eq(
        await _ids(store.get_items([c["id"], "mem_missing", a["id"], c["id"]])),
        [c["id"], a["id"]],
        "items come in the order asked, missing and repeated ids left out",
    )
    _eq(unwrap(await store.get_items([])), [], "asking for nothing finds nothing")


# --- scopes -------------------------------------------------------------------------------


async def _scoped(store: MemoryItemAdapter) -> dict[str, str]:
    scopes = {
        "agent": {"agent_id": AGENT},
        "ana": {"agent_id": AGENT, "user_id": "ana"},
        "bo": {"agent_id": AGENT, "user_id": "bo"},
        "ana_t1": {"agent_id": AGENT, "user_id": "ana", "thread_id": "t1"},
        "ana_t2": {"agent_id": AGENT, "user_id": "ana", "thread_id": "t2"},
        "project_p": {"agent_id": AGENT, "project_id": "p"},
        "ana_q": {"agent_id": AGENT, "user_id": "ana", "project_id": "q"},
        "t1": {"agent_id": AGENT, "thread_id": "t1"},
        "other_agent": {"agent_id": "other", "user_id": "ana"},
    }
    ids = {}
    for name, scope in scopes.items():
        item = _item(scope=scope, value=name)
        await _add(store, item)
        ids[item["id"]] = name
    return ids


async def _names(store: MemoryItemAdapter, ids: dict[str, str], **flt: Any) -> set[str]:
    return {ids[i] for i in await _query(store, **flt)}


@_case
async def case_query_visible_to(store: MemoryItemAdapter) -> None:
    ids = await _scoped(store)
    _eq(await _names(store, ids, visible_to={"agent_id": AGENT}), {"agent"}, "an agent scope sees shared items only")
    _eq(
        await _names(store, ids, visible_to={"agent_id": AGENT, "user_id": "ana"}),
        {"agent", "ana"},
        "a user's scope sees the agent's shared items and the user's own",
    )
    _eq(
        await _names(store, ids, visible_to={"agent_id": AGENT, "user_id": "ana", "thread_id": "t1"}),
        {"agent", "ana", "ana_t1", "t1"},
        "a thread of a user sees the user's, the thread's and the shared items",
    )
    _eq(
        await _names(
            store, ids, visible_to={"agent_id": AGENT, "user_id": "ana", "project_id": "p", "thread_id": "t1"}
        ),
        {"agent", "ana", "ana_t1", "t1", "project_p"},
        "every limit unset or its own",
    )
    _eq(
        await _names(store, ids, visible_to={"agent_id": "other", "user_id": "ana"}),
        {"other_agent"},
        "another agent's items are never seen",
    )
    _eq(await _names(store, ids, visible_to={"agent_id": "nobody"}), set(), "an agent with no items sees none")


@_case
async def case_query_exact_scope_and_within(store: MemoryItemAdapter) -> None:
    ids = await _scoped(store)
    _eq(await _names(store, ids, scope={"agent_id": AGENT, "user_id": "ana"}), {"ana"}, "scope matches exactly")
    _eq(await _names(store, ids, scope={"agent_id": AGENT}), {"agent"}, "an agent scope matches only shared items")
    _eq(
        await _names(store, ids, within={"agent_id": AGENT, "user_id": "ana"}),
        {"ana", "ana_t1", "ana_t2", "ana_q"},
        "within reaches every narrower scope of the user",
    )
    _eq(
        await _names(store, ids, within={"agent_id": AGENT, "thread_id": "t1"}),
        {"ana_t1", "t1"},
        "within a thread: every item kept for that thread",
    )
    _eq(len(await _names(store, ids, within={"agent_id": AGENT})), 8, "within the agent: all of its items")


# --- filters ------------------------------------------------------------------------------


@_case
async def case_query_filters(store: MemoryItemAdapter) -> None:
    scope = {"agent_id": AGENT, "user_id": "ana"}
    city = _item(subject="Ana", attribute="City", value="Lisbon", evidence=[{"entry_id": "e1", "quote": "Lisbon"}])
    moved = _item(
        subject=" ana ",
        attribute="city",
        value="Porto",
        status="suggested",
        evidence=[{"entry_id": "e2", "quote": "Porto"}, {"entry_id": "e3", "quote": "moved"}],
    )
    diet = _item(subject="ANA", attribute="diet", value="vegan", kind="preference", status="superseded")
    linked = _item(subject="my sister", attribute="city", value="Faro", entity_id="node_ana")
    linked_too = _item(subject="Ana", attribute="city", value="Braga", entity_id="node_ana", status="stale")
    lesson = _item(subject="Ana", attribute=None, value="Confirm dates twice", kind="lesson")
    await _add(store, city, moved, diet, linked, linked_too, lesson)
    _eq(
        set(await _query(store, scope=scope, statuses=["active"])),
        {city["id"], linked["id"], lesson["id"]},
        "statuses narrow",
    )
    _eq(await _query(store, scope=scope, kinds=["preference"]), [diet["id"]], "kinds narrow")
    _eq(
        await _query(store, scope=scope, slot={"subject": "ANA", "attribute": "  city "}),
        [city["id"], moved["id"]],
        "a slot matches its subject and attribute, spacing and case aside",
    )
    _eq(
        await _query(store, scope=scope, slot={"subject": "whoever", "attribute": "CITY", "entity_id": "node_ana"}),
        [linked["id"], linked_too["id"]],
        "a slot of an entity matches the items linked to it, whatever their subject's words",
    )
    _eq(
        await _query(store, scope=scope, subject="ana"),
        [city["id"], moved["id"], diet["id"], lesson["id"]],
        "subject: every slot of the subject",
    )
    _eq(
        await _query(store, scope=scope, entity_id="node_ana"),
        [linked["id"], linked_too["id"]],
        "entity_id: every slot of the entity",
    )
    _eq(
        await _query(store, scope=scope, slot={"subject": "Ana"}),
        [lesson["id"]],
        "a slot without attribute holds the subject's items without one",
    )
    _eq(
        await _query(
            store,
            scope=scope,
            slots=[
                {"subject": "Ana", "attribute": "diet"},
                {"subject": "x", "attribute": "city", "entity_id": "node_ana"},
                {"subject": "Ana"},
                {"subject": "Bo", "attribute": "city"},
            ],
        ),
        [diet["id"], linked["id"], linked_too["id"], lesson["id"]],
        "slots: the items of any of the slots, in one query",
    )
    _eq(
        await _query(store, within={"agent_id": AGENT}, slots=[{"subject": "ana", "attribute": "CITY"}]),
        [city["id"], moved["id"]],
        "slots within a scope",
    )
    _eq(
        await _query(store, within={"agent_id": AGENT}, entry_ids=["e3", "e1", "e404"]),
        [city["id"], moved["id"]],
        "entry_ids finds the items quoting any of the entries",
    )
    _eq(
        await _query(store, scope=scope, recorded_after=moved["recorded_at"]),
        [diet["id"], linked["id"], linked_too["id"], lesson["id"]],
        "recorded_after is strict",
    )
    _eq(
        await _query(store, scope=scope, statuses=["active", "stale"], kinds=["fact"], subject="Ana"),
        [city["id"]],
        "conditions combine",
    )


@_case
async def case_query_times(store: MemoryItemAdapter) -> None:
    scope = {"agent_id": AGENT}
    y2020, y2021, y2022 = (datetime(y, 1, 1, tzinfo=UTC) for y in (2020, 2021, 2022))
    closed = _item(scope=scope, valid_from=y2020, valid_to=y2021, recorded_at=y2020 + timedelta(days=1))
    open_ = _item(scope=scope, valid_from=y2021, recorded_at=y2021 + timedelta(days=1))
    undated = _item(scope=scope, recorded_at=y2022)
    expired = _item(
        scope=scope, valid_from=y2020, recorded_at=y2020, expired_at=y2021 + timedelta(days=100), status="stale"
    )
    await _add(store, closed, open_, undated, expired)

    async def at(**times: Any) -> set[str]:
        return set(await _query(store, scope=scope, **times))

    _eq(await at(as_of=datetime(2020, 6, 1, tzinfo=UTC)), {closed["id"], expired["id"]}, "as_of inside a state")
    _eq(await at(as_of=y2021), {open_["id"], expired["id"]}, "valid_to is exclusive and valid_from inclusive")
    _eq(await at(as_of=y2020 - timedelta(microseconds=1)), set(), "nothing holds before it starts")
    _eq(
        await at(as_of=y2022 - timedelta(microseconds=1)),
        {open_["id"], expired["id"]},
        "an item without valid_from starts when it was recorded",
    )
    _eq(await at(as_of=y2022), {open_["id"], undated["id"], expired["id"]}, "...and holds from then")
    _eq(await at(known_at=y2020 + timedelta(hours=1)), {expired["id"]}, "known_at: only what was recorded by then")
    _eq(
        await at(known_at=y2021 + timedelta(days=100)),
        {closed["id"], open_["id"]},
        "known_at: an item expired by then is no longer known",
    )
    _eq(
        await at(known_at=y2021 + timedelta(days=99), as_of=y2020 + timedelta(days=10)),
        {closed["id"], expired["id"]},
        "as_of and known_at combine",
    )


@_case
async def case_query_order_and_limit(store: MemoryItemAdapter) -> None:
    scope = {"agent_id": AGENT, "user_id": "ord"}
    same = T0 + timedelta(days=1)
    late = _item(scope=scope, recorded_at=T0 + timedelta(days=2))
    tie_b = _item(scope=scope, recorded_at=same, id="mem_tie_b")
    tie_a = _item(scope=scope, recorded_at=same, id="mem_tie_a")
    early = _item(scope=scope, recorded_at=T0)
    await _add(store, late, tie_b, tie_a, early)
    order = [early["id"], "mem_tie_a", "mem_tie_b", late["id"]]
    _eq(await _query(store, scope=scope), order, "oldest recorded first, then by id")
    _eq(await _query(store, scope=scope, limit=2), order[2:], "limit keeps the newest, oldest first")
    _eq(await _query(store, scope=scope, limit=10), order, "a limit above the count keeps all")


@_case
async def case_query_order_by_start(store: MemoryItemAdapter) -> None:
    scope = {"agent_id": AGENT, "user_id": "started"}
    thread = {**scope, "thread_id": "t1"}
    # Recorded in one order, started in another: valid_from earlier or later than recorded_at.
    told_late = _item(scope=scope, recorded_at=T0 + timedelta(days=5), valid_from=T0 - timedelta(days=30))
    undated = _item(scope=scope, recorded_at=T0 + timedelta(days=1))  # starts when recorded
    tie_new = _item(scope=thread, recorded_at=T0 + timedelta(days=3), valid_from=T0 + timedelta(days=2), id="mem_st_b")
    tie_old = _item(scope=scope, recorded_at=T0 + timedelta(days=2), valid_from=T0 + timedelta(days=2), id="mem_st_c")
    tie_id = _item(scope=scope, recorded_at=T0 + timedelta(days=2), valid_from=T0 + timedelta(days=2), id="mem_st_a")
    future = _item(scope=scope, recorded_at=T0, valid_from=T0 + timedelta(days=40))
    await _add(store, told_late, undated, tie_new, tie_old, tie_id, future)
    order = [told_late["id"], undated["id"], "mem_st_a", "mem_st_c", "mem_st_b", future["id"]]
    _eq(await _query(store, visible_to=thread, order="start"), order, "by start, then recorded, then id")
    _eq(await _query(store, visible_to=thread, order="start", limit=3), order[3:], "limit keeps the latest started")
    _eq(
        await _query(store, visible_to=thread, order="start", limit=3, as_of=T0 + timedelta(days=10)),
        order[2:5],
        "with as_of: the latest started of those that hold",
    )
    _eq(
        await _query(store, scope=scope, order="start", limit=2, kinds=["fact"]),
        ["mem_st_c", future["id"]],
        "other conditions hold with the order",
    )
    _eq(await _query(store, visible_to=thread, order="recorded", limit=2), [tie_new["id"], told_late["id"]], "recorded")

    # Many, started in a shuffled order: the newest `limit` by start is exact, not by recorded.
    many_scope = {"agent_id": AGENT, "user_id": "started-many"}
    starts = [(n * 7919) % 301 for n in range(301)]
    many = [
        _item(scope=many_scope, recorded_at=T0 + timedelta(seconds=n), valid_from=T0 + timedelta(hours=h))
        for n, h in enumerate(starts)
    ]
    await _add(store, *many)
    by_start = [i["id"] for i in sorted(many, key=lambda i: i["valid_from"])]
    _eq(await _query(store, scope=many_scope, order="start", limit=37), by_start[-37:], "the 37 latest started")
    _eq(await _query(store, within=many_scope, order="start", limit=1), by_start[-1:], "the latest started")
    _eq(await _query(store, scope=many_scope, order="start"), by_start, "all of them, by start")
    _fails(
        await store.query_items({"scope": scope, "order": "valid_from"}),
        "a bad order",
        InvalidArgumentError,
        "filter.order",
    )


# --- updates ------------------------------------------------------------------------------


@_case
async def case_update_items(store: MemoryItemAdapter) -> None:
    item = _item(valid_to=T0 + timedelta(days=1), metadata={"a": 1}, confidence=0.5)
    await _add(store, item)
    updated = unwrap(
        await store.update_items(
            [{"id": item["id"], "expected_version": 1, "status": "superseded", "valid_to": T0 + timedelta(days=2)}]
        )
    )
    _eq(len(updated), 1, "update_items returns the updated items")
    got = await _get(store, item["id"])
    _eq(got, updated[0], "the update is stored as returned")
    _eq((got.version, got.status, got.valid_to), (2, "superseded", T0 + timedelta(days=2)), "fields given change")
    _eq((got.value, got.metadata, got.confidence), (item["value"], {"a": 1}, 0.5), "fields not given stay")
    unwrap(await store.update_items([ItemUpdate(id=item["id"], expected_version=2, valid_to=None)]))
    reopened = await _get(store, item["id"])
    _eq((reopened.valid_to, reopened.version), (None, 3), "None clears a field (a state reopened)")
    unwrap(
        await store.update_items(
            [
                {
                    "id": item["id"],
                    "expected_version": 3,
                    "metadata": {"b": [2]},
                    "evidence": [{"entry_id": "e9", "thread_id": "t", "quote": "so"}],
                    "trust": "system",
                    "verified": True,
                    "confidence": 0.9,
                    "expired_at": T0,
                    "ends_at": T0,
                    "valid_from": T0 - timedelta(days=1),
                    "related_entity_ids": ["node_x"],
                }
            ]
        )
    )
    last = await _get(store, item["id"])
    _eq(last.metadata, {"b": [2]}, "metadata is replaced whole")
    _eq(
        (last.trust, last.verified, last.confidence, last.expired_at, last.ends_at, last.related_entity_ids),
        ("system", True, 0.9, T0, T0, ["node_x"]),
        "every changeable field changes",
    )
    _eq(last.evidence[0].thread_id, "t", "new evidence is stored whole")
    _eq(unwrap(await store.update_items([])), [], "updating nothing succeeds")


@_case
async def case_update_conflicts_change_nothing(store: MemoryItemAdapter) -> None:
    a, b = _item(), _item()
    await _add(store, a, b)
    unwrap(await store.update_items([{"id": b["id"], "expected_version": 1, "confidence": 0.4}]))
    result = await store.update_items(
        [
            {"id": a["id"], "expected_version": 1, "status": "stale"},
            {"id": b["id"], "expected_version": 1, "status": "stale"},
        ]
    )
    _fails(result, "an update at a version that moved on", ConflictError, b["id"])
    _eq((await _get(store, a["id"])).status, "active", "a batch with a conflict changes nothing")
    _eq((await _get(store, b["id"])).version, 2, "the conflicting item stays as it was")
    missing = await store.update_items(
        [{"id": a["id"], "expected_version": 1, "status": "stale"}, {"id": "mem_gone", "expected_version": 1}]
    )
    _fails(missing, "an update of a missing item", NotFoundError, "mem_gone")
    _eq((await _get(store, a["id"])).status, "active", "a batch with a missing item changes nothing")


@_case
async def case_update_sets_counters_only_when_given(store: MemoryItemAdapter) -> None:
    item = _item()
    await _add(store, item)
    count = getattr(store, "count_retrieved", None)
    if count is not None:
        unwrap(await count([item["id"]], T0))
    before = (await _get(store, item["id"])).times_retrieved
    unwrap(await store.update_items([{"id": item["id"], "expected_version": 1, "confidence": 0.3}]))
    _eq((await _get(store, item["id"])).times_retrieved, before, "an update without counters keeps them")
    at = T0 + timedelta(days=2, microseconds=5)
    unwrap(
        await store.update_items(
            [{"id": item["id"], "expected_version": 2, "times_retrieved": 9, "last_retrieved_at": at}]
        )
    )
    got = await _get(store, item["id"])
    _eq((got.times_retrieved, got.last_retrieved_at, got.version), (9, at, 3), "counters given are written")


@_case
async def case_concurrent_updates_one_wins(store: MemoryItemAdapter) -> None:
    item = _item()
    await _add(store, item)
    results = await asyncio.gather(
        *(
            store.update_items([{"id": item["id"], "expected_version": 1, "confidence": round(0.05 * n, 2)}])
            for n in range(1, 11)
        )
    )
    winners = [r for r in results if r.success]
    _eq(len(winners), 1, "of writers racing at one version, exactly one wins")
    for r in results:
        if not r.success:
            _true(r.error_type is not None and issubclass(r.error_type, ConflictError), f"losers conflict: {r.error}")
    got = await _get(store, item["id"])
    assert winners[0].data is not None
    _eq((got.version, got.confidence), (2, winners[0].data[0].confidence), "the winner's change is the one kept")


@_case
async def case_update_moves_the_entry_index(store: MemoryItemAdapter) -> None:
    item = _item(evidence=[{"entry_id": "e_old", "quote": "x"}, {"entry_id": "e_kept", "quote": "y"}])
    await _add(store, item)
    unwrap(
        await store.update_items(
            [
                {
                    "id": item["id"],
                    "expected_version": 1,
                    "evidence": [{"entry_id": "e_kept", "quote": "y"}, {"entry_id": "e_new", "quote": "z"}],
                }
            ]
        )
    )
    within = {"agent_id": AGENT}
    _eq(
        await _query(store, within=within, entry_ids=["e_old"]),
        [],
        "an item no longer quoting an entry is not found by it",
    )
    _eq(await _query(store, within=within, entry_ids=["e_new"]), [item["id"]], "new evidence is found")
    _eq(await _query(store, within=within, entry_ids=["e_kept"]), [item["id"]], "kept evidence is still found")


@_case
async def case_update_refuses_fixed_fields(store: MemoryItemAdapter) -> None:
    item = _item()
    await _add(store, item)
    for field, value in (("value", "other"), ("subject", "Bo"), ("scope", {"agent_id": "x"}), ("kind", "event")):
        _fails(
            await store.update_items([{"id": item["id"], "expected_version": 1, field: value}]),
            f"changing {field}",
            InvalidArgumentError,
            f"updates[0].{field}",
        )
    _fails(
        await store.update_items([{"id": item["id"], "expected_version": 1, "status": None}]),
        "clearing the status",
        InvalidArgumentError,
        "updates[0]",
    )
    _fails(
        await store.update_items([{"id": item["id"], "expected_version": 0}]),
        "a version below 1",
        InvalidArgumentError,
        "updates[0].expected_version",
    )
    _fails(
        await store.update_items([{"id": item["id"], "expected_version": 1, "status": "gone"}]),
        "an unknown status",
        InvalidArgumentError,
        "updates[0].status",
    )
    _eq((await _get(store, item["id"])).version, 1, "refused updates change nothing")


# --- deleting and counting ----------------------------------------------------------------


@_case
async def case_delete_items(store: MemoryItemAdapter) -> None:
    a = _item(evidence=[{"entry_id": "e_del", "quote": "q"}])
    b = _item()
    await _add(store, a, b)
    _eq(unwrap(await store.delete_items([a["id"], "mem_missing"])), 1, "delete_items counts what existed")
    _eq(unwrap(await store.get_items([a["id"]])), [], "a deleted item is gone")
    _eq(await _query(store, within={"agent_id": AGENT}, entry_ids=["e_del"]), [], "and found by none of its entries")
    _eq(await _query(store, scope={"agent_id": AGENT, "user_id": "ana"}), [b["id"]], "the others stay")
    _eq(unwrap(await store.delete_items([a["id"]])), 0, "deleting again deletes nothing")
    _eq(unwrap(await store.delete_items([])), 0, "deleting nothing succeeds")
    again = dict(a)
    await _add(store, again)
    _eq((await _get(store, a["id"])).id, a["id"], "a deleted item's id may be used again")


@_case
async def case_count_retrieved(store: MemoryItemAdapter) -> None:
    count = getattr(store, "count_retrieved", None)
    if count is None:
        return  # optional: MemoryItems falls back to reading and writing under its lock
    a, b = _item(), _item()
    await _add(store, a, b)
    first = T0 + timedelta(days=1)
    _eq(unwrap(await count([a["id"], b["id"], "mem_missing"], first)), 2, "count_retrieved counts existing items")
    _eq(unwrap(await count([a["id"]], first - timedelta(hours=1))), 1, "an earlier time is counted too")
    got = await _get(store, a["id"])
    _eq((got.times_retrieved, got.last_retrieved_at), (2, first), "last_retrieved_at never moves back")
    _eq(got.version, 1, "counting does not move the version")
    unwrap(await store.update_items([{"id": a["id"], "expected_version": 1, "status": "superseded"}]))
    _eq((await _get(store, a["id"])).times_retrieved, 2, "an update keeps the count")
    results = await asyncio.gather(*(count([b["id"]], first + timedelta(seconds=n)) for n in range(25)))
    _true(all(r.success for r in results), f"concurrent counts succeed: {[r.error for r in results if not r.success]}")
    counted = await _get(store, b["id"])
    _eq(counted.times_retrieved, 26, "concurrent counts are each counted once")
    _eq(counted.last_retrieved_at, first + timedelta(seconds=24), "the latest time wins")
    _fails(await count("mem_x"), "ids as a string", InvalidArgumentError, "ids")


# --- bad input and volume -----------------------------------------------------------------


@_case
async def case_bad_arguments_are_named(store: MemoryItemAdapter) -> None:
    scope = {"agent_id": AGENT}
    checks: list[tuple[MemoryResult[Any], str]] = [
        (await store.add_items("not a list"), "items"),  # type: ignore[arg-type]
        (await store.add_items([42]), "items[0]"),  # type: ignore[list-item]
        (await store.add_items([_item(scope={"user_id": "ana"})]), "items[0].scope.agent_id"),
        (await store.add_items([_item(scope={"agent_id": ""})]), "items[0].scope.agent_id"),
        (await store.add_items([_item(trust="rumour")]), "items[0].trust"),
        (await store.add_items([_item(value="   ")]), "items[0].value"),
        (await store.add_items([_item(value="x" * 10_001)]), "items[0].value"),
        (await store.add_items([_item(confidence=1.5)]), "items[0].confidence"),
        (await store.add_items([_item(recorded_at="yesterday")]), "items[0].recorded_at"),
        (await store.add_items([_item(unknown_field=1)]), "items[0].unknown_field"),
        (await store.add_items([_item(id="")]), "items[0].id"),
        (await store.get_items("mem_1"), "ids"),
        (await store.get_items([1]), "ids[0]"),  # type: ignore[list-item]
        (await store.query_items({}), "filter"),
        (await store.query_items({"scope": scope, "visible_to": scope}), "filter"),
        (await store.query_items({"scope": {"user_id": "ana"}}), "filter.scope.agent_id"),
        (await store.query_items({"scope": scope, "kinds": ["rumour"]}), "filter.kinds"),
        (await store.query_items({"scope": scope, "statuses": []}), "filter.statuses"),
        (await store.query_items({"scope": scope, "slots": []}), "filter.slots"),
        (await store.query_items({"scope": scope, "slots": [{"attribute": "city"}]}), "filter.slots.0.subject"),
        (await store.query_items({"scope": scope, "limit": -1}), "filter.limit"),
        (await store.query_items({"scope": scope, "as_of": "now"}), "filter.as_of"),
        (await store.query_items("scope"), "filter"),  # type: ignore[arg-type]
        (await store.update_items([{"expected_version": 1}]), "updates[0].id"),
        (await store.delete_items(None), "ids"),  # type: ignore[arg-type]
        (await store.add_items([_item(value="bad \ud800 text")]), "items[0].value"),
        (await store.add_items([_item(subject="\udfff")]), "items[0].subject"),
        (await store.add_items([_item(evidence=[{"entry_id": "e1", "quote": "q \ud800"}])]), "items[0].evidence.0"),
        (await store.add_items([_item(related_entity_ids=["ok", ""])]), "items[0].related_entity_ids"),
        (await store.add_items([_item(metadata={"k": 2**64})]), "items[0].metadata"),
        (await store.add_items([_item(times_retrieved=2**63)]), "items[0].times_retrieved"),
        (
            await store.add_items([_item(recorded_at=datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))))]),
            "items[0].recorded_at",
        ),
        (await store.query_items({"scope": scope, "limit": 2**63}), "filter.limit"),
        (
            await store.update_items([{"id": "mem_x", "expected_version": 1, "metadata": {"n": float("nan")}}]),
            "updates[0].metadata",
        ),
    ]
    for result, argument in checks:
        _fails(result, f"a bad '{argument}'", InvalidArgumentError, argument)
    _eq(await _query(store, within=scope), [], "bad input wrote nothing")


@_case
async def case_many_items(store: MemoryItemAdapter) -> None:
    scopes = [{"agent_id": AGENT, "user_id": f"u{n}"} for n in range(3)]
    batch = [_item(scope=scopes[n % 3], attribute=f"a{n % 7}") for n in range(1_200)]
    await _add(store, *batch)
    _eq(len(await _query(store, scope=scopes[1])), 400, "a scope's items among many")
    _eq(len(await _query(store, visible_to=scopes[2], slot={"subject": "ana", "attribute": "a3"})), 57, "a slot")
    slots = [{"subject": "ana", "attribute": f"a{n}"} for n in (1, 3, 5)]
    _eq(len(await _query(store, scope=scopes[0], slots=slots)), 171, "three slots in one query")
    wanted = [item["id"] for item in batch[::-1][:1_000]]
    _eq(await _ids(store.get_items(wanted)), wanted, "a thousand items by id, in the order asked")
    _eq(unwrap(await store.delete_items([item["id"] for item in batch])), 1_200, "and deleted at once")


__all__ = ["ItemConformanceCase", "memory_item_adapter_conformance_cases"]
