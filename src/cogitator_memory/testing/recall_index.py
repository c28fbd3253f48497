"""The conformance suite of recall indexes, written once and run against every store.

:func:`recall_index_conformance_cases` returns named cases; each takes a fresh, connected,
empty store that keeps a recall index (:class:`~cogitator_memory.index.RecallIndexAdapter`) and
raises ``AssertionError`` saying what differed when the store breaks the contract::

    @pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
    async def test_recall_index_conformance(case, store):
        await case.run(store)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import InvalidArgumentError
from ..index.base import COMMON_TERMS_FROM
from ..index.records import NO_USER, RecallCandidate
from ..result import MemoryResult, unwrap
from .cases import CaseList, NamedCase, expect, expect_equal


class RecallIndexConformanceCase(NamedCase[Any]):
    """One named check of the recall-index contract."""


_CASES = CaseList(RecallIndexConformanceCase)
_case = _CASES.case
_eq = expect_equal
_true = expect

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def recall_index_conformance_cases() -> list[RecallIndexConformanceCase]:
    """Every case of the recall-index contract, in a stable order."""
    return _CASES.cases()


def _rec(source: str, text: str, *, kind: str = "turn", minutes: int = 0, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": kind,
        "source_id": source,
        "text": text,
        "said_at": T0 + timedelta(minutes=minutes),
        "agent_id": "agent",
    }
    out.update(fields)
    return out


async def _put(store: Any, *records: dict[str, Any]) -> None:
    _eq(unwrap(await store.index_recall_records(list(records))), len(records), "records written")


def _ids(found: list[RecallCandidate]) -> list[str]:
    return [c.record.source_id for c in found]


async def _keyword(store: Any, query: str, **flt: Any) -> list[str]:
    limit = flt.pop("limit", 50)
    return _ids(unwrap(await store.recall_keyword(query, filter=flt or None, limit=limit)))


def _refused(result: MemoryResult[Any], argument: str, what: str) -> None:
    _true(not result.success, f"{what}: expected a failed result")
    _true(result.error_type is InvalidArgumentError, f"{what}: expected InvalidArgumentError, got {result.error_type}")
    _true(argument in str(result.error), f"{what}: the error should name {argument!r}: {result.error}")


# --- cases --------------------------------------------------------------------------------------


@_case
async def case_round_trip(store: Any) -> None:
    await _put(
        store,
        _rec(
            "e1",
            "I moved to Porto in May.",
            user_id="ana",
            thread_id="t1",
            role="user",
            name="Ana",
            seq=3,
            time_start=T0 - timedelta(days=30),
            time_end=T0 - timedelta(days=29),
            lineage=["e0"],
        ),
    )
    [got] = unwrap(await store.get_recall_records(["turn:e1"]))
    _eq(got.id, "turn:e1", "id")
    _eq(
        (got.kind, got.source_id, got.user_id, got.thread_id, got.role, got.name, got.seq),
        ("turn", "e1", "ana", "t1", "user", "Ana", 3),
        "fields",
    )
    _eq(got.text, "I moved to Porto in May.", "text")
    _eq(got.said_at, T0, "said_at")
    _eq((got.time_start, got.time_end), (T0 - timedelta(days=30), T0 - timedelta(days=29)), "named time")
    _eq(got.lineage, ["e0"], "lineage")
    _eq(got.status, "active", "status")
    _true("porto" in got.terms and "move" in got.terms, f"terms are the stemmed words: {got.terms}")
    _eq(unwrap(await store.get_recall_records(["turn:nope", "turn:e1"])), [got], "missing ids left out")


@_case
async def case_terms_are_kept_each_once_with_their_counts(store: Any) -> None:
    # every occurrence given (or made from the text): read back each once, in the order first said
    await _put(
        store,
        _rec("rep", "one", terms=["paint", "wall", "paint", "room", "paint"]),
        _rec("txt", "Painting the wall, painting the door."),
        _rec("cnt", "one", terms=["wall", "paint"], term_counts=[1, 1]),
    )
    got = {r.source_id: r for r in unwrap(await store.get_recall_records(["turn:rep", "turn:txt", "turn:cnt"]))}
    _eq((got["rep"].terms, got["rep"].term_counts), (["paint", "wall", "room"], [3, 1, 1]), "repeats counted")
    _eq(got["rep"].term_map(), {"paint": 3, "wall": 1, "room": 1}, "term_map")
    _eq(got["rep"].term_total, 5, "the length is every occurrence")
    _eq((got["txt"].terms, got["txt"].term_counts), (["paint", "wall", "door"], [2, 1, 1]), "from the text")
    _eq((got["cnt"].terms, got["cnt"].term_counts), (["wall", "paint"], [1, 1]), "counts given kept")
    # the counts are BM25's term frequencies: of two records of one length, more "paint" ranks first
    await _put(
        store,
        _rec("twice", "one", terms=["paint", "cat"], term_counts=[2, 1]),
        _rec("once", "one", terms=["paint", "cat", "dog"], term_counts=[1, 1, 1]),
    )
    found = unwrap(await store.recall_keyword("paint", limit=10))
    order = [c.source_id for c in (f.record for f in found)]
    _true(order.index("twice") < order.index("once"), f"ranked by counts: {order}")
    # counts that do not match the terms are refused, naming them, and nothing is written
    bads: tuple[tuple[dict[str, Any], str], ...] = (
        ({"terms": ["a", "b"], "term_counts": [1]}, "one count short"),
        ({"terms": ["a", "a"], "term_counts": [1, 1]}, "a term twice with counts"),
        ({"terms": ["a"], "term_counts": [0]}, "a count of 0"),
    )
    for bad, what in bads:
        result = await store.index_recall_records([_rec("ok", "fine"), _rec("bad", "x", **bad)])
        _refused(result, "term_counts" if "twice" not in what else "terms", what)
        _eq(unwrap(await store.get_recall_records(["turn:ok", "turn:bad"])), [], f"{what}: nothing written")


@_case
async def case_put_replaces_by_id(store: Any) -> None:
    await _put(store, _rec("e1", "I live in Lisbon"))
    await _put(store, _rec("e1", "I live in Porto", status="superseded"))
    _eq(await _keyword(store, "Lisbon"), [], "the old text is no longer found")
    _eq(await _keyword(store, "Porto"), ["e1"], "the new text is found")
    [got] = unwrap(await store.get_recall_records(["turn:e1"]))
    _eq(got.status, "superseded", "status replaced")
    _eq(unwrap(await store.count_recall_records()), 1, "one record")


@_case
async def case_keyword_stems_word_forms(store: Any) -> None:
    await _put(
        store,
        _rec("a", "I'm allergic to peanuts."),
        _rec("b", "She painted the kitchen last week."),
        _rec("c", "We talked about the weather."),
    )
    _eq(await _keyword(store, "allergies"), ["a"], "allergies finds allergic")
    _eq(await _keyword(store, "painting"), ["b"], "painting finds painted")
    _eq(await _keyword(store, "the"), [], "stopwords find nothing")


@_case
async def case_keyword_ranks_by_bm25(store: Any) -> None:
    await _put(
        store,
        _rec("both", "peanut butter sandwich"),
        _rec("one", "butter on toast"),
        _rec("other", "a sandwich for lunch"),
        _rec("none", "nothing to see"),
    )
    found = unwrap(await store.recall_keyword("peanut butter sandwich", limit=10))
    _eq(found[0].record.source_id, "both", "the record with every term first")
    _eq(sorted(_ids(found)), ["both", "one", "other"], "records holding none of the terms left out")
    scores = [c.score for c in found]
    _eq(scores, sorted(scores, reverse=True), "scores best first")
    _true(all(s > 0 for s in scores), "scores are positive")
    _eq(len(unwrap(await store.recall_keyword("peanut butter sandwich", limit=1))), 1, "limit")


@_case
async def case_keyword_ties_by_id(store: Any) -> None:
    await _put(store, _rec("b", "tulip garden"), _rec("a", "tulip garden"), _rec("c", "tulip garden"))
    _eq(await _keyword(store, "tulip"), ["a", "b", "c"], "equal scores in id order")


@_case
async def case_scope_isolates_users_agents_threads(store: Any) -> None:
    await _put(
        store,
        _rec("ana", "secret diary entry", user_id="ana", thread_id="ta"),
        _rec("bob", "secret diary entry", user_id="bob", thread_id="tb"),
        _rec("shared", "secret diary entry", thread_id="ts"),
        _rec("other-agent", "secret diary entry", user_id="ana", agent_id="other"),
        _rec("any-agent", "secret diary entry", user_id="ana", agent_id=None),
    )
    _eq(
        sorted(await _keyword(store, "diary", user_id="ana", agent_id="agent")),
        ["ana", "any-agent", "shared"],
        "ana sees hers and the shared ones, never bob's or another agent's",
    )
    _eq(sorted(await _keyword(store, "diary", user_id="bob", agent_id="agent")), ["bob", "shared"], "bob's view")
    _eq(sorted(await _keyword(store, "diary", thread_id="ta")), ["ana", "any-agent", "other-agent"], "by thread")
    _eq(len(await _keyword(store, "diary")), 5, "no filter, no scoping")
    _eq(unwrap(await store.count_recall_records(filter={"user_id": "bob"})), 2, "count in scope")


@_case
async def case_no_user_sees_only_the_shared_records(store: Any) -> None:
    await _put(
        store,
        _rec("ana", "secret diary entry", user_id="ana", thread_id="ta", minutes=1),
        _rec("bob", "secret diary entry", user_id="bob", minutes=2),
        _rec("shared", "secret diary entry", thread_id="ts", minutes=3),
        _rec("agent-wide", "secret diary entry", minutes=4),
    )
    _eq(
        sorted(await _keyword(store, "diary", user_id=NO_USER, agent_id="agent")),
        ["agent-wide", "shared"],
        "user_id=NO_USER: only what belongs to no user, asked inside the engine",
    )
    window = {"user_id": NO_USER}
    timed = unwrap(await store.recall_time(T0, T0 + timedelta(hours=1), filter=window, limit=10))
    _eq(sorted(_ids(timed)), ["agent-wide", "shared"], "the time channel keeps the same rule")
    _eq(unwrap(await store.count_recall_records(filter=window)), 2, "and so does a count")


@_case
async def case_kinds_and_statuses(store: Any) -> None:
    await _put(
        store,
        _rec("t", "city Lisbon", kind="turn"),
        _rec("i", "city Lisbon", kind="item", status="superseded", valid_from=T0, valid_to=T0 + timedelta(days=9)),
        _rec("f", "city Lisbon", kind="core_fact"),
        _rec("s", "city Lisbon", kind="item", status="stale"),
    )
    _eq(sorted(await _keyword(store, "Lisbon")), ["f", "i", "t"], "stale left out by default")
    _eq(await _keyword(store, "Lisbon", kinds=["item"]), ["i"], "kinds")
    _eq(sorted(await _keyword(store, "Lisbon", statuses=["stale"])), ["s"], "statuses")
    [item] = unwrap(await store.get_recall_records(["item:i"]))
    _eq((item.valid_from, item.valid_to), (T0, T0 + timedelta(days=9)), "the interval it held")


@_case
async def case_time_range(store: Any) -> None:
    await _put(
        store,
        _rec("before", "x", minutes=-10),
        _rec("start", "x", minutes=0),
        _rec("mid", "x", minutes=30),
        _rec("end", "x", minutes=60),
        _rec("named", "x", minutes=500, time_start=T0 + timedelta(minutes=20), time_end=T0 + timedelta(minutes=25)),
        _rec("moment", "x", minutes=600, time_start=T0 + timedelta(minutes=5)),
        _rec("named-out", "x", minutes=700, time_start=T0 + timedelta(minutes=60), time_end=T0 + timedelta(minutes=90)),
        _rec("bob", "x", minutes=10, user_id="bob"),
    )
    found = unwrap(await store.recall_time(T0, T0 + timedelta(minutes=60), filter={"user_id": "ana"}))
    _eq(_ids(found), ["moment", "named", "mid", "start"], "said in [start, end) or naming a time in it, newest first")
    _eq(found[0].score, (T0 + timedelta(minutes=600)).timestamp(), "the score is when it was said")
    limited = unwrap(await store.recall_time(T0, T0 + timedelta(minutes=60), filter={"user_id": "ana"}, limit=2))
    _eq(_ids(limited), ["moment", "named"], "limit keeps the newest")


@_case
async def case_deletes(store: Any) -> None:
    await _put(
        store,
        _rec("e1", "alpha words", user_id="ana", thread_id="t1"),
        _rec("e2", "alpha words", user_id="ana", thread_id="t2"),
        _rec("e3", "alpha words", user_id="bob", thread_id="t3"),
        _rec("e4", "alpha words", kind="item", user_id="bob"),
        _rec("e4", "alpha words", kind="graph_fact", user_id="bob"),
    )
    _eq(unwrap(await store.delete_recall_records(["turn:e1", "turn:nope"])), 1, "by id")
    _eq(unwrap(await store.delete_recall_scope(thread_id="t2")), 1, "by thread")
    _eq(unwrap(await store.delete_recall_sources(["e4"])), 2, "by source, every kind")
    _eq(await _keyword(store, "alpha"), ["e3"], "what is left")
    _eq(unwrap(await store.delete_recall_scope(user_id="bob")), 1, "by user")
    _eq(unwrap(await store.count_recall_records(filter={"statuses": ["active", "superseded", "stale"]})), 0, "empty")
    _eq(await _keyword(store, "alpha"), [], "nothing found once deleted")


@_case
async def case_put_is_all_or_nothing(store: Any) -> None:
    result = await store.index_recall_records(
        [_rec("ok", "fine text"), _rec("bad", "text", said_at=datetime(2026, 1, 1))]
    )
    _refused(result, "records[1].said_at", "a naive datetime")
    _eq(unwrap(await store.count_recall_records()), 0, "nothing written")
    twice = await store.index_recall_records([_rec("x", "a"), _rec("x", "b")])
    _refused(twice, "records[1].id", "an id given twice")
    _refused(await store.index_recall_records([_rec("x", "a", kind="poem")]), "records[0].kind", "an unknown kind")
    _refused(await store.index_recall_records([_rec("", "a")]), "records[0].source_id", "an empty source id")
    _refused(
        await store.index_recall_records([{**_rec("x", "a"), "id": "item:x"}]), "records[0].id", "an id not its kind's"
    )
    _eq(unwrap(await store.count_recall_records()), 0, "still nothing written")


@_case
async def case_bad_arguments_are_named(store: Any) -> None:
    _refused(await store.recall_keyword("x", limit=0), "limit", "limit 0")
    _refused(await store.recall_keyword("x", limit=10_001), "limit", "limit too large")
    _refused(await store.recall_keyword(42), "query", "a query that is not text")
    _refused(await store.recall_keyword("x", filter={"user_id": ""}), "filter.user_id", "an empty user id")
    _refused(await store.recall_keyword("x", filter={"kinds": []}), "filter.kinds", "no kinds")
    _refused(await store.recall_keyword("x", filter={"colour": "red"}), "filter.colour", "an unknown key")
    _refused(await store.recall_time(T0, T0), "end", "an empty range")
    _refused(await store.recall_time(datetime(2026, 1, 1), T0), "start", "a naive start")
    _refused(await store.delete_recall_scope(), "thread_id", "no scope to delete")
    _refused(await store.delete_recall_scope(thread_id="a", user_id="b"), "thread_id", "two scopes to delete")
    _refused(await store.get_recall_records("turn:x"), "ids", "one string for a list")


@_case
async def case_state(store: Any) -> None:
    _eq(unwrap(await store.get_recall_state("indexer")), None, "unset")
    unwrap(await store.set_recall_state("indexer", "2026-03-01T09:00:00+00:00"))
    unwrap(await store.set_recall_state("indexer", "later"))
    _eq(unwrap(await store.get_recall_state("indexer")), "later", "replaced")
    _refused(await store.set_recall_state("", "x"), "key", "an empty key")


@_case
async def case_common_terms_are_not_searched_in_a_large_index(store: Any) -> None:
    common = [_rec(f"c{i:05d}", f"hello there number {i}") for i in range(COMMON_TERMS_FROM)]
    for start in range(0, len(common), 1000):
        unwrap(await store.index_recall_records(common[start : start + 1000]))
    await _put(store, _rec("rare", "hello zebra"))
    found = await _keyword(store, "hello zebra", limit=5)
    _eq(found, ["rare"], "a term more than half the records hold is dropped when a rarer one is asked")
    _eq(len(await _keyword(store, "hello", limit=5)), 5, "alone, a common term is still searched")


@_case
async def case_a_term_past_the_postings_budget_reads_the_records_indexed_last(store: Any) -> None:
    had = store.postings_budget
    store.postings_budget = 20
    try:
        # equal scores (one term, equal lengths): ties by id, so the oldest ids come first
        ana = [_rec(f"z{i:02d}", f"zebra number{i}", user_id="ana", minutes=i) for i in range(30)]
        for start in range(0, 30, 10):  # indexed in three writes, oldest first
            await _put(store, *ana[start : start + 10])
        _eq(
            await _keyword(store, "zebra", user_id="ana", limit=5),
            ["z10", "z11", "z12", "z13", "z14"],
            "a term held past the budget: only the postings of the 20 records indexed last are scored",
        )
        _eq(
            await _keyword(store, "zebra number3", user_id="ana", limit=5),
            ["z03"],
            "a rarer term in the query is searched instead (the budget's usual rule)",
        )
        await _put(store, ana[0])
        _eq(
            await _keyword(store, "zebra", user_id="ana", limit=5),
            ["z00", "z11", "z12", "z13", "z14"],
            "a record written again counts as indexed last",
        )
        await _put(store, *[_rec(f"y{i:02d}", f"zebra other{i}", user_id="bo", minutes=100 + i) for i in range(20)])
        _eq(
            await _keyword(store, "zebra", user_id="ana", limit=5),
            ["z00", "z01", "z02", "z03", "z04"],
            "fewer than limit records in scope among the postings indexed last: every posting is read",
        )
        _eq(len(await _keyword(store, "zebra", limit=60)), 50, "out of scope, every record")
        # the same for a search of other kinds than turns (the facts of a user who keeps many)
        facts = [
            _rec(f"f{i:02d}", f"zebra fact{i}", kind="graph_fact", user_id="cy", minutes=200 + i) for i in range(30)
        ]
        for start in range(0, 30, 10):
            await _put(store, *facts[start : start + 10])
        _eq(
            await _keyword(store, "zebra", user_id="cy", kinds=["graph_fact"], limit=5),
            ["f10", "f11", "f12", "f13", "f14"],
            "other kinds: only the postings of the 20 records indexed last are scored",
        )
        _eq(
            await _keyword(store, "zebra", user_id="cy", kinds=["graph_fact"], limit=25),
            [f"f{i:02d}" for i in range(25)],
            "other kinds, fewer than limit among them: every posting is read",
        )
    finally:
        store.postings_budget = had


@_case
async def case_records_returned_are_copies(store: Any) -> None:
    await _put(store, _rec("e1", "copy me", lineage=["a"]))
    [got] = unwrap(await store.get_recall_records(["turn:e1"]))
    got.lineage.append("b")
    got.text = "changed"
    [again] = unwrap(await store.get_recall_records(["turn:e1"]))
    _eq((again.text, again.lineage), ("copy me", ["a"]), "the store's record unchanged")


def _item(item_id: str, value: str, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": item_id,
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": value,
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": "agent", "user_id": "ana"},
        "recorded_at": T0,
    }
    out.update(fields)
    return out


@_case
async def case_items_are_indexed_as_they_are_written(store: Any) -> None:
    if not callable(getattr(store, "add_items", None)):
        return
    unwrap(
        await store.add_items(
            [
                _item("mem_lisbon", "Lisbon"),
                _item("mem_core", "Porto", scope={"agent_id": "core", "user_id": "ana"}, attribute="home_city"),
                _item("mem_maybe", "Madrid", status="suggested"),
            ]
        )
    )
    found = unwrap(await store.recall_keyword("Lisbon Porto Madrid", filter={"user_id": "ana"}))
    _eq(
        sorted((c.record.kind, c.record.source_id) for c in found),
        [("core_fact", "mem_core"), ("item", "mem_lisbon")],
        "records of the items, suggested ones left out",
    )
    [lisbon] = [c.record for c in found if c.record.source_id == "mem_lisbon"]
    _eq((lisbon.agent_id, lisbon.user_id, lisbon.status), ("agent", "ana", "active"), "an item's scope and status")
    [core] = [c.record for c in found if c.record.source_id == "mem_core"]
    _eq(core.agent_id, None, "a core fact is shared by every agent of the user")
    _eq(await _keyword(store, "Lisbon", user_id="bo"), [], "another user's items are not seen")
    [stored] = unwrap(await store.get_items(["mem_lisbon"]))
    end = T0 + timedelta(days=3)
    unwrap(
        await store.update_items(
            [{"id": "mem_lisbon", "expected_version": stored.version, "status": "superseded", "valid_to": end}]
        )
    )
    [after] = unwrap(await store.get_recall_records(["item:mem_lisbon"]))
    _eq((after.status, after.valid_to), ("superseded", end), "an update reaches the record")
    unwrap(await store.delete_items(["mem_lisbon", "mem_core"]))
    _eq(await _keyword(store, "Lisbon Porto"), [], "deleted items leave the index")


@_case
async def case_deleting_or_redacting_a_turn_takes_its_record(store: Any) -> None:
    if not callable(getattr(store, "add_entry", None)):
        return
    thread = unwrap(await store.create_thread("agent", {"user_id": "ana"}))
    said = []
    for text in ("my locker code is walrus", "my pin is narwhal", "the door code is puffin"):
        entry = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": text}}))
        said.append(entry)
    await _put(
        store,
        *(_rec(e.id, e.message.text, user_id="ana", thread_id=thread.id) for e in said),
        _rec("other", "walrus narwhal puffin", user_id="ana", thread_id="elsewhere"),
    )
    unwrap(await store.delete_entry(said[0].id))
    _eq(await _keyword(store, "walrus", thread_id=thread.id, kinds=["turn"]), [], "a deleted turn's record is gone")
    unwrap(await store.redact_entry(said[1].id, {"at": T0}))
    _eq(await _keyword(store, "narwhal", thread_id=thread.id, kinds=["turn"]), [], "a redacted turn's record is gone")
    unwrap(await store.delete_thread(thread.id))
    _eq(await _keyword(store, "walrus narwhal puffin"), ["other"], "a deleted thread's records are gone, others stay")


@_case
async def case_graph_nodes_are_indexed_as_they_are_written(store: Any) -> None:
    if not callable(getattr(store, "add_nodes", None)):
        return
    [fact] = unwrap(
        await store.add_nodes(
            [
                {
                    "type": "fact",
                    "name": "Ana is allergic to peanuts",
                    "scope": {"agent_id": "agent", "user_id": "ana"},
                }
            ]
        )
    )
    found = unwrap(await store.recall_keyword("allergies", filter={"user_id": "ana", "kinds": ["graph_fact"]}))
    _eq(
        [(c.record.source_id, c.record.text) for c in found],
        [(fact.id, "Ana is allergic to peanuts")],
        "a fact node's record",
    )
    _eq(await _keyword(store, "allergies", user_id="bo"), [], "not another user's")
    unwrap(await store.update_node(fact.id, {"description": "Ana is allergic to cashews"}))
    _eq(await _keyword(store, "cashews"), [fact.id], "an update reaches the record")
    unwrap(await store.delete_nodes([fact.id]))
    _eq(await _keyword(store, "cashews allergies"), [], "a deleted node leaves the index")


async def _graph_records(store: Any, query: str, **flt: Any) -> list[tuple[str, str]]:
    found = unwrap(await store.recall_keyword(query, filter={"kinds": ["graph_fact"], **flt}, limit=50))
    return sorted((c.record.source_id, c.record.text) for c in found)


def _node(name: str, user: str = "ana", **fields: Any) -> dict[str, Any]:
    return {"type": "person", "name": name, "scope": {"agent_id": "agent", "user_id": user}, **fields}


@_case
async def case_graph_edges_are_indexed_as_they_are_written(store: Any) -> None:
    if not callable(getattr(store, "add_edges", None)):
        return
    ana, porto, bob = unwrap(
        await store.add_nodes([_node("Ana"), _node("Porto", type="location"), _node("Bob", user="bob")])
    )
    scope = {"agent_id": "agent", "user_id": "ana"}
    [lives] = unwrap(
        await store.add_edges(
            [
                {
                    "source_id": ana.id,
                    "target_id": porto.id,
                    "type": "lives_in",
                    "scope": scope,
                    "evidence": [{"entry_id": "e7", "quote": "I live in Porto"}],
                }
            ]
        )
    )
    _eq(await _graph_records(store, "lives", user_id="ana"), [(lives.id, "Ana lives in Porto")], "an edge's record")
    [record] = unwrap(await store.get_recall_records([f"graph_fact:{lives.id}"]))
    _eq((record.agent_id, record.user_id, record.role, record.lineage), ("agent", "ana", "lives_in", ["e7"]), "fields")
    _eq(await _graph_records(store, "lives", user_id="bob"), [], "not another user's")
    unwrap(await store.update_edge(lives.id, {"label": "moved to", "properties": {"since": "May 2024"}}))
    _eq(
        await _graph_records(store, "moved"),
        [(lives.id, "Ana moved to Porto; since: May 2024")],
        "a change of the edge reaches its record",
    )
    unwrap(await store.update_node(porto.id, {"name": "Oporto"}))
    _eq(
        [text for source, text in await _graph_records(store, "moved") if source == lives.id],
        ["Ana moved to Oporto; since: May 2024"],
        "renaming a node rewrites the records of its edges",
    )
    unwrap(await store.delete_edge(lives.id))
    _eq(await _graph_records(store, "moved"), [], "a deleted edge leaves the index")
    [knows] = unwrap(
        await store.add_edges([{"source_id": ana.id, "target_id": porto.id, "type": "visited", "scope": scope}])
    )
    _eq([s for s, _ in await _graph_records(store, "visited")], [knows.id], "a second edge")
    unwrap(await store.delete_nodes([porto.id]))
    _eq(await _graph_records(store, "visited"), [], "an edge deleted with its node leaves the index")
    _eq(unwrap(await store.get_recall_records([f"graph_fact:{knows.id}"])), [], "its record is gone")
    _eq(bob.name, "Bob", "bob's node")


@_case
async def case_merged_and_cleared_graph_records_follow(store: Any) -> None:
    if not callable(getattr(store, "merge_nodes", None)):
        return
    ana, anna, lisbon = unwrap(
        await store.add_nodes([_node("Ana Silva"), _node("Anna"), _node("Lisbon", type="location")])
    )
    scope = {"agent_id": "agent", "user_id": "ana"}
    [edge] = unwrap(
        await store.add_edges([{"source_id": anna.id, "target_id": lisbon.id, "type": "works_in", "scope": scope}])
    )
    _eq(await _graph_records(store, "works"), [(edge.id, "Anna works in Lisbon")], "before the merge")
    unwrap(await store.merge_nodes(ana.id, [anna.id]))
    found = await _graph_records(store, "works")
    _eq([text for _, text in found], ["Ana Silva works in Lisbon"], "the moved edge says the merged node's name")
    _eq(unwrap(await store.get_recall_records([f"graph_fact:{anna.id}"])), [], "the merged-away node's record is gone")
    unwrap(await store.clear_graph("agent"))
    _eq(await _graph_records(store, "works Lisbon Ana"), [], "a cleared graph leaves nothing in the index")


@_case
async def case_clearing_a_graph_takes_every_record_of_its_facts(store: Any) -> None:
    # A graph-fact record whose node or edge is gone (what an edge written while the graph is
    # cleared would leave, whatever its status) goes with the clear; another agent's stays.
    if not callable(getattr(store, "clear_graph", None)):
        return
    unwrap(await store.add_nodes([_node("Ana"), _node("Porto")]))
    [other] = unwrap(await store.add_nodes([{**_node("Bob"), "scope": {"agent_id": "other", "user_id": "bob"}}]))
    orphans = [
        _rec("node_gone", "Walrus keeper", kind="graph_fact"),
        _rec("edge_gone", "Ana visited the walrus", kind="graph_fact", status="stale"),
    ]
    await _put(store, *orphans)
    unwrap(await store.clear_graph("agent"))
    every = {"kinds": ["graph_fact"], "statuses": ["active", "superseded", "stale"]}
    _eq(unwrap(await store.count_recall_records(filter={**every, "agent_id": "agent"})), 0, "the agent's")
    _eq(
        [r.source_id for r in unwrap(await store.get_recall_records([f"graph_fact:{other.id}"]))],
        [other.id],
        "another agent's node keeps its record",
    )


_ANA_FILES = {"scope": {"agent_id": "agent", "user_id": "ana"}}
_ANA = {"agent_id": "agent", "user_id": "ana"}
_NOTES = "# Health\nAna is allergic to peanuts.\n\n## Home\nShe lives in Lisbon.\n"


async def _file_sections(store: Any, query: str, **flt: Any) -> list[str]:
    found = unwrap(await store.recall_keyword(query, filter={"kinds": ["file_section"], **flt}, limit=50))
    return sorted(c.record.text for c in found)


@_case
async def case_memory_file_sections_are_indexed_as_they_are_written(store: Any) -> None:
    if not callable(getattr(store, "add_file_versions", None)):
        return
    from ..files.service import MemoryFiles

    files = MemoryFiles(adapter=store)
    await files.run(_ANA_FILES, {"command": "create", "path": "/memories/ana.md", "file_text": _NOTES})
    _eq(
        await _file_sections(store, "allergies", user_id="ana"),
        ["/memories/ana.md\n# Health\nAna is allergic to peanuts."],
        "a section found by its words (stemmed)",
    )
    _eq(
        await _file_sections(store, "Lisbon"),
        ["/memories/ana.md\n## Home\nShe lives in Lisbon."],
        "each heading starts a section",
    )
    _eq(await _file_sections(store, "Lisbon peanuts", user_id="bob"), [], "not another user's")
    found = unwrap(await store.recall_keyword("Lisbon", filter={"kinds": ["file_section"]}))
    record = found[0].record
    _eq((record.agent_id, record.user_id, record.thread_id, record.role), ("agent", "ana", None, "model"), "fields")
    await files.run(
        _ANA_FILES,
        {"command": "str_replace", "path": "/memories/ana.md", "old_str": "in Lisbon", "new_str": "in Porto"},
    )
    _eq(await _file_sections(store, "Lisbon"), [], "an edit replaces the section's record")
    _eq(await _file_sections(store, "Porto"), ["/memories/ana.md\n## Home\nShe lives in Porto."], "the new text")
    await files.put(_ANA_FILES, "/memories/ana.md", "Plain notes: tulips.")
    _eq(await _file_sections(store, "Porto peanuts"), [], "sections past the new count are deleted")
    _eq(await _file_sections(store, "tulips"), ["/memories/ana.md\nPlain notes: tulips."], "no heading: one section")
    await files.run(_ANA_FILES, {"command": "rename", "old_path": "/memories/ana.md", "new_path": "/memories/b.md"})
    _eq(await _file_sections(store, "tulips"), ["/memories/b.md\nPlain notes: tulips."], "a rename moves the records")
    await files.run(_ANA_FILES, {"command": "delete", "path": "/memories/b.md"})
    _eq(await _file_sections(store, "tulips"), [], "a deleted file leaves the index")
    _eq(unwrap(await store.count_recall_records(filter={"kinds": ["file_section"]})), 0, "no file record left")


@_case
async def case_redacting_a_memory_file_takes_its_records(store: Any) -> None:
    if not callable(getattr(store, "redact_file_versions", None)):
        return
    from ..files.service import MemoryFiles

    files = MemoryFiles(adapter=store)
    await files.run(_ANA_FILES, {"command": "create", "path": "/memories/pin.md", "file_text": "PIN is walrus"})
    await files.run(_ANA_FILES, {"command": "create", "path": "/memories/other.md", "file_text": "walrus facts"})
    _eq(len(await _file_sections(store, "walrus")), 2, "both files found")
    redacted = await files.redact(_ANA_FILES, ["/memories/pin.md"])
    _eq(len(redacted), 1, "one version redacted")
    _eq(await _file_sections(store, "walrus"), ["/memories/other.md\nwalrus facts"], "the redacted file's text is gone")


@_case
async def case_every_record_is_listed_once_in_pages(store: Any) -> None:
    records = [_rec(f"s{n:03d}", f"word{n}", kind=("turn", "item", "graph_fact")[n % 3]) for n in range(130)]
    unwrap(await store.index_recall_records(records))
    seen: list[str] = []
    cursor = None
    for _ in range(1000):
        page = unwrap(await store.list_recall_records(cursor=cursor, limit=7))
        _true(len(page.records) <= 7 * 4, f"a page holds about its limit: {len(page.records)}")
        seen += [r.id for r in page.records]
        cursor = page.next_cursor
        if cursor is None:
            break
    _eq(sorted(seen), sorted(f"{r['kind']}:{r['source_id']}" for r in records), "every record, each once")
    [got] = [r for r in unwrap(await store.list_recall_records(limit=500)).records if r.id == "turn:s000"]
    _eq((got.text, got.agent_id), ("word0", "agent"), "whole records")
    _refused(await store.list_recall_records(limit=0), "limit", "limit 0")
    _refused(await store.list_recall_records(cursor=42), "cursor", "a cursor that is not text")


async def _prune_all(store: Any, limit: int = 3) -> tuple[int, int]:
    checked = removed = 0
    cursor = None
    while True:
        page = unwrap(await store.prune_recall_records(cursor=cursor, limit=limit))
        checked, removed, cursor = checked + page.checked, removed + page.removed, page.next_cursor
        if cursor is None:
            return checked, removed


@_case
async def case_prune_removes_the_records_of_sources_gone(store: Any) -> None:
    # Records left by a writer that kept no index: their sources were deleted without them.
    if not callable(getattr(store, "add_entry", None)):
        return
    thread = unwrap(await store.create_thread("agent", {"user_id": "ana"}))
    entry = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
    kept = [_rec(entry.id, "walrus in a thread that is there", user_id="ana", thread_id=thread.id)]
    stale = [_rec("e-gone", "walrus of a deleted thread", user_id="ana", thread_id="thread-gone")]
    if callable(getattr(store, "add_items", None)):
        [item] = unwrap(await store.add_items([_item("mem_kept", "walrus")]))
        kept.append(_rec(item.id, "walrus item", kind="item", user_id="ana"))
        stale.append(_rec("mem_gone", "walrus item deleted", kind="item", user_id="ana"))
        stale.append(_rec("mem_gone", "walrus core fact deleted", kind="core_fact", user_id="ana"))
    if callable(getattr(store, "add_edges", None)):
        ana, porto = unwrap(await store.add_nodes([_node("Ana walrus"), _node("Porto")]))
        [edge] = unwrap(
            await store.add_edges([{"source_id": ana.id, "target_id": porto.id, "type": "likes", "scope": _ANA}])
        )
        kept += [_rec(ana.id, "Ana walrus", kind="graph_fact"), _rec(edge.id, "Ana likes walrus", kind="graph_fact")]
        stale += [_rec("node_gone", "walrus node", kind="graph_fact"), _rec("edge_gone", "walrus", kind="graph_fact")]
    if callable(getattr(store, "add_file_versions", None)):
        from ..files.service import MemoryFiles

        files = MemoryFiles(adapter=store)
        await files.run(
            _ANA_FILES, {"command": "create", "path": "/memories/w.md", "file_text": "# A\nwalrus\n# B\nmore"}
        )
        [section] = [c.record for c in unwrap(await store.recall_keyword("walrus", filter={"kinds": ["file_section"]}))]
        gone_path = {**section.model_dump(), "source_id": "file-gone#0", "text": "/memories/gone.md\nwalrus"}
        past_end = {**section.model_dump(), "source_id": section.source_id[:-1] + "7", "text": section.text}
        stale += [
            {k: v for k, v in r.items() if k not in ("id", "terms", "term_counts")} for r in (gone_path, past_end)
        ]
    await _put(store, *kept, *stale)
    before = unwrap(await store.count_recall_records(filter={"statuses": ["active", "superseded", "stale"]}))
    checked, removed = await _prune_all(store)
    _eq(checked, before, "every record checked once")
    _eq(removed, len(stale), "the records of sources gone removed")
    left = {c.record.source_id for c in unwrap(await store.recall_keyword("walrus", limit=100))}
    _eq(left & {r["source_id"] for r in stale if r["source_id"] not in {k["source_id"] for k in kept}}, set(), "gone")
    _true({r["source_id"] for r in kept} <= left, f"the records of sources held stay: {sorted(left)}")
    _eq(await _prune_all(store), (before - len(stale), 0), "a second pass removes nothing")


@_case
async def case_an_edge_added_to_a_node_being_deleted_keeps_no_record(store: Any) -> None:
    # Two writers on one node, interleaved as a graph write runs (its read of the edges it
    # deletes, the engine's write, then the index): the edge another writer adds to a node
    # being deleted goes with the node, and so does its record, whichever writes it last.
    if not callable(getattr(store, "_write_graph", None)):
        return
    from ..graph.base import GraphChanges
    from ..graph.checks import check_edge

    ana, porto, lisbon = unwrap(await store.add_nodes([_node("Ana"), _node("Porto"), _node("Lisbon")]))
    # 1. the edge and its record are written between the deleting writer's read and its write
    deleting = GraphChanges(delete_nodes=[porto.id])
    plan = await store._recall_graph_plan(deleting)
    [late] = unwrap(
        await store.add_edges([{"source_id": ana.id, "target_id": porto.id, "type": "visited", "scope": _ANA}])
    )
    _eq(len(unwrap(await store.get_recall_records([f"graph_fact:{late.id}"]))), 1, "the late edge is indexed")
    await store._write_graph(deleting)
    await store._recall_graph(deleting, plan)
    _eq(unwrap(await store.get_edge(late.id)), None, "the edge went with its node")
    _eq(unwrap(await store.get_recall_records([f"graph_fact:{late.id}"])), [], "and so did its record")
    # 2. the edge is written before the node's deletion, its record after it
    edge = check_edge("edge", {"source_id": ana.id, "target_id": lisbon.id, "type": "moved_to", "scope": _ANA})
    adding = GraphChanges(add_edges=[edge])
    plan = await store._recall_graph_plan(adding)
    await store._write_graph(adding)
    _eq(unwrap(await store.delete_nodes([lisbon.id])), [lisbon.id], "the other writer deletes the node")
    await store._recall_graph(adding, plan)
    _eq(unwrap(await store.get_recall_records([f"graph_fact:{edge.id}"])), [], "a record written late is taken out")
    _eq(await _graph_records(store, "visited moved Porto Lisbon"), [], "nothing of either edge is found")
    [record] = unwrap(await store.get_recall_records([f"graph_fact:{ana.id}"]))
    _eq(record.text, "Ana", "the node that stays keeps its record")
    # 3. a node updated before its deletion, its record written after it
    stored = unwrap(await store.get_node(ana.id))
    renamed = stored.model_copy(update={"name": "Ana Silva", "version": stored.version + 1})
    updating = GraphChanges(put_nodes=[renamed])
    plan = await store._recall_graph_plan(updating)
    await store._write_graph(updating)
    _eq(unwrap(await store.delete_nodes([ana.id])), [ana.id], "the other writer deletes the node")
    await store._recall_graph(updating, plan)
    _eq(unwrap(await store.get_recall_records([f"graph_fact:{ana.id}"])), [], "a node's record written late goes")


_Case = Callable[[Any], Awaitable[None]]

__all__ = ["RecallIndexConformanceCase", "recall_index_conformance_cases"]
