"""Conformance cases of what callers hand a thread store: values it must refuse, ids it must
keep, new roots, and thread ids taken the same way by every call.

They are part of :func:`~cogitator_memory.testing.memory_adapter_conformance_cases`, after those
of :mod:`.conformance`, written with the same helpers (:mod:`.thread_cases`); they live apart only
to keep each module of the suite a readable size.
"""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from ..errors import ConflictError, InvalidArgumentError, MemoryStoreError, NotFoundError
from ..result import MemoryResult, unwrap
from ..threads.base import BaseMemoryAdapter, MemoryAdapter
from ..threads.records import Message, NewMemoryEntry
from ..threads.values import MAX_JSON_DEPTH
from .cases import CaseList
from .thread_cases import T0, ConformanceCase, _all_entries, _check_tree, _eq, _fails, _say, _texts, _thread, _true

_CASES = CaseList(ConformanceCase)
_case = _CASES.case


def input_cases() -> list[ConformanceCase]:
    """The cases of this module, in a stable order (part of
    :func:`~cogitator_memory.testing.memory_adapter_conformance_cases`)."""
    return _CASES.cases()


def _nested(levels: int) -> Any:
    """A value of ``levels`` lists inside one another (``_nested(2) == [["bottom"]]``)."""
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def _cursor(raw: object) -> str:
    """A cursor as ``list_threads`` encodes one, around ``raw`` (for tampered cursors)."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")


async def _unchanged(store: MemoryAdapter, thread_id: str, entry_ids: list[str], metadata: dict[str, Any]) -> None:
    """The thread holds exactly ``entry_ids`` (its leaf on the last) and ``metadata``."""
    entries = await _all_entries(store, thread_id)
    _eq([e.id for e in entries], entry_ids, "refused writes wrote no entry")
    thread = unwrap(await store.get_thread(thread_id))
    assert thread is not None
    _eq(thread.active_leaf_id, entry_ids[-1] if entry_ids else None, "refused writes left the active leaf")
    _eq(thread.metadata, metadata, "refused writes left the thread's metadata")


# --- values a store cannot keep -------------------------------------------------------------


@_case
async def case_values_nested_too_deep_are_refused_on_write(store: MemoryAdapter) -> None:
    """A value nested deeper than ``MAX_JSON_DEPTH`` is refused when written, naming the argument,
    so that no read of the thread can fail on it afterwards; the deepest allowed value is kept
    and read back by every read."""
    thread = await _thread(store, a=1)
    kept = await _say(store, thread.id, "kept")
    in_dict = {"x": _nested(MAX_JSON_DEPTH)}  # the dict is one level more: one too many
    too_deep = _nested(MAX_JSON_DEPTH + 1)
    reply = {"role": "assistant", "content": "x"}
    refused: list[tuple[dict[str, Any], str]] = [
        ({"message": reply, "metadata": in_dict}, "entry.metadata"),
        ({"message": reply, "metadata": {"x": _nested(1200)}}, "entry.metadata"),  # beyond Python's recursion
        ({"message": reply, "tool_results": [{"call_id": "c1", "result": too_deep}]}, "entry.tool_results.0.result"),
        (
            {"message": reply, "tool_calls": [{"id": "c1", "name": "f", "arguments": in_dict}]},
            "entry.tool_calls.0.arguments",
        ),
        (
            {"message": {**reply, "tool_calls": [{"id": "c1", "name": "f", "arguments": in_dict}]}},
            "entry.message.tool_calls.0.arguments",
        ),
        (
            {"message": reply, "tool_calls": [{"id": "c1", "name": "f", "replay": in_dict}]},
            "entry.tool_calls.0.replay",
        ),
        ({"type": "custom", "event": {"name": "n", "data": in_dict}}, "entry.event.data"),
        ({"type": "interrupt", "event": {"reason": "pause", "state": in_dict}}, "entry.event.state"),
        ({"type": "label", "event": {"label": "here", "extra": too_deep}}, "entry.event.extra"),
    ]
    for fields, argument in refused:
        result = await store.add_entry({"thread_id": thread.id, **fields})
        _fails(result, f"a value nested too deep in {argument}", InvalidArgumentError, f"'{argument}'")
        _true(str(MAX_JSON_DEPTH) in (result.error or ""), f"the error names the limit: {result.error}")
    _fails(
        await store.create_thread("agent-1", in_dict), "deep metadata of a new thread", InvalidArgumentError, "metadata"
    )
    _fails(
        await store.update_thread(thread.id, in_dict), "deep metadata of an update", InvalidArgumentError, "metadata"
    )
    _fails(await store.list_threads(metadata=in_dict), "a deep metadata filter", InvalidArgumentError, "metadata")
    await _unchanged(store, thread.id, [kept.id], {"a": 1})

    deepest = _nested(MAX_JSON_DEPTH)
    in_dict_ok = {"x": _nested(MAX_JSON_DEPTH - 1)}
    entry = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "message": {**reply, "tool_calls": [{"id": "c1", "name": "f", "arguments": in_dict_ok}]},
                "tool_results": [{"call_id": "c1", "result": deepest}],
                "metadata": in_dict_ok,
            }
        )
    )
    _eq(unwrap(await store.get_entry(entry.id)), entry, f"a value {MAX_JSON_DEPTH} levels deep reads back")
    path = unwrap(await store.get_path(thread_id=thread.id, include_tool_calls=True))
    _eq(path[-1], entry, "get_path reads the deepest allowed values")
    entries = unwrap(await store.get_entries(thread_id=thread.id, include_tool_calls=True))
    _eq(entries[-1], entry, "get_entries reads the deepest allowed values")
    fork = unwrap(await store.fork_thread(thread.id, entry.id))
    copied = unwrap(await store.get_path(thread_id=fork.id, include_tool_calls=True))
    _eq(copied[-1].tool_results, entry.tool_results, "a fork copies the deepest allowed values")
    updated = unwrap(await store.update_thread(thread.id, in_dict_ok))
    _eq(unwrap(await store.get_thread(thread.id)), updated, "thread metadata as deep as allowed reads back")
    unwrap(await store.delete_entry(entry.id))
    _eq(unwrap(await store.get_entry(entry.id)), None, "an entry of deep values is deleted")


@_case
async def case_values_that_are_not_json_are_refused(store: MemoryAdapter) -> None:
    """Lone surrogates, bytes and other objects, NaN and infinity, and integers outside 64 bits
    fail with ``InvalidArgumentError`` naming the argument, wherever they are, writing nothing;
    the extremes that are allowed round-trip."""
    thread = await _thread(store, a=1)
    kept = await _say(store, thread.id, "kept")
    lone = "\ud800"
    msg = {"role": "user", "content": "x"}

    def result(value: Any) -> dict[str, Any]:
        return {"message": msg, "tool_results": [{"call_id": "c1", "result": value}]}

    def call(arguments: Any) -> dict[str, Any]:
        return {"message": msg, "tool_calls": [{"id": "c1", "name": "f", "arguments": arguments}]}

    refused: list[tuple[dict[str, Any], str]] = [
        ({"message": {"role": "user", "content": f"a{lone}b"}}, "entry.message.content"),
        ({"message": {"role": "user", "content": [{"type": "text", "text": lone}]}}, "entry.message.content.0.text"),
        ({"message": {"role": "user", "content": "x", "name": lone}}, "entry.message.name"),
        ({"message": msg, "metadata": {"k": lone}}, "entry.metadata"),
        ({"message": msg, "metadata": {lone: 1}}, "entry.metadata"),
        (result({"text": [lone]}), "entry.tool_results.0.result"),
        (result(b"\xff\xfe"), "entry.tool_results.0.result"),
        (result(object()), "entry.tool_results.0.result"),
        (result({"when": T0}), "entry.tool_results.0.result"),
        (call({"ids": {1, 2}}), "entry.tool_calls.0.arguments"),
        (result(float("nan")), "entry.tool_results.0.result"),
        (call({"x": float("inf")}), "entry.tool_calls.0.arguments"),
        (
            {"message": {**msg, "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": -float("inf")}}]}},
            "entry.message.tool_calls.0.arguments",
        ),
        ({"type": "custom", "event": {"name": "n", "data": {"x": float("nan")}}}, "entry.event.data"),
        ({"message": msg, "metadata": {"k": 2**63}}, "entry.metadata"),
        ({"message": msg, "metadata": {"k": -(2**63) - 1}}, "entry.metadata"),
        (result([2**64]), "entry.tool_results.0.result"),
        ({"message": msg, "token_count": 2**63}, "entry.token_count"),
    ]
    for fields, argument in refused:
        outcome = await store.add_entry({"thread_id": thread.id, **fields})
        _fails(outcome, f"add_entry with {fields!r}", InvalidArgumentError, f"'{argument}'")
    others: list[tuple[MemoryResult[Any], str]] = [
        (await store.create_thread("agent-1", {"k": lone}), "metadata"),
        (await store.create_thread("agent-1", {"k": 2**63}), "metadata"),
        (await store.update_thread(thread.id, {"k": float("nan")}), "metadata"),
        (await store.update_thread(thread.id, {"k": {1, 2}}), "metadata"),
        (await store.list_threads(metadata={"k": 2**63}), "metadata"),
        (await store.list_threads(metadata={"k": lone}), "metadata"),
        (await store.redact_entry(kept.id, {"at": T0, "reason": lone}), "redaction.reason"),
    ]
    for outcome, argument in others:
        _fails(outcome, f"a bad '{argument}'", InvalidArgumentError, f"'{argument}'")
    await _unchanged(store, thread.id, [kept.id], {"a": 1})
    _eq(await _texts(store.get_entries(thread_id=thread.id)), ["kept"], "the refused redaction changed nothing")

    extremes = {"max": 2**63 - 1, "min": -(2**63), "quarter": 0.25, "text": "日本語 ✓ 😀", "nested": [[{"ok": None}]]}
    entry = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "metadata": extremes, "token_count": 2**63 - 1, **result(extremes)}
        )
    )
    stored = unwrap(await store.get_entry(entry.id))
    assert stored is not None
    _eq(stored.metadata, extremes, "64-bit integers, floats and any valid text round-trip in metadata")
    _eq(stored.tool_results[0].result, extremes, "and in tool results")  # type: ignore[index]
    _eq(stored.token_count, 2**63 - 1, "the largest token_count round-trips")
    updated = unwrap(await store.update_thread(thread.id, extremes))
    _eq(updated.metadata, {"a": 1, **extremes}, "thread metadata takes the same extremes")
    page = unwrap(await store.list_threads(metadata={"max": 2**63 - 1, "min": -(2**63)}))
    _eq([t.id for t in page.threads], [thread.id], "a filter on 64-bit extremes finds the thread")


@_case
async def case_out_of_range_limits_times_and_tampered_cursors_are_refused(store: MemoryAdapter) -> None:
    """Limits of 2**63 and more, datetimes UTC cannot express and cursors that ``list_threads``
    did not make fail with ``InvalidArgumentError``; the largest valid limit reads everything."""
    thread = await _thread(store)
    await _say(store, thread.id, "a")
    await _say(store, thread.id, "b")
    checks: list[tuple[MemoryResult[Any], str]] = [
        (await store.get_entries(thread_id=thread.id, limit=2**63), "limit"),
        (await store.get_path(thread_id=thread.id, limit=2**64), "limit"),
        (await store.list_threads(limit=2**63), "limit"),
    ]
    east = timezone(timedelta(hours=1))
    west = timezone(timedelta(hours=-1))
    checks += [
        (await store.get_entries(thread_id=thread.id, before=datetime.min.replace(tzinfo=east)), "before"),
        (await store.get_entries(thread_id=thread.id, after=datetime.max.replace(tzinfo=west)), "after"),
        (await store.get_path(thread_id=thread.id, before=datetime.min.replace(tzinfo=east)), "before"),
        (await store.list_threads(updated_after=datetime.max.replace(tzinfo=west)), "updated_after"),
    ]
    tampered: list[str] = [
        _cursor([2**70, thread.id]),
        _cursor([-(2**70), thread.id]),
        _cursor([1, "a" + "\ud800"]),
        _cursor([1, "bad\nid"]),
        _cursor([1.5, thread.id]),
        _cursor(["1", thread.id]),
        _cursor([1]),
        _cursor({"at": 1, "id": thread.id}),
        _cursor("[" * 5000 + "]" * 5000),
        "!!not base64!!",
        "",
    ]
    for cursor in tampered:
        checks.append((await store.list_threads(cursor=cursor), "cursor"))
    for result, argument in checks:
        _fails(result, f"a bad '{argument}'", InvalidArgumentError, f"'{argument}'")
    most = 2**63 - 1
    _eq(await _texts(store.get_entries(thread_id=thread.id, limit=most)), ["a", "b"], "limit 2**63 - 1 reads all")
    _eq(await _texts(store.get_path(thread_id=thread.id, limit=most)), ["a", "b"], "and so does it on a branch")
    low, high = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    _eq(await _texts(store.get_entries(thread_id=thread.id, after=low, before=high)), ["a", "b"], "extreme times")
    page = unwrap(await store.list_threads(updated_after=low, updated_before=high, limit=1000))
    _eq([t.id for t in page.threads], [thread.id], "list_threads takes the extreme times")


# --- ids and roots -----------------------------------------------------------------------------


@_case
async def case_entries_keep_an_id_given_by_the_caller(store: MemoryAdapter) -> None:
    """``NewMemoryEntry.id`` keeps the caller's id; an id taken by any entry of any thread fails
    with ``ConflictError`` and writes nothing, also when two writers race for it."""
    thread = await _thread(store)
    other = await _thread(store)
    first = await _say(store, thread.id, "imported", id="imported-1")
    _eq(first.id, "imported-1", "the given id is kept")
    _eq(unwrap(await store.get_entry("imported-1")), first, "and the entry reads back by it")
    second = await _say(store, thread.id, "reply", role="assistant", id="imported-2", parent_id="imported-1")
    _eq(second.parent_id, "imported-1", "a given id works as a parent")
    plain = await _say(store, thread.id, "generated")
    _true(plain.id.startswith("entry_"), f"without an id the store makes one: {plain.id}")
    for target, where in ((thread.id, "of the same thread"), (other.id, "of another thread")):
        taken = await store.add_entry(
            {"thread_id": target, "id": "imported-1", "message": {"role": "user", "content": "x"}}
        )
        _fails(taken, f"an id taken by an entry {where}", ConflictError, "imported-1")
    for bad in ("", "   ", "bad\nid", "x" * 257, "a\ud800", 42):
        outcome = await store.add_entry(
            {"thread_id": thread.id, "id": bad, "message": {"role": "user", "content": "x"}}
        )
        _fails(outcome, f"the entry id {bad!r}", InvalidArgumentError, "'entry.id'")
    await _unchanged(store, thread.id, [first.id, second.id, plain.id], {})
    await _unchanged(store, other.id, [], {})

    racers = await asyncio.gather(
        *(
            store.add_entry({"thread_id": other.id, "id": "contested", "message": {"role": "user", "content": f"r{i}"}})
            for i in range(6)
        )
    )
    won = [r for r in racers if r.success]
    _eq(len(won), 1, f"one of the writers racing for an id wins: {[r.error for r in racers]}")
    for lost in (r for r in racers if not r.success):
        _fails(lost, "a writer that lost the race for an id", ConflictError, "contested")
    stored = unwrap(await store.get_entry("contested"))
    _eq(stored, won[0].data, "the stored entry is the winner's")
    if isinstance(store, BaseMemoryAdapter):
        # A racer may pass add_entry's own look-up before the winner writes: the engine's write
        # itself must refuse a taken id, atomically.
        late = NewMemoryEntry(thread_id=other.id, id="contested", message=Message(role="user", content="late"))
        try:
            await store._add_entry(late, "contested", 1, T0)
        except Exception as exc:
            mapped = exc if isinstance(exc, MemoryStoreError) else store._map_error("add_entry", exc)
            _true(isinstance(mapped, ConflictError), f"the engine refuses a taken id with a conflict: {exc!r}")
        else:
            raise AssertionError("the engine's write of an entry whose id is taken must fail")
    await _unchanged(store, other.id, ["contested"], {})
    _eq(unwrap(await store.get_entry("contested")), won[0].data, "the refused write changed nothing")
    unwrap(await store.delete_entry("contested"))
    again = await _say(store, other.id, "again", id="contested")
    _eq(again.id, "contested", "a deleted entry's id can be given again")


@_case
async def case_entries_keep_the_time_they_were_said(store: MemoryAdapter) -> None:
    """``NewMemoryEntry.created_at`` dates an entry when it was said (an imported conversation):
    kept to the microsecond in UTC (a naive time is UTC, another zone is converted), read back,
    and used by ``get_entries``' ``before``/``after``; the order of entries stays the order
    they were added. A time in the future, or one that is no time, is refused, writing
    nothing."""
    thread = await _thread(store)
    said = datetime(2023, 5, 8, 13, 56, 7, 123456, tzinfo=UTC)
    first = await _say(store, thread.id, "said long ago", created_at=said)
    _eq(first.created_at, said, "the given time is kept")
    _eq(unwrap(await store.get_entry(first.id)), first, "and reads back")
    lisbon = timezone(timedelta(hours=1))
    second = await _say(store, thread.id, "an hour ahead", created_at=datetime(2023, 5, 8, 15, 0, tzinfo=lisbon))
    _eq(second.created_at, datetime(2023, 5, 8, 14, 0, tzinfo=UTC), "a time in another zone is made UTC")
    third = await _say(store, thread.id, "naive", created_at=datetime(2023, 5, 9, 9, 30))
    _eq(third.created_at, datetime(2023, 5, 9, 9, 30, tzinfo=UTC), "a naive time is taken as UTC")
    earlier = await _say(store, thread.id, "dated before the first", created_at=said - timedelta(days=1))
    now = await _say(store, thread.id, "said now")
    _true(now.created_at > said + timedelta(days=365), "without a time an entry is dated now")
    ids = [first.id, second.id, third.id, earlier.id, now.id]
    _eq([e.id for e in await _all_entries(store, thread.id)], ids, "entries stay in the order they were added")
    between = await _texts(store.get_entries(thread_id=thread.id, after=said, before=datetime(2023, 5, 10, tzinfo=UTC)))
    _eq(between, ["an hour ahead", "naive"], "before/after read the times given")
    future = datetime.now(UTC) + timedelta(days=1)
    for bad, name in ((future, "a time in the future"), ("not a time", "text that is no time")):
        outcome = await store.add_entry(
            {"thread_id": thread.id, "created_at": bad, "message": {"role": "user", "content": "x"}}
        )
        _fails(outcome, name, InvalidArgumentError, "created_at")
    await _unchanged(store, thread.id, ids, {})


@_case
async def case_a_thread_can_have_more_than_one_root(store: MemoryAdapter) -> None:
    """``root=True`` writes a new root even when the thread has entries (how the first message
    is edited); every read, move and fork works across roots."""
    thread = await _thread(store)
    rome = await _say(store, thread.id, "Plan a day in Rome")
    colosseum = await _say(store, thread.id, "Start at the Colosseum", role="assistant")
    florence = await _say(store, thread.id, "Plan a day in Florence", root=True)
    _eq(florence.parent_id, None, "root=True writes an entry without a parent")
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, florence.id, "and moves the leaf to it")  # type: ignore[union-attr]
    _eq(
        await _texts(store.get_path(thread_id=thread.id)),
        ["Plan a day in Florence"],
        "the active branch is the new root",
    )
    uffizi = await _say(store, thread.id, "Start at the Uffizi", role="assistant")
    _eq(uffizi.parent_id, florence.id, "the next entry goes after the new root")
    _eq(
        await _texts(store.get_path(thread_id=thread.id, leaf_id=colosseum.id)),
        ["Plan a day in Rome", "Start at the Colosseum"],
        "the first version keeps its branch",
    )
    quiet = await _say(store, thread.id, "Plan a day in Siena", root=True, activate=False)
    _eq(quiet.parent_id, None, "a root written with activate=False")
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, uffizi.id, "leaves the leaf where it was")  # type: ignore[union-attr]
    entries = await _all_entries(store, thread.id)
    _eq(
        [e.id for e in entries],
        [rome.id, colosseum.id, florence.id, uffizi.id, quiet.id],
        "get_entries reads all roots",
    )
    _eq({e.id for e in entries if e.parent_id is None}, {rome.id, florence.id, quiet.id}, "three roots")
    final = unwrap(await store.get_thread(thread.id))
    assert final is not None
    _check_tree(entries, final)

    _fails(await store.rewind(thread.id, rome.id), "rewind to another root's branch", ConflictError)
    unwrap(await store.rewind(thread.id, florence.id))
    unwrap(await store.checkout(thread.id, colosseum.id))
    _eq(await _texts(store.get_path(thread_id=thread.id)), ["Plan a day in Rome", "Start at the Colosseum"], "checkout")
    fork = unwrap(await store.fork_thread(thread.id, uffizi.id))
    copied = unwrap(await store.get_path(thread_id=fork.id))
    _eq([e.message.text for e in copied if e.message], ["Plan a day in Florence", "Start at the Uffizi"], "a fork")
    _eq(copied[0].parent_id, None, "a fork of a later root starts at a root")

    both = await store.add_entry(
        {"thread_id": thread.id, "root": True, "parent_id": rome.id, "message": {"role": "user", "content": "x"}}
    )
    _fails(both, "root=True with a parent_id", InvalidArgumentError, "'entry.root'")
    unwrap(await store.delete_entry(rome.id))
    after = unwrap(await store.get_entry(colosseum.id))
    _eq(after.parent_id if after else "gone", None, "the child of a deleted root becomes a root")
    empty = await _thread(store)
    alone = await _say(store, empty.id, "first", root=True)
    _eq(alone.parent_id, None, "root=True on an empty thread writes its first entry")


@_case
async def case_every_call_takes_a_thread_id_the_same_way(store: MemoryAdapter) -> None:
    """Every call that takes a thread id takes it first, by position or as ``thread_id=``, and
    refuses a malformed one with ``InvalidArgumentError`` naming ``thread_id``."""
    thread = await _thread(store)
    entry = await _say(store, thread.id, "hi")
    _eq(unwrap(await store.get_entries(thread.id)), unwrap(await store.get_entries(thread_id=thread.id)), "get_entries")
    _eq(unwrap(await store.get_path(thread.id)), unwrap(await store.get_path(thread_id=thread.id)), "get_path")
    _eq(unwrap(await store.get_thread(thread_id=thread.id)), unwrap(await store.get_thread(thread.id)), "get_thread")
    unwrap(await store.update_thread(thread_id=thread.id, metadata={"k": 1}))
    unwrap(await store.rewind(thread_id=thread.id, to_entry_id=entry.id))
    unwrap(await store.checkout(thread_id=thread.id, entry_id=entry.id))
    fork = unwrap(await store.fork_thread(thread_id=thread.id, at_entry_id=entry.id))
    unwrap(await store.clear_thread(thread_id=fork.id))
    unwrap(await store.delete_thread(thread_id=fork.id))

    for bad in ("", "   ", "bad\nid", "x" * 257, "a\ud800", 42, None):
        calls: list[tuple[str, MemoryResult[Any]]] = [
            ("get_thread", await store.get_thread(bad)),  # type: ignore[arg-type]
            ("update_thread", await store.update_thread(bad, {"k": 1})),  # type: ignore[arg-type]
            ("delete_thread", await store.delete_thread(bad)),  # type: ignore[arg-type]
            ("clear_thread", await store.clear_thread(bad)),  # type: ignore[arg-type]
            ("get_entries", await store.get_entries(bad)),  # type: ignore[arg-type]
            ("get_path", await store.get_path(bad)),  # type: ignore[arg-type]
            ("rewind", await store.rewind(bad, entry.id)),  # type: ignore[arg-type]
            ("checkout", await store.checkout(bad, entry.id)),  # type: ignore[arg-type]
            ("fork_thread", await store.fork_thread(bad, entry.id)),  # type: ignore[arg-type]
        ]
        if bad is not None:  # None asks create_thread and fork_thread for a new id
            calls.append(("create_thread", await store.create_thread("agent-1", None, bad)))  # type: ignore[arg-type]
        for name, result in calls:
            _fails(result, f"{name}({bad!r})", InvalidArgumentError, "'thread_id'")
        added = await store.add_entry({"thread_id": bad, "message": {"role": "user", "content": "x"}})
        _fails(added, f"add_entry into {bad!r}", InvalidArgumentError, "thread_id")
    missing = "no-such-thread"
    _eq(unwrap(await store.get_thread(missing)), None, "get_thread of a missing thread is None")
    unwrap(await store.delete_thread(missing))
    for name, result in (
        ("update_thread", await store.update_thread(missing, {"k": 1})),
        ("clear_thread", await store.clear_thread(missing)),
        ("get_entries", await store.get_entries(missing)),
        ("get_path", await store.get_path(missing)),
        ("rewind", await store.rewind(missing, entry.id)),
        ("checkout", await store.checkout(missing, entry.id)),
        ("fork_thread", await store.fork_thread(missing, entry.id)),
    ):
        _fails(result, f"{name} of a missing thread", NotFoundError)
    _eq(unwrap(await store.get_thread(thread.id)).metadata["k"], 1, "the thread is as the good calls left it")  # type: ignore[union-attr]
