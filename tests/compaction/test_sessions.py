"""SessionManager on every built-in thread store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory import unwrap
from cogitator_memory.clock import frozen_clock
from cogitator_memory.compaction import (
    SESSION_INDEX_THREAD_ID,
    CompactionError,
    CompactionService,
    SessionManager,
)
from cogitator_memory.errors import InvalidArgumentError, NotFoundError
from cogitator_memory.models import OpenAIChatClient, summarize_fn
from cogitator_memory.testing.scripted_server import ScriptedServer, openai_chat_handler
from cogitator_memory.threads.base import BaseMemoryAdapter

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def test_sessions_are_made_once_found_updated_and_listed(memory: BaseMemoryAdapter) -> None:
    sessions = SessionManager(memory)
    with frozen_clock(T0):
        ana = await sessions.get_or_create("ana", "telegram", "chat-1", "concierge")
    with frozen_clock(T0 + timedelta(minutes=5)):
        bob = await sessions.get_or_create("bob", "slack", "C1", "concierge")
        ana_web = await sessions.get_or_create("ana", "web", "tab-9", "concierge")
    assert (ana.id, ana.status, ana.agent_id, ana.channel_id) == (
        "session_telegram_ana",
        "active",
        "concierge",
        "chat-1",
    )
    with frozen_clock(T0 + timedelta(minutes=1)):
        again = await sessions.get_or_create("ana", "telegram", "chat-2", "concierge")
    assert again.id == ana.id and again.channel_id == "chat-2"
    assert unwrap(await memory.get_thread(ana.id)) is not None

    updated = await sessions.update(bob.id, config={"temperature": 0.2})
    assert updated.config == {"temperature": 0.2} and updated.status == "active"
    archived = await sessions.archive(ana.id)
    assert archived.status == "archived" and (await sessions.get(ana.id)).status == "archived"  # type: ignore[union-attr]

    assert {s.id for s in await sessions.list()} == {ana.id, bob.id, ana_web.id}
    assert {s.id for s in await sessions.list(user_id="ana")} == {ana.id, ana_web.id}
    assert {s.id for s in await sessions.list(status="active")} == {ana_web.id, bob.id}
    assert [s.id for s in await sessions.list(user_id="ana")] == [ana_web.id, ana.id]  # most recently used first
    assert [s.id for s in await sessions.list(user_id="ana", status="active", limit=5)] == [ana_web.id]
    assert len(await sessions.list(limit=1)) == 1

    # Another manager (another process) sees the same sessions through the index.
    assert {s.id for s in await SessionManager(memory).list(status="archived")} == {ana.id}

    await sessions.delete(bob.id)
    assert await sessions.get(bob.id) is None and unwrap(await memory.get_thread(bob.id)) is None
    assert {s.id for s in await sessions.list()} == {ana.id, ana_web.id}
    await sessions.delete(bob.id)  # a missing session succeeds


async def test_use_refreshes_the_index_at_most_once_per_interval(memory: BaseMemoryAdapter) -> None:
    sessions = SessionManager(memory, index_refresh_interval=60)
    with frozen_clock(T0):
        ana = await sessions.get_or_create("ana", "telegram", "chat-1", "concierge")
    index = unwrap(await memory.get_thread(SESSION_INDEX_THREAD_ID))
    assert index is not None and index.metadata[ana.id]["last_active_at"] == T0.isoformat()

    # The index loses the session (a ttl ran out, a hand edit): using it puts it back.
    unwrap(await memory.update_thread(SESSION_INDEX_THREAD_ID, {ana.id: None}))
    with frozen_clock(T0 + timedelta(seconds=30)):
        await sessions.get(ana.id)
    assert await sessions.list() == []  # within the interval: not written yet
    with frozen_clock(T0 + timedelta(seconds=61)):
        seen = await sessions.get(ana.id)
    assert seen is not None and seen.last_active_at == T0 + timedelta(seconds=61)
    assert [s.id for s in await sessions.list()] == [ana.id]
    index = unwrap(await memory.get_thread(SESSION_INDEX_THREAD_ID))
    assert index is not None and index.metadata[ana.id]["last_active_at"] == (T0 + timedelta(seconds=61)).isoformat()


async def test_compact_goes_through_the_compaction_service(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback("/v1/chat/completions", openai_chat_handler("Ana asked about trains."))
    bare = SessionManager(memory)
    session = await bare.get_or_create("ana", "telegram", "chat-1", "concierge")
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"message {i} about the train timetable to Porto and the platforms"
        await memory.add_entry({"thread_id": session.id, "message": {"role": role, "content": text}})
    with pytest.raises(CompactionError, match="no compaction service"):
        await bare.compact(session.id, message_threshold=4)

    sessions = SessionManager(memory, compaction=CompactionService(memory, summarize_fn(client)))
    result = await sessions.compact(session.id, message_threshold=4, keep_recent=2)
    assert result.session_id == session.id and result.covered == 4 and result.compacted_messages == 3
    with pytest.raises(NotFoundError):
        await sessions.compact("session_telegram_nobody", message_threshold=4)


async def test_message_count_follows_the_thread(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback("/v1/chat/completions", openai_chat_handler("Ana asked about trains."))
    sessions = SessionManager(memory, compaction=CompactionService(memory, summarize_fn(client)))
    session = await sessions.get_or_create("ana", "telegram", "chat-1", "concierge")
    assert session.message_count == 0
    written = []
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"message {i} about the train timetable to Porto and the platforms"
        entry = unwrap(await memory.add_entry({"thread_id": session.id, "message": {"role": role, "content": text}}))
        written.append(entry)
    # a tool result entry and a label event are no messages
    unwrap(
        await memory.add_entry(
            {
                "thread_id": session.id,
                "type": "tool_result",
                "message": {"role": "tool", "content": "42", "tool_call_id": "c1"},
            }
        )
    )
    unwrap(await memory.add_entry({"thread_id": session.id, "type": "label", "event": {"label": "checkpoint"}}))
    assert (await sessions.get_or_create("ana", "telegram", "chat-1", "concierge")).message_count == 6
    assert (await sessions.get(session.id)).message_count == 6  # type: ignore[union-attr]
    assert [s.message_count for s in await sessions.list()] == [6]

    # a branch keeps its messages: an edit of the last message adds one
    unwrap(
        await memory.add_entry(
            {"thread_id": session.id, "parent_id": written[4].id, "message": {"role": "assistant", "content": "edit"}}
        )
    )
    unwrap(await memory.delete_entry(written[0].id))
    assert (await sessions.update(session.id, config={"tone": "brief"})).message_count == 6
    # a compaction summarizes, and deletes nothing: its summary is no message of the session
    result = await sessions.compact(session.id, message_threshold=2, keep_recent=1)
    assert result.compacted
    assert (await sessions.archive(session.id)).message_count == 6
    await sessions.delete(session.id)
    assert await sessions.get(session.id) is None


async def test_bad_arguments_name_themselves(memory: BaseMemoryAdapter) -> None:
    sessions = SessionManager(memory)
    with pytest.raises(InvalidArgumentError, match="user_id"):
        await sessions.get_or_create("", "telegram", "c", "a")
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        await sessions.get_or_create("ana", "telegram", "c", " ")
    session = await sessions.get_or_create("ana", "telegram", "c", "a")
    with pytest.raises(InvalidArgumentError, match="status"):
        await sessions.update(session.id, status="gone")
    with pytest.raises(InvalidArgumentError, match="config"):
        await sessions.update(session.id, config=[1])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="limit"):
        await sessions.list(limit=0)
    with pytest.raises(NotFoundError):
        await sessions.update("session_x_y", status="paused")
    with pytest.raises(InvalidArgumentError, match="index_refresh_interval"):
        SessionManager(memory, index_refresh_interval=-1)
    with pytest.raises(InvalidArgumentError, match="compaction"):
        SessionManager(memory, compaction="yes")  # type: ignore[arg-type]
