"""Compaction on stores without branches: the summary dated just before the first kept entry.

Three real stores without paths: InMemory and SQLite stores whose ``capabilities`` leave out
``"branches"`` (as a store written for an engine without a tree would declare), and a store
written without ``get_path`` at all (an InMemory store behind a wrapper that offers everything
else). The summarizer is a chat model over real HTTP (``ScriptedServer``).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.clock import frozen_clock
from cogitator_memory.compaction import CompactionError, CompactionService, SessionManager
from cogitator_memory.compaction.hierarchical import levels_of
from cogitator_memory.context import ContextBuilder
from cogitator_memory.context.history import (
    SUMMARY_HEADING,
    compaction_of,
    dated_history,
    has_paths,
    read_compacted_history,
)
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.lifecycle import Capability
from cogitator_memory.models import OpenAIChatClient, SummarizeOptions, summarize_fn
from cogitator_memory.testing.scripted_server import (
    RecordedRequest,
    ScriptedChatRequest,
    ScriptedResponse,
    ScriptedServer,
    openai_chat_handler,
)
from cogitator_memory.threads.records import COMPACTION_SUMMARY_KEY, MemoryEntry, Message

PATH = "/v1/chat/completions"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class LinearMemoryAdapter(InMemoryAdapter):
    """An in-memory store that declares no branches."""

    capabilities: ClassVar[frozenset[Capability]] = InMemoryAdapter.capabilities - {"branches"}


class LinearSQLiteAdapter(SQLiteAdapter):
    """A SQLite store that declares no branches."""

    capabilities: ClassVar[frozenset[Capability]] = SQLiteAdapter.capabilities - {"branches"}


class WithoutGetPath:
    """A store written without ``get_path`` (nor the other tree calls): the rest of an InMemory store."""

    def __init__(self) -> None:
        self._inner = InMemoryAdapter()

    def __getattr__(self, name: str) -> Any:
        if name in ("get_path", "rewind", "checkout", "fork_thread"):
            raise AttributeError(name)
        return getattr(self._inner, name)


@pytest.fixture(params=["memory", "sqlite", "no-get-path"])
async def dated(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    kind = str(request.param)
    store: Any
    if kind == "memory":
        store = LinearMemoryAdapter()
    elif kind == "sqlite":
        store = LinearSQLiteAdapter(path=tmp_path / "linear.db")
    else:
        store = WithoutGetPath()
    unwrap(await store.connect())
    try:
        yield store
    finally:
        await store.disconnect()


def recap(chat: ScriptedChatRequest) -> str:
    firsts = [text.split()[0] for _, text in chat.messages if re.match(r"m\d+ ", text)]
    return "Recap: " + " ".join(firsts)


async def fill(
    memory: Any, thread_id: str, count: int, start: int = 0, at: datetime | None = None
) -> list[MemoryEntry]:
    out = []
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"m{i} says something about topic number {i} that is worth keeping around for later"
        entry = {"thread_id": thread_id, "message": {"role": role, "content": text}}
        if at is None:
            out.append(unwrap(await memory.add_entry(entry)))
        else:
            with frozen_clock(at + timedelta(minutes=i)):
                out.append(unwrap(await memory.add_entry(entry)))
    return out


async def stored(memory: Any, thread_id: str) -> list[tuple[str, str | None, datetime]]:
    entries = unwrap(await memory.get_entries(thread_id, types="all"))
    return [(e.id, e.message.text if e.message else None, e.created_at) for e in entries]


async def test_the_summary_is_dated_before_the_first_kept_entry_and_the_covered_ones_go(
    dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await dated.create_thread("concierge"))
    written = await fill(dated, thread.id, 12, at=T0)
    service = CompactionService(dated, summarize_fn(client))
    assert service.dated and not has_paths(dated)

    result = await service.compact(thread.id, message_threshold=10, keep_recent=4)

    assert result.compacted and result.covered == 8 and (result.original_messages, result.compacted_messages) == (12, 5)
    entries = unwrap(await dated.get_entries(thread.id, types="all"))
    assert {e.id for e in entries} == {result.entry_id, *(e.id for e in written[8:])}  # the covered ones went
    summary = unwrap(await dated.get_entry(result.entry_id))
    assert summary is not None and summary.type == "message" and summary.message is not None
    assert summary.created_at == written[8].created_at - timedelta(microseconds=1)
    text = "Recap: " + " ".join(f"m{i}" for i in range(8))
    assert summary.message.text == f"{SUMMARY_HEADING}\n{text}"
    event = compaction_of(summary)
    assert event is not None and event.summary == text and event.strategy == "summary"
    assert event.first_kept_entry_id == written[8].id and summary.metadata is not None
    assert COMPACTION_SUMMARY_KEY in summary.metadata

    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert [e.id for e in view] == [result.entry_id, *(e.id for e in written[8:])]
    refused = await read_compacted_history(dated, thread_id=thread.id, leaf_id=written[9].id)
    assert not refused.success and refused.error_type is InvalidArgumentError and "leaf_id" in (refused.error or "")

    later = await fill(dated, thread.id, 2, start=12, at=T0 + timedelta(hours=1))
    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert [e.id for e in view] == [result.entry_id, *(e.id for e in written[8:]), *(e.id for e in later)]

    if not isinstance(dated, WithoutGetPath):  # the builder reads branches with get_path or this way
        built = await ContextBuilder({"strategy": "recent"}, {"memory_adapter": dated}).build(
            thread.id, max_tokens=8000
        )
        texts = [m.text for m in built.messages]
        assert texts.index(f"{SUMMARY_HEADING}\n{text}") < texts.index(written[8].message.text)  # type: ignore[union-attr]
        assert [t.split()[0] for t in texts if re.match(r"m\d+ ", t)] == [f"m{i}" for i in range(8, 14)]

    # Compacting again summarizes only what is new, the summary before first; it goes too.
    second = await service.compact(thread.id, message_threshold=6, keep_recent=2)
    assert second.covered == 4
    sent = [str(m["content"]) for m in server.requests_to(PATH)[1].json()["messages"]]
    assert sent[1] == f"{SUMMARY_HEADING}\n{text}"
    assert [t.split()[0] for t in sent[2:6]] == ["m8", "m9", "m10", "m11"] and "m12 " not in " ".join(sent)
    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert [e.id for e in view] == [second.entry_id, later[0].id, later[1].id]
    assert {e[0] for e in await stored(dated, thread.id)} == {second.entry_id, later[0].id, later[1].id}


@pytest.mark.parametrize("failure", ["http-500", "timeout", "blank"])
async def test_a_failing_summarizer_leaves_a_dated_store_as_it_was(
    failure: str, dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    thread = unwrap(await dated.create_thread("concierge"))
    await fill(dated, thread.id, 8)
    before = await stored(dated, thread.id)
    timeout = 60.0
    if failure == "http-500":
        server.enqueue(PATH, status=500, json={"error": {"message": "overloaded"}})
    elif failure == "timeout":

        def late_answer(request: RecordedRequest) -> ScriptedResponse:
            time.sleep(1.0)
            return ScriptedResponse(json={})

        server.fallback(PATH, late_answer)
        timeout = 0.3
    else:
        server.fallback(PATH, openai_chat_handler("   "))
    service = CompactionService(dated, summarize_fn(client), timeout=timeout)
    why = {"http-500": "the summarizer failed", "timeout": "no answer within", "blank": "no usable summary"}
    with pytest.raises(CompactionError, match=why[failure]):
        await service.compact(thread.id, message_threshold=4, keep_recent=2)
    if failure == "http-500":
        server.enqueue(PATH, status=500, json={"error": {"message": "overloaded"}})
    why["blank"] = "no JSON array"
    with pytest.raises(CompactionError, match=why[failure]):
        await service.compact(thread.id, strategy="hierarchical", message_threshold=4, keep_recent=2)
    assert await stored(dated, thread.id) == before


async def test_entries_racing_a_dated_compaction_stay_after_it(
    dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await dated.create_thread("concierge"))
    await fill(dated, thread.id, 6)
    model = summarize_fn(client)
    late: list[MemoryEntry] = []

    async def racing(messages: Sequence[Message], options: SummarizeOptions) -> str:
        late.extend(await fill(dated, thread.id, 2, start=100))
        return await model(messages, options)

    result = await CompactionService(dated, racing).compact(thread.id, message_threshold=6, keep_recent=0)

    assert result.covered == 6 and result.compacted_messages == 3
    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert [e.id for e in view] == [result.entry_id, late[0].id, late[1].id]
    event = compaction_of(view[0])
    assert event is not None and event.first_kept_entry_id == late[0].id
    assert view[0].created_at < late[0].created_at
    assert {e[0] for e in await stored(dated, thread.id)} == {e.id for e in view}


async def test_a_covered_entry_deleted_meanwhile_refuses_the_dated_summary(
    dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await dated.create_thread("concierge"))
    written = await fill(dated, thread.id, 8)
    model = summarize_fn(client)

    async def meanwhile(messages: Sequence[Message], options: SummarizeOptions) -> str:
        unwrap(await dated.delete_entry(written[2].id))
        return await model(messages, options)

    with pytest.raises(CompactionError):
        await CompactionService(dated, meanwhile).compact(thread.id, message_threshold=4, keep_recent=2)
    left = await stored(dated, thread.id)
    assert [e[0] for e in left] == [e.id for i, e in enumerate(written) if i != 2]


async def test_hierarchical_levels_are_carried_by_the_dated_summary(
    dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler("[]"))
    thread = unwrap(await dated.create_thread("concierge"))
    say = [
        ("user", "Please plan the Porto trip.\nTODO: book the train to Porto"),
        ("assistant", "On it."),
        ("user", "Ana's budget is 900 euros."),
        ("assistant", "Understood."),
    ]
    for role, text in say:
        unwrap(await dated.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
    service = CompactionService(dated, summarize_fn(client))
    first = await service.compact(thread.id, strategy="hierarchical", message_threshold=4, keep_recent=1)
    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert view[0].id == first.entry_id and [e.message.text for e in view[1:]] == ["Understood."]  # type: ignore[union-attr]
    levels = levels_of(view[0])
    assert levels is not None and len(levels.chapters) == 1
    assert "Open tasks:\n- book the train to Porto\n" in compaction_of(view[0]).summary  # type: ignore[union-attr]

    for text in ("Let us talk about food.", "Sure."):
        role = "user" if text.startswith("Let") else "assistant"
        unwrap(await dated.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
    second = await service.compact(thread.id, strategy="hierarchical", message_threshold=3, keep_recent=1)
    view = unwrap(await read_compacted_history(dated, thread_id=thread.id))
    assert view[0].id == second.entry_id and [e.message.text for e in view[1:]] == ["Sure."]  # type: ignore[union-attr]
    levels = levels_of(view[0])
    assert levels is not None and len(levels.chapters) == 2  # the tree before was read from the summary message
    assert "Open tasks:\n- book the train to Porto\n" in compaction_of(view[0]).summary  # type: ignore[union-attr]
    transcript = server.requests_to(PATH)[-1].json()["messages"][1]["content"]
    assert "Please plan the Porto trip" not in transcript and "Let us talk about food." in transcript


def test_dated_history_reads_time_order_and_ignores_a_broken_summary() -> None:
    def entry(i: int, at: datetime, metadata: dict[str, Any] | None = None) -> MemoryEntry:
        return MemoryEntry(
            id=f"e{i}",
            thread_id="t",
            seq=i,
            created_at=at,
            message=Message(role="user", content=f"text {i}"),
            metadata=metadata,
        )

    broken = entry(9, T0, {COMPACTION_SUMMARY_KEY: {"summary": 3}})
    plain = [entry(1, T0 + timedelta(minutes=2)), entry(2, T0 + timedelta(minutes=1)), broken]
    assert [e.id for e in dated_history(plain)] == ["e9", "e2", "e1"]  # time order; the broken one is a message
    summary = entry(
        5, T0 + timedelta(minutes=1), {COMPACTION_SUMMARY_KEY: {"summary": "s", "first_kept_entry_id": "e1"}}
    )
    # same microsecond as e2 (a covered entry left behind): the summary goes first, e2 is before its first kept
    assert [e.id for e in dated_history([*plain, summary])] == ["e5", "e1"]


async def test_a_session_on_a_dated_store_counts_what_the_compaction_left(
    dated: Any, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    sessions = SessionManager(dated, compaction=CompactionService(dated, summarize_fn(client)))
    session = await sessions.get_or_create("ana", "telegram", "chat-1", "concierge")
    await fill(dated, session.id, 8)
    assert (await sessions.get(session.id)).message_count == 8  # type: ignore[union-attr]
    result = await sessions.compact(session.id, message_threshold=8, keep_recent=3)
    assert result.covered == 5
    # the five covered messages went; the summary message is not one of the session's
    assert (await sessions.get(session.id)).message_count == 3  # type: ignore[union-attr]
    assert [s.message_count for s in await sessions.list(user_id="ana")] == [3]
