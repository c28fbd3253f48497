"""The conformance suite of thread stores, written once and run against every store.

:func:`memory_adapter_conformance_cases` returns named cases; each takes a fresh, connected,
empty store and raises ``AssertionError`` (with a message saying what differed) when the store
breaks the contract. Run them on a store of your own::

    import pytest
    from cogitator_memory.testing import memory_adapter_conformance_cases

    @pytest.mark.parametrize("case", memory_adapter_conformance_cases(), ids=lambda c: c.name)
    async def test_conformance(case, store):  # `store`: a fixture yielding a fresh connected store
        await case.run(store)
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from ..clock import frozen_clock
from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..result import MemoryResult, unwrap
from ..threads.base import BaseMemoryAdapter, MemoryAdapter
from ..threads.records import (
    FORK_OF_KEY,
    FORKED_FROM_KEY,
    FORKS_KEY,
    REDACTED_KEY,
    ChangeEvent,
    CompactionEvent,
    LabelEvent,
    MemoryEntry,
)
from ..threads.tree import REDACTED_TEXT
from ..tokens import count_entry_tokens
from . import conformance_inputs
from .cases import CaseList
from .thread_cases import (
    T0,
    ConformanceCase,
    _all_entries,
    _check_tree,
    _eq,
    _fails,
    _say,
    _texts,
    _thread,
    _true,
)

_CASES = CaseList(ConformanceCase)
_case = _CASES.case


def memory_adapter_conformance_cases() -> list[ConformanceCase]:
    """Every case of the thread-store contract, in a stable order (this module's, then those of
    what callers hand a store: :mod:`.conformance_inputs`)."""
    return [*_CASES.cases(), *conformance_inputs.input_cases()]


# --- threads ------------------------------------------------------------------------------


@_case
async def case_create_thread(store: MemoryAdapter) -> None:
    thread = unwrap(await store.create_thread("agent-1", {"topic": "greeting", "n": 1}))
    _true(thread.id.startswith("thread_"), f"generated thread ids start with 'thread_': {thread.id}")
    _eq(thread.agent_id, "agent-1", "agent_id")
    _eq(thread.metadata, {"topic": "greeting", "n": 1}, "metadata")
    _eq(thread.created_at.tzinfo is not None, True, "created_at is timezone-aware")
    _eq(thread.created_at, thread.updated_at, "a new thread's updated_at equals created_at")
    _eq(thread.active_leaf_id, None, "a new thread has no active leaf")
    again = unwrap(await store.get_thread(thread.id))
    _eq(again, thread, "get_thread returns what create_thread returned")
    named = unwrap(await store.create_thread("agent-1", {}, "support-ticket-42"))
    _eq(named.id, "support-ticket-42", "an explicit thread id is used")


@_case
async def case_create_thread_with_existing_id_is_upsert(store: MemoryAdapter) -> None:
    with frozen_clock(T0):
        first = unwrap(await store.create_thread("agent-1", {"a": 1, "b": 1}, "t-upsert"))
    await _say(store, first.id, "hello")
    with frozen_clock(T0 + timedelta(seconds=5)):
        second = unwrap(await store.create_thread("agent-other", {"b": 2, "c": 3}, "t-upsert"))
    _eq(second.created_at, first.created_at, "created_at is kept by an upsert")
    _eq(second.updated_at, T0 + timedelta(seconds=5), "updated_at moves on an upsert")
    _eq(second.agent_id, "agent-1", "the agent of an existing thread is kept")
    _eq(second.metadata, {"a": 1, "b": 2, "c": 3}, "upsert merges metadata")
    _eq(await _texts(store.get_entries(thread_id=first.id)), ["hello"], "entries survive an upsert")


@_case
async def case_get_missing_thread_is_none(store: MemoryAdapter) -> None:
    _eq(unwrap(await store.get_thread("no-such-thread")), None, "get_thread of a missing id")


@_case
async def case_update_thread(store: MemoryAdapter) -> None:
    with frozen_clock(T0):
        thread = await _thread(store, topic="support", user="u1")
    with frozen_clock(T0 + timedelta(minutes=1)):
        updated = unwrap(await store.update_thread(thread.id, {"resolved": True, "topic": "billing"}))
    _eq(updated.metadata, {"topic": "billing", "user": "u1", "resolved": True}, "update merges top-level keys")
    _eq(updated.updated_at, T0 + timedelta(minutes=1), "update_thread moves updated_at")
    _eq(updated.created_at, T0, "update_thread keeps created_at")
    replaced = unwrap(await store.update_thread(thread.id, {"only": "this"}, replace=True))
    _eq(replaced.metadata, {"only": "this"}, "replace=True replaces the metadata")
    _eq(unwrap(await store.get_thread(thread.id)), replaced, "the update is stored")


@_case
async def case_update_missing_thread_fails(store: MemoryAdapter) -> None:
    _fails(
        await store.update_thread("missing", {"a": 1}), "update_thread of a missing thread", NotFoundError, "missing"
    )
    _eq(unwrap(await store.get_thread("missing")), None, "a failed update creates nothing")


@_case
async def case_update_thread_is_atomic(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    results = await asyncio.gather(*(store.update_thread(thread.id, {f"k{i}": i}) for i in range(20)))
    for result in results:
        unwrap(result)
    final = unwrap(await store.get_thread(thread.id))
    assert final is not None
    _eq(final.metadata, {f"k{i}": i for i in range(20)}, "20 concurrent updates all land")


@_case
async def case_delete_thread(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    entry = await _say(store, thread.id, "bye")
    other = await _thread(store)
    kept = await _say(store, other.id, "stay")
    unwrap(await store.delete_thread(thread.id))
    _eq(unwrap(await store.get_thread(thread.id)), None, "a deleted thread is gone")
    _eq(unwrap(await store.get_entry(entry.id)), None, "the entries of a deleted thread are gone")
    _fails(await store.get_entries(thread_id=thread.id), "get_entries of a deleted thread", NotFoundError)
    _eq(unwrap(await store.get_entry(kept.id)) is not None, True, "other threads keep their entries")
    unwrap(await store.delete_thread(thread.id))  # deleting again succeeds


@_case
async def case_list_threads_order_and_filters(store: MemoryAdapter) -> None:
    made = []
    for i in range(5):
        with frozen_clock(T0 + timedelta(seconds=i)):
            made.append(
                unwrap(
                    await store.create_thread(
                        "agent-a" if i % 2 == 0 else "agent-b", {"i": i, "user": "u1" if i < 3 else "u2"}
                    )
                )
            )
    page = unwrap(await store.list_threads())
    _eq([t.id for t in page.threads], [t.id for t in reversed(made)], "newest updated first")
    _eq(page.next_cursor, None, "a single page has no next cursor")
    page = unwrap(await store.list_threads(agent_id="agent-a"))
    _eq([t.metadata["i"] for t in page.threads], [4, 2, 0], "filtered by agent")
    page = unwrap(await store.list_threads(metadata={"user": "u1"}))
    _eq([t.metadata["i"] for t in page.threads], [2, 1, 0], "filtered by metadata")
    page = unwrap(await store.list_threads(agent_id="agent-a", metadata={"user": "u1"}))
    _eq([t.metadata["i"] for t in page.threads], [2, 0], "agent and metadata together")
    page = unwrap(
        await store.list_threads(updated_after=T0 + timedelta(seconds=1), updated_before=T0 + timedelta(seconds=4))
    )
    _eq([t.metadata["i"] for t in page.threads], [3, 2], "updated_after/updated_before are exclusive bounds")
    with frozen_clock(T0 + timedelta(seconds=10)):
        unwrap(await store.update_thread(made[0].id, {"touched": True}))
    page = unwrap(await store.list_threads(limit=1))
    _eq(page.threads[0].id, made[0].id, "an update moves a thread to the front")


@_case
async def case_list_threads_metadata_compared_by_type(store: MemoryAdapter) -> None:
    number = await _thread(store, v=1)
    text = await _thread(store, v="1")
    flag = await _thread(store, v=True)
    nested = await _thread(store, v={"a": [1, 2]})
    for value, expected in ((1, number), ("1", text), (True, flag), ({"a": [1, 2]}, nested)):
        page = unwrap(await store.list_threads(metadata={"v": value}))
        _eq([t.id for t in page.threads], [expected.id], f"metadata filter v={value!r} matches only its type")
    _eq(unwrap(await store.list_threads(metadata={"missing": 1})).threads, [], "a key no thread has matches none")


@_case
async def case_list_threads_pages_by_cursor(store: MemoryAdapter) -> None:
    ids = []
    for i in range(7):
        with frozen_clock(T0 + timedelta(seconds=i // 2)):  # pairs share an updated_at
            ids.append((await _thread(store, agent="pager")).id)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = unwrap(await store.list_threads(agent_id="pager", limit=3, cursor=cursor))
        pages += 1
        seen.extend(t.id for t in page.threads)
        _true(len(page.threads) <= 3, "a page holds at most `limit` threads")
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        _true(pages < 10, "paging must end")
    _eq(sorted(seen), sorted(ids), "paging returns every thread exactly once")
    _eq(len(seen), len(set(seen)), "no thread appears twice across pages")
    _eq(pages, 3, "7 threads in pages of 3")
    _fails(await store.list_threads(cursor="not-a-cursor"), "a garbage cursor", InvalidArgumentError, "cursor")


# --- entries ------------------------------------------------------------------------------


@_case
async def case_add_entry_into_missing_thread_fails(store: MemoryAdapter) -> None:
    result = await store.add_entry({"thread_id": "nowhere", "message": {"role": "user", "content": "hi"}})
    _fails(result, "add_entry into a missing thread", NotFoundError, "nowhere")
    _eq(unwrap(await store.get_thread("nowhere")), None, "a failed add_entry creates no thread")


@_case
async def case_add_entry_fields(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    first = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "message": {"role": "user", "content": "Hello!"}, "token_count": 3}
        )
    )
    second = await _say(store, thread.id, "Hi there! How can I help?", role="assistant")
    # Compared before its count is read (a store may count it when first read).
    _eq(unwrap(await store.get_entry(second.id)), second, "get_entry returns what add_entry returned, count and all")
    _true(first.id.startswith("entry_"), f"entry ids start with 'entry_': {first.id}")
    _eq(first.thread_id, thread.id, "thread_id")
    _eq(first.parent_id, None, "the first entry is a root")
    _eq(second.parent_id, first.id, "the next entry goes after the active leaf")
    _true(second.seq > first.seq, "seq grows in the order entries are added")
    _eq(first.type, "message", "type defaults to message")
    _eq(first.token_count, 3, "an explicit token_count is kept")
    _eq(second.token_count, count_entry_tokens(second), "token_count defaults to the counted tokens")
    _true(first.created_at.tzinfo is not None, "created_at is timezone-aware")
    _eq(unwrap(await store.get_entry(first.id)), first, "get_entry returns what add_entry returned")
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, second.id, "the active leaf moves")  # type: ignore[union-attr]


@_case
async def case_fields_never_set_come_back_absent(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    entry = await _say(store, thread.id, "plain")
    stored = unwrap(await store.get_entry(entry.id))
    assert stored is not None
    dumped = stored.dump()
    for field in ("metadata", "event", "tool_calls", "tool_results", "parent_id"):
        _true(field not in dumped, f"{field} was never set and must be absent, got {dumped.get(field)!r}")
    _true("name" not in dumped["message"], "message.name was never set and must be absent")
    _eq(stored.metadata, None, "metadata never set is None")
    _true("active_leaf_id" not in unwrap(await store.create_thread("agent-1")).dump(), "active_leaf_id absent")


@_case
async def case_returned_objects_are_copies(store: MemoryAdapter) -> None:
    thread = await _thread(store, tags=["a"])
    entry = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "message": {"role": "user", "content": "original"}, "metadata": {"k": [1]}}
        )
    )
    thread.metadata["tags"].append("mutated")
    thread.metadata["new"] = 1
    assert entry.message is not None and entry.metadata is not None
    entry.message.content = "mutated"
    entry.metadata["k"].append(2)
    read = unwrap(await store.get_entry(entry.id))
    assert read is not None and read.message is not None
    read.message.content = "mutated again"
    again = unwrap(await store.get_entry(entry.id))
    assert again is not None and again.message is not None
    _eq(again.message.content, "original", "changing a returned entry does not change the store")
    _eq(again.metadata, {"k": [1]}, "changing returned metadata does not change the store")
    listed = unwrap(await store.get_entries(thread_id=thread.id))
    listed[0].metadata["k"].append(3)  # type: ignore[index]
    _eq(unwrap(await store.get_entry(entry.id)).metadata, {"k": [1]}, "entries of get_entries are copies")  # type: ignore[union-attr]
    _eq(unwrap(await store.get_thread(thread.id)).metadata, {"tags": ["a"]}, "threads returned are copies")  # type: ignore[union-attr]


@_case
async def case_read_only_paths_see_every_change(store: MemoryAdapter) -> None:
    """``get_path(copy=False)`` (stores built on ``BaseMemoryAdapter``) reads what ``get_path()``
    reads, and sees every later write; a store that does not share its objects returns copies."""
    if not isinstance(store, BaseMemoryAdapter):
        return  # the option belongs to the base class; other stores are read with get_path()
    thread = await _thread(store)
    q = await _say(store, thread.id, "Where is the museum?", metadata={"k": [1]})
    a = await _say(store, thread.id, "Near the station", role="assistant")
    q2 = await _say(store, thread.id, "And the hotel?")

    async def shared() -> list[MemoryEntry]:
        return unwrap(await store.get_path(thread_id=thread.id, include_tool_calls=True, copy=False))

    copies = unwrap(await store.get_path(thread_id=thread.id, include_tool_calls=True))
    _eq(await shared(), copies, "copy=False reads the same entries as get_path()")
    copies[0].metadata["k"].append(2)  # type: ignore[index]
    copies[0].message.content = "changed"  # type: ignore[union-attr]
    _eq((await shared())[0], q, "changing what get_path() returned changes no later read")
    if not store.shares_entries:
        mine = await shared()
        mine[0].message.content = "changed"  # type: ignore[union-attr]
        _eq((await shared())[0], q, "a store that does not share its objects returns copies")
    unwrap(await store.redact_entry(a.id, {"at": T0}))
    _eq([e.message.text for e in await shared()][1], REDACTED_TEXT, "a redaction is seen")  # type: ignore[union-attr]
    unwrap(await store.delete_entry(a.id))
    after = await shared()
    _eq([e.id for e in after], [q.id, q2.id], "a deletion is seen")
    _eq(after[1].parent_id, q.id, "the spliced entry's new parent is seen")
    q3 = await _say(store, thread.id, "Thanks")
    _eq([e.id for e in await shared()], [q.id, q2.id, q3.id], "a new entry is seen")
    _eq(await shared(), unwrap(await store.get_path(thread_id=thread.id, include_tool_calls=True)), "still the same")


@_case
async def case_get_entries_types(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    await _say(store, thread.id, "question")
    unwrap(await store.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "checkpoint"}}))
    unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "type": "tool_result",
                "message": {"role": "tool", "content": "42", "tool_call_id": "call_1"},
            }
        )
    )
    unwrap(await store.add_entry({"thread_id": thread.id, "type": "model_change", "event": {"model": "gpt-x"}}))
    _eq(await _texts(store.get_entries(thread_id=thread.id)), ["question", "42"], "events are left out by default")
    everything = unwrap(await store.get_entries(thread_id=thread.id, types="all"))
    _eq([e.type for e in everything], ["message", "label", "tool_result", "model_change"], "types='all'")
    labels = unwrap(await store.get_entries(thread_id=thread.id, types=["label"]))
    _eq(len(labels), 1, "types selects entry types")
    _true(isinstance(labels[0].event, LabelEvent), "an event comes back as its payload class")
    _eq(labels[0].event.label, "checkpoint", "the event payload is kept")  # type: ignore[union-attr]
    _eq(labels[0].message, None, "an event without a message has none")


@_case
async def case_get_entries_limit_is_newest_oldest_first(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    for i in range(10):
        await _say(store, thread.id, f"m{i}")
    _eq(await _texts(store.get_entries(thread_id=thread.id, limit=3)), ["m7", "m8", "m9"], "limit=3")
    _eq(len(unwrap(await store.get_entries(thread_id=thread.id, limit=0))), 10, "limit=0 returns all")
    _eq(len(unwrap(await store.get_entries(thread_id=thread.id, limit=50))), 10, "a limit over the count")


@_case
async def case_get_entries_before_after(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    for i in range(5):
        with frozen_clock(T0 + timedelta(minutes=i)):
            await _say(store, thread.id, f"m{i}")
    texts = await _texts(
        store.get_entries(thread_id=thread.id, after=T0 + timedelta(minutes=1), before=T0 + timedelta(minutes=4))
    )
    _eq(texts, ["m2", "m3"], "after/before are exclusive bounds on created_at")
    texts = await _texts(store.get_entries(thread_id=thread.id, before=T0 + timedelta(minutes=4), limit=2))
    _eq(texts, ["m2", "m3"], "limit applies after before")


@_case
async def case_tool_calls_stripped_unless_asked(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    call = {"id": "call_1", "name": "weather", "arguments": {"city": "Rome"}}
    entry = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
                "tool_calls": [call],
                "tool_results": [{"call_id": "call_1", "result": {"temp": 21}}],
            }
        )
    )
    plain = unwrap(await store.get_entries(thread_id=thread.id))[0]
    _eq(plain.tool_calls, None, "tool calls are stripped by default")
    _eq(plain.tool_results, None, "tool results are stripped by default")
    _eq(plain.message.tool_calls, None, "the message's tool calls are stripped by default")  # type: ignore[union-attr]
    full = unwrap(await store.get_entries(thread_id=thread.id, include_tool_calls=True))[0]
    _eq(full.tool_calls[0].arguments, {"city": "Rome"}, "include_tool_calls keeps them")  # type: ignore[index]
    _eq(full.tool_results[0].result, {"temp": 21}, "tool results are kept")  # type: ignore[index]
    _eq(full.message.tool_calls[0].name, "weather", "message tool calls kept")  # type: ignore[union-attr,index]
    _eq(unwrap(await store.get_entry(entry.id)), full, "get_entry returns the tool calls")
    path = unwrap(await store.get_path(thread_id=thread.id))
    _eq(path[0].tool_calls, None, "get_path strips tool calls by default")


@_case
async def case_get_entries_reads_every_branch(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    q = await _say(store, thread.id, "q")
    await _say(store, thread.id, "a1", role="assistant")
    await _say(store, thread.id, "a2", role="assistant", parent_id=q.id, activate=False)
    _eq(await _texts(store.get_entries(thread_id=thread.id)), ["q", "a1", "a2"], "every branch, in seq order")


@_case
async def case_delete_entry_splices(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    a = await _say(store, thread.id, "a")
    b = await _say(store, thread.id, "b")
    c = await _say(store, thread.id, "c")
    d = await _say(store, thread.id, "d", parent_id=b.id, activate=False)
    unwrap(await store.delete_entry(b.id))
    _eq(unwrap(await store.get_entry(b.id)), None, "the entry is gone")
    _eq(unwrap(await store.get_entry(c.id)).parent_id, a.id, "children go to the parent")  # type: ignore[union-attr]
    _eq(unwrap(await store.get_entry(d.id)).parent_id, a.id, "every child goes to the parent")  # type: ignore[union-attr]
    _eq(await _texts(store.get_path(thread_id=thread.id)), ["a", "c"], "the branch closes over the gap")
    unwrap(await store.delete_entry(c.id))
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, a.id, "a deleted leaf moves the leaf up")  # type: ignore[union-attr]
    unwrap(await store.delete_entry(a.id))
    _eq(unwrap(await store.get_entry(d.id)).parent_id, None, "a child of a deleted root becomes a root")  # type: ignore[union-attr]
    unwrap(await store.delete_entry("entry_missing"))  # deleting a missing entry succeeds


@_case
async def case_clear_thread(store: MemoryAdapter) -> None:
    thread = await _thread(store, keep="me")
    e = await _say(store, thread.id, "x")
    unwrap(await store.clear_thread(thread.id))
    _eq(unwrap(await store.get_entries(thread_id=thread.id, types="all")), [], "no entries after clear")
    _eq(unwrap(await store.get_entry(e.id)), None, "cleared entries are gone")
    after = unwrap(await store.get_thread(thread.id))
    assert after is not None
    _eq(after.metadata, {"keep": "me"}, "the thread stays")
    _eq(after.active_leaf_id, None, "the active leaf is unset")
    again = await _say(store, thread.id, "fresh start")
    _eq(again.parent_id, None, "the next entry is a root")
    _fails(await store.clear_thread("missing"), "clear_thread of a missing thread", NotFoundError)


@_case
async def case_same_created_at_keeps_insertion_order(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    count = 10_000
    with frozen_clock(T0):
        for i in range(count):
            unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"m{i}"}}))
    entries = unwrap(await store.get_entries(thread_id=thread.id))
    _eq(len(entries), count, "every entry is kept")
    _true(all(e.message.content == f"m{i}" for i, e in enumerate(entries)), "insertion order under one created_at")  # type: ignore[union-attr]
    last = await _texts(store.get_entries(thread_id=thread.id, limit=50))
    _eq(last, [f"m{i}" for i in range(count - 50, count)], "limit=50 returns exactly the last 50 in order")
    path = await _texts(store.get_path(thread_id=thread.id, limit=50))
    _eq(path, last, "get_path(limit=50) returns the same last 50")


# --- trees --------------------------------------------------------------------------------


@_case
async def case_branches_and_paths(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    question = await _say(store, thread.id, "Plan a day in Rome")
    await _say(store, thread.id, "Start at the Colosseum...", role="assistant")
    retry = await _say(
        store, thread.id, "Start at the Vatican...", role="assistant", parent_id=question.id, activate=False
    )
    _eq(retry.parent_id, question.id, "an explicit parent_id")
    _eq(
        await _texts(store.get_path(thread_id=thread.id)),
        ["Plan a day in Rome", "Start at the Colosseum..."],
        "the active branch",
    )
    _eq(
        await _texts(store.get_path(thread_id=thread.id, leaf_id=retry.id)),
        ["Plan a day in Rome", "Start at the Vatican..."],
        "another branch by leaf_id",
    )
    follow = await _say(store, thread.id, "And lunch?", parent_id=retry.id)
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, follow.id, "activate defaults to true")  # type: ignore[union-attr]
    _eq(
        await _texts(store.get_path(thread_id=thread.id)),
        ["Plan a day in Rome", "Start at the Vatican...", "And lunch?"],
        "writing on a branch with activate makes it the active one",
    )


@_case
async def case_bad_parent_fails_and_writes_nothing(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    other = await _thread(store)
    foreign = await _say(store, other.id, "elsewhere")
    mine = await _say(store, thread.id, "here")
    _fails(
        await store.add_entry(
            {"thread_id": thread.id, "parent_id": foreign.id, "message": {"role": "user", "content": "x"}}
        ),
        "a parent of another thread",
        mentions=foreign.id,
    )
    _fails(
        await store.add_entry(
            {"thread_id": thread.id, "parent_id": "entry_nope", "message": {"role": "user", "content": "x"}}
        ),
        "a missing parent",
        NotFoundError,
        "entry_nope",
    )
    _eq(await _texts(store.get_entries(thread_id=thread.id)), ["here"], "nothing was written")
    _eq(unwrap(await store.get_thread(thread.id)).active_leaf_id, mine.id, "the leaf did not move")  # type: ignore[union-attr]
    _eq(await _texts(store.get_entries(thread_id=other.id)), ["elsewhere"], "nothing was written to the other thread")


@_case
async def case_get_path_limit_before_types(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    for i in range(6):
        with frozen_clock(T0 + timedelta(minutes=i)):
            await _say(store, thread.id, f"m{i}")
            if i == 2:
                unwrap(await store.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "half"}}))
    _eq(await _texts(store.get_path(thread_id=thread.id, limit=2)), ["m4", "m5"], "limit keeps the newest")
    page = unwrap(await store.get_path(thread_id=thread.id, limit=2))
    _eq(
        await _texts(store.get_path(thread_id=thread.id, limit=2, before=page[0].id)),
        ["m2", "m3"],
        "before=<entry id> pages back",
    )
    _eq(
        await _texts(store.get_path(thread_id=thread.id, before=T0 + timedelta(minutes=2))),
        ["m0", "m1"],
        "before=<datetime> keeps older entries",
    )
    with_events = await _texts(store.get_path(thread_id=thread.id, types="all"))
    _eq(with_events, ["m0", "m1", "m2", "<label>", "m3", "m4", "m5"], "types='all' includes events")
    _eq(await _texts(store.get_path(thread_id=thread.id, types=["label"])), ["<label>"], "types filters the path")
    first = unwrap(await store.get_path(thread_id=thread.id))[0]
    _eq(unwrap(await store.get_path(thread_id=thread.id, before=first.id)), [], "nothing before the root")


@_case
async def case_get_path_errors(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    other = await _thread(store)
    foreign = await _say(store, other.id, "x")
    _eq(unwrap(await store.get_path(thread_id=thread.id)), [], "an empty thread has an empty path")
    _fails(await store.get_path(thread_id="missing"), "get_path of a missing thread", NotFoundError)
    _fails(
        await store.get_path(thread_id=thread.id, leaf_id=foreign.id),
        "a leaf of another thread",
        NotFoundError,
        foreign.id,
    )


@_case
async def case_rewind_and_checkout(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    q = await _say(store, thread.id, "q")
    a = await _say(store, thread.id, "a", role="assistant")
    alt = await _say(store, thread.id, "alt", role="assistant", parent_id=q.id, activate=False)
    rewound = unwrap(await store.rewind(thread.id, q.id))
    _eq(rewound.active_leaf_id, q.id, "rewind moves the leaf back")
    _eq(len(unwrap(await store.get_entries(thread_id=thread.id))), 3, "rewind deletes nothing")
    b = await _say(store, thread.id, "b", role="assistant")
    _eq(b.parent_id, q.id, "after a rewind new entries branch from the rewound entry")
    _fails(await store.rewind(thread.id, alt.id), "rewind to an entry off the active branch", ConflictError)
    checked = unwrap(await store.checkout(thread.id, a.id))
    _eq(checked.active_leaf_id, a.id, "checkout makes any entry the leaf")
    _eq(await _texts(store.get_path(thread_id=thread.id)), ["q", "a"], "the checked-out branch is active")
    _fails(await store.checkout(thread.id, "entry_missing"), "checkout of a missing entry", NotFoundError)
    _fails(await store.checkout("missing", a.id), "checkout in a missing thread", NotFoundError)


@_case
async def case_fork_thread(store: MemoryAdapter) -> None:
    thread = await _thread(store, topic="rome")
    q = await _say(store, thread.id, "Plan a day in Rome")
    await _say(store, thread.id, "Colosseum", role="assistant")
    retry = await _say(store, thread.id, "Vatican", role="assistant", parent_id=q.id, activate=False)
    fork = unwrap(await store.fork_thread(thread.id, retry.id, "rome-vatican"))
    _eq(fork.id, "rome-vatican", "the fork takes the given id")
    _eq(fork.agent_id, thread.agent_id, "the fork keeps the agent")
    _eq(fork.metadata[FORKED_FROM_KEY], {"thread_id": thread.id, "entry_id": retry.id}, "forked_from")
    _eq(fork.metadata.get("topic"), "rome", "the fork keeps the origin's metadata")
    copies = unwrap(await store.get_path(thread_id=fork.id))
    _eq([e.message.text for e in copies], ["Plan a day in Rome", "Vatican"], "the branch is copied")  # type: ignore[union-attr]
    _eq([e.metadata[FORK_OF_KEY] for e in copies], [q.id, retry.id], "each copy names its original")  # type: ignore[index]
    _true(all(e.thread_id == fork.id for e in copies), "copies belong to the fork")
    _true(not {e.id for e in copies} & {q.id, retry.id}, "copies get ids of their own")
    _eq(fork.active_leaf_id, copies[-1].id, "the fork's leaf is the last copy")
    origin = unwrap(await store.get_thread(thread.id))
    _eq(origin.metadata[FORKS_KEY], ["rome-vatican"], "the origin lists its forks")  # type: ignore[union-attr]
    _eq(len(unwrap(await store.get_entries(thread_id=thread.id))), 3, "the origin keeps its entries")
    generated = unwrap(await store.fork_thread(thread.id, q.id))
    _true(generated.id.startswith("thread_"), "a fork without an id gets a generated one")
    origin = unwrap(await store.get_thread(thread.id))
    _eq(origin.metadata[FORKS_KEY], ["rome-vatican", generated.id], "every fork is listed")  # type: ignore[union-attr]
    _true(FORKS_KEY not in generated.metadata, "a fork does not inherit the origin's fork list")


@_case
async def case_fork_renames_the_entries_its_events_name(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    first = await _say(store, thread.id, "first")
    kept = await _say(store, thread.id, "kept", role="assistant")
    compaction = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "earlier", "first_kept_entry_id": kept.id, "tokens_before": 9},
            }
        )
    )
    label = unwrap(
        await store.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "x", "target_id": first.id}})
    )
    outside = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "type": "label", "event": {"label": "y", "target_id": "entry_elsewhere"}}
        )
    )
    fork = unwrap(await store.fork_thread(thread.id, outside.id))
    copies = {e.metadata[FORK_OF_KEY]: e for e in await _all_entries(store, fork.id)}  # type: ignore[index]
    event, marked = copies[compaction.id].event, copies[label.id].event
    assert isinstance(event, CompactionEvent) and isinstance(marked, LabelEvent)
    _eq(event.first_kept_entry_id, copies[kept.id].id, "a compaction names the copy of its first kept entry")
    _eq((event.summary, event.tokens_before), ("earlier", 9), "the rest of the compaction is kept")
    _eq(marked.target_id, copies[first.id].id, "a label names the copy of its target")
    _eq(copies[outside.id].event.target_id, "entry_elsewhere", "an id off the branch is kept")  # type: ignore[union-attr]
    origin = unwrap(await store.get_entry(compaction.id))
    assert origin is not None and isinstance(origin.event, CompactionEvent)
    _eq(origin.event.first_kept_entry_id, kept.id, "the origin's events are left as they were")


@_case
async def case_fork_failures_write_nothing(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    e = await _say(store, thread.id, "x")
    taken = await _thread(store)
    _fails(await store.fork_thread(thread.id, e.id, taken.id), "a fork onto a taken id", ConflictError, taken.id)
    _eq(unwrap(await store.get_entries(thread_id=taken.id)), [], "the taken thread got no entries")
    _fails(await store.fork_thread(thread.id, "entry_missing"), "a fork at a missing entry", NotFoundError)
    _fails(await store.fork_thread("missing", e.id), "a fork of a missing thread", NotFoundError)
    origin = unwrap(await store.get_thread(thread.id))
    _true(FORKS_KEY not in origin.metadata, "failed forks are not listed")  # type: ignore[union-attr]


@_case
async def case_redact_entry(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    user = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "message": {"role": "user", "content": "My passport is X123", "name": "ana"}}
        )
    )
    call = {"id": "call_9", "name": "lookup", "arguments": {"passport": "X123"}, "replay": {"k": 1}}
    reply = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "message": {"role": "assistant", "content": "Checking X123", "tool_calls": [call]},
                "tool_calls": [call],
                "tool_results": [{"call_id": "call_9", "name": "lookup", "result": "X123 valid"}],
            }
        )
    )
    at = datetime(2026, 3, 1, tzinfo=UTC)
    redacted = unwrap(await store.redact_entry(user.id, {"at": at, "reason": "the user asked"}))
    assert redacted is not None and redacted.message is not None
    _eq(redacted.message.content, REDACTED_TEXT, "the text is redacted")
    _eq(redacted.message.role, "user", "the role is kept")
    _eq(redacted.message.name, None, "a user message loses its sender name")
    _eq(redacted.metadata[REDACTED_KEY]["reason"], "the user asked", "metadata.redacted records why")  # type: ignore[index]
    _true("at" in redacted.metadata[REDACTED_KEY], "metadata.redacted records when")  # type: ignore[index]
    _eq((redacted.id, redacted.parent_id, redacted.seq), (user.id, user.parent_id, user.seq), "the place is kept")
    _eq(unwrap(await store.get_entry(user.id)), redacted, "the redaction is stored")
    second = unwrap(await store.redact_entry(reply.id, {"at": at}))
    assert second is not None and second.message is not None and second.tool_calls and second.tool_results
    _true("X123" not in second.dump_json(), "no redacted text survives anywhere in the entry")
    _eq(second.message.tool_calls[0].id, "call_9", "call ids are kept")  # type: ignore[index]
    _eq(second.tool_calls[0].replay, None, "replay state is dropped")
    _eq(second.tool_results[0].call_id, "call_9", "tool result call ids are kept")
    _eq(second.tool_results[0].result, REDACTED_TEXT, "tool results are redacted")
    _eq(second.parent_id, user.id, "the parent is kept")
    _eq(unwrap(await store.redact_entry("entry_missing", {"at": at})), None, "a missing entry gives None")
    event = unwrap(await store.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "x"}}))
    _fails(await store.redact_entry(event.id, {"at": at}), "redacting an event", InvalidArgumentError)
    _fails(
        await store.redact_entry(user.id, {"reason": "no time"}), "a redaction without 'at'", InvalidArgumentError, "at"
    )


@_case
async def case_change_events(store: MemoryAdapter) -> None:
    seen: list[ChangeEvent] = []
    unsubscribe = store.on_change(seen.append)
    thread = await _thread(store)
    e1 = await _say(store, thread.id, "one")
    e2 = await _say(store, thread.id, "two")
    unwrap(await store.redact_entry(e1.id, {"at": T0}))
    unwrap(await store.delete_entry(e2.id))
    unwrap(await store.clear_thread(thread.id))
    unwrap(await store.delete_thread(thread.id))
    _eq(
        [(ev.type, ev.entry_id) for ev in seen],
        [
            ("entry-added", e1.id),
            ("entry-added", e2.id),
            ("entry-redacted", e1.id),
            ("entry-deleted", e2.id),
            ("thread-cleared", None),
            ("thread-deleted", None),
        ],
        "listeners hear every change in order",
    )
    _true(all(ev.thread_id == thread.id for ev in seen), "every event names its thread")
    _eq(seen[0].entry, e1, "entry-added carries the entry")
    unsubscribe()
    await _thread(store)
    other = await _thread(store)
    await _say(store, other.id, "unheard")
    _eq(len(seen), 6, "an unsubscribed listener hears nothing")
    failing_calls: list[str] = []

    def failing(event: ChangeEvent) -> None:
        failing_calls.append(event.type)
        raise RuntimeError("listener bug")

    store.on_change(failing)
    unwrap(await store.add_entry({"thread_id": other.id, "message": {"role": "user", "content": "still works"}}))
    _eq(failing_calls, ["entry-added"], "a failing listener was called and did not fail the write")


@_case
async def case_concurrent_adds_leave_a_valid_tree(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    results = await asyncio.gather(
        *(store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"c{i}"}}) for i in range(20))
    )
    added = [unwrap(r) for r in results]
    entries = await _all_entries(store, thread.id)
    _eq(len(entries), 20, "no entry is lost")
    final = unwrap(await store.get_thread(thread.id))
    assert final is not None
    _check_tree(entries, final)
    path = unwrap(await store.get_path(thread_id=thread.id))
    _eq(len(path), 20, "each add went after the leaf the one before left: one unbroken branch")
    _eq({e.id for e in path}, {e.id for e in added}, "the branch holds every added entry")
    _eq(sum(1 for e in entries if e.parent_id is None), 1, "one root")


@_case
async def case_failed_writes_leave_nothing(store: MemoryAdapter) -> None:
    thread = await _thread(store, a=1)
    await _say(store, thread.id, "kept")
    bad_inputs: list[dict[str, Any]] = [
        {"thread_id": thread.id, "message": {"role": "robot", "content": "x"}},
        {"thread_id": thread.id},
        {"thread_id": thread.id, "type": "label"},
        {"thread_id": thread.id, "type": "message", "event": {"label": "x"}, "message": {"role": "user"}},
        {"thread_id": thread.id, "message": {"role": "user", "content": "x"}, "token_count": -1},
        {"thread_id": thread.id, "message": {"role": "user", "content": "x"}, "metadata": {"bad": float("nan")}},
        {"thread_id": thread.id, "message": {"role": "user", "content": "x"}, "unknown_field": 1},
    ]
    for bad in bad_inputs:
        _fails(await store.add_entry(bad), f"add_entry({bad!r})", InvalidArgumentError, "entry")
    _fails(await store.update_thread(thread.id, {"x": object()}), "non-JSON metadata", InvalidArgumentError, "metadata")
    _eq(await _texts(store.get_entries(thread_id=thread.id, types="all")), ["kept"], "nothing was written")
    _eq(unwrap(await store.get_thread(thread.id)).metadata, {"a": 1}, "the thread is unchanged")  # type: ignore[union-attr]


@_case
async def case_bad_arguments_are_named(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    checks: list[tuple[MemoryResult[Any], str]] = [
        (await store.create_thread(""), "agent_id"),
        (await store.create_thread(123), "agent_id"),  # type: ignore[arg-type]
        (await store.create_thread("a", "not a dict"), "metadata"),  # type: ignore[arg-type]
        (await store.create_thread("a", {1: "x"}), "metadata"),  # type: ignore[dict-item]
        (await store.create_thread("a", None, "bad\nid"), "thread_id"),
        (await store.get_thread(""), "thread_id"),
        (await store.update_thread(thread.id, None), "metadata"),  # type: ignore[arg-type]
        (await store.list_threads(limit=0), "limit"),
        (await store.list_threads(limit=-5), "limit"),
        (await store.list_threads(updated_after="yesterday"), "updated_after"),  # type: ignore[arg-type]
        (await store.get_entries(thread_id=thread.id, limit=-1), "limit"),
        (await store.get_entries(thread_id=thread.id, types=["nonsense"]), "types"),
        (await store.get_entries(thread_id=thread.id, before="soon"), "before"),  # type: ignore[arg-type]
        (await store.get_path(thread_id=thread.id, limit=True), "limit"),
        (await store.add_entry("just text"), "entry"),  # type: ignore[arg-type]
        (await store.add_entry({"thread_id": "", "message": {"role": "user", "content": "x"}}), "thread_id"),
        (await store.get_entry(""), "entry_id"),
        (await store.delete_entry(None), "entry_id"),  # type: ignore[arg-type]
        (await store.rewind(thread.id, ""), "to_entry_id"),
        (await store.fork_thread(thread.id, "", None), "at_entry_id"),
        (await store.redact_entry("e", "now"), "redaction"),  # type: ignore[arg-type]
    ]
    for result, argument in checks:
        _fails(result, f"a bad '{argument}'", InvalidArgumentError, argument)


@_case
async def case_messages_round_trip(store: MemoryAdapter) -> None:
    thread = await _thread(store)
    message = {
        "role": "user",
        "name": "ana",
        "content": [
            {"type": "text", "text": "What is in this picture? ✓ 日本語"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
            {"type": "image_base64", "image_base64": {"data": "aGVsbG8=", "media_type": "image/png"}},
        ],
    }
    entry = unwrap(
        await store.add_entry({"thread_id": thread.id, "message": message, "metadata": {"nested": {"a": [1, None]}}})
    )
    stored = unwrap(await store.get_entry(entry.id))
    _eq(stored, entry, "a message with content parts round-trips")
    assert stored is not None
    _eq(stored.dump()["message"], message, "content parts, name and images come back as given")
    _eq(stored.metadata, {"nested": {"a": [1, None]}}, "nested metadata round-trips, null values included")
    tool = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "type": "tool_result",
                "message": {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_7", "name": "lookup"},
            }
        )
    )
    _eq(unwrap(await store.get_entry(tool.id)), tool, "a tool message round-trips")
    compaction = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "They talked.", "first_kept_entry_id": tool.id, "extra_key": 1},
            }
        )
    )
    back = unwrap(await store.get_entry(compaction.id))
    assert back is not None
    _true(isinstance(back.event, CompactionEvent), "a compaction payload comes back typed")
    _eq(back.event.model_dump().get("extra_key"), 1, "extra payload keys are kept")  # type: ignore[union-attr]
    big = "x" * 200_000
    large = await _say(store, thread.id, big)
    _eq(unwrap(await store.get_entry(large.id)).message.content, big, "a large message round-trips")  # type: ignore[union-attr]


@_case
async def case_health_check(store: MemoryAdapter) -> None:
    results = await asyncio.gather(*(store.health_check() for _ in range(10)))
    _true(all(r.success for r in results), f"health checks pass: {[r.error for r in results if not r.success]}")
    unwrap(await store.connect())  # connecting again while connected is harmless


@_case
async def case_concurrent_add_under_a_deleted_entry_leaves_a_valid_tree(store: MemoryAdapter) -> None:
    # add_entry(parent_id=P) racing delete_entry(P), both orders: either the add fails (P is not
    # found) or it came first and the delete moved its entry up to P's parent. Never an entry
    # whose parent is gone.
    thread = await _thread(store)
    outcomes: set[str] = set()
    for round_ in range(30):
        base = await _say(store, thread.id, f"base {round_}")
        doomed = await _say(store, thread.id, f"doomed {round_}")
        child: dict[str, Any] = {
            "thread_id": thread.id,
            "parent_id": doomed.id,
            "message": {"role": "user", "content": f"child {round_}"},
        }
        if round_ % 2:
            added, deleted = await asyncio.gather(store.add_entry(child), store.delete_entry(doomed.id))
        else:
            deleted, added = await asyncio.gather(store.delete_entry(doomed.id), store.add_entry(child))
        unwrap(deleted)
        _eq(unwrap(await store.get_entry(doomed.id)), None, f"round {round_}: the deleted entry is gone")
        if added.success:
            outcomes.add("added first")
            stored = unwrap(await store.get_entry(added.data.id))  # type: ignore[union-attr]
            _true(stored is not None, f"round {round_}: an add reported as written is stored")
            assert stored is not None
            _true(stored.parent_id != doomed.id, f"round {round_}: entry {stored.id} names a deleted parent")
            _eq(stored.parent_id, base.id, f"round {round_}: the delete moved the new entry up to the parent")
        else:
            outcomes.add("deleted first")
            _fails(added, f"round {round_}: add_entry under a deleted entry", NotFoundError, doomed.id)
        entries = await _all_entries(store, thread.id)
        final = unwrap(await store.get_thread(thread.id))
        assert final is not None
        _check_tree(entries, final)
        path = unwrap(await store.get_path(thread_id=thread.id))
        _eq(path[-1].id, final.active_leaf_id, f"round {round_}: the branch ends at the active leaf")
        _eq(path[0].parent_id, None, f"round {round_}: the active branch reaches the root")
    _true(bool(outcomes), "the race ran")


__all__ = ["ConformanceCase", "memory_adapter_conformance_cases"]
