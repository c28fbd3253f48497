"""CompactionService on every built-in thread store, through a chat model over real HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from cogitator_memory import unwrap
from cogitator_memory.compaction import COMPACTION_PROMPT, CompactionError, CompactionService
from cogitator_memory.context import ContextBuilder
from cogitator_memory.context.history import SUMMARY_HEADING, read_compacted_history
from cogitator_memory.errors import InvalidArgumentError, NotFoundError
from cogitator_memory.models import OpenAIChatClient, SummarizeOptions, summarize_fn
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.threads.records import CompactionEvent, MemoryEntry, Message

PATH = "/v1/chat/completions"


def recap(chat: ScriptedChatRequest) -> str:
    """A summary naming the first word of every conversation message the model was sent (not the
    follow-up turn the summarizer adds, nor an earlier summary's heading)."""
    firsts = [text.split()[0] for _, text in chat.messages if re.match(r"m\d+ ", text)]
    return "Recap: " + " ".join(firsts)


async def fill(memory: BaseMemoryAdapter, thread_id: str, count: int, start: int = 0) -> list[MemoryEntry]:
    out = []
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"m{i} says something about topic number {i} that is worth keeping around for later"
        out.append(unwrap(await memory.add_entry({"thread_id": thread_id, "message": {"role": role, "content": text}})))
    return out


async def everything(memory: BaseMemoryAdapter, thread_id: str) -> list[tuple[str, str, str | None]]:
    entries = unwrap(await memory.get_entries(thread_id, types="all"))
    return [(e.id, e.type, e.message.text if e.message else None) for e in entries]


def sent_texts(server: ScriptedServer) -> list[list[str]]:
    return [[str(m["content"]) for m in r.json()["messages"]] for r in server.requests_to(PATH)]


async def test_summary_stands_in_for_older_entries_and_deletes_nothing(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    written = await fill(memory, thread.id, 14)
    service = CompactionService(memory, summarize_fn(client))

    result = await service.compact(
        thread.id,
        message_threshold=10,
        keep_recent=4,
        summary_model="small-model",
        summary_prompt="Keep names and decisions.",
    )

    assert (result.session_id, result.original_messages, result.compacted_messages) == (thread.id, 14, 5)
    assert result.covered == 10 and result.strategy == "summary" and result.compacted
    summary = "Recap: " + " ".join(f"m{i}" for i in range(10))
    assert result.summary_tokens > 0
    body = server.requests_to(PATH)[0].json()
    assert body["model"] == "small-model"
    assert body["messages"][0] == {"role": "system", "content": "Keep names and decisions."}
    assert [m["content"].split()[0] for m in body["messages"][1:11]] == [f"m{i}" for i in range(10)]
    assert not any("m10 " in str(m["content"]) for m in body["messages"])

    entries = unwrap(await memory.get_entries(thread.id))
    assert [e.id for e in entries] == [e.id for e in written]  # nothing deleted
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert view[0].type == "compaction" and view[0].id == result.entry_id
    event = view[0].event
    assert isinstance(event, CompactionEvent)
    assert event.summary == summary and event.first_kept_entry_id == written[10].id
    assert event.strategy == "summary" and event.tokens_before and event.tokens_before > 0
    assert [e.id for e in view[1:]] == [e.id for e in written[10:]]
    path = unwrap(await memory.get_path(thread.id, types="all"))
    assert path[-1].id == result.entry_id  # at the end of the active branch

    built = await ContextBuilder({"strategy": "recent"}, {"memory_adapter": memory}).build(thread.id, max_tokens=8000)
    texts = [m.text for m in built.messages]
    assert f"{SUMMARY_HEADING}\n{summary}" in texts
    assert not any(t.startswith(f"m{i} ") for t in texts for i in range(10))
    assert [t.split()[0] for t in texts if t.startswith("m1")] == ["m10", "m11", "m12", "m13"]


async def test_under_its_thresholds_a_thread_is_left_alone(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    await fill(memory, thread.id, 6)
    before = await everything(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client))

    result = await service.compact(thread.id, threshold=100_000, message_threshold=7, keep_recent=2)
    assert (result.original_messages, result.compacted_messages, result.summary_tokens) == (6, 6, 0)
    assert not result.compacted and result.entry_id is None
    # Due, but everything is within keep_recent: nothing to cover.
    assert not (await service.compact(thread.id, message_threshold=1, keep_recent=6)).compacted
    assert await everything(memory, thread.id) == before and server.requests_to(PATH) == []


async def test_compacting_again_summarizes_only_what_is_new(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    written = await fill(memory, thread.id, 8)
    service = CompactionService(memory, summarize_fn(client))
    first = await service.compact(thread.id, message_threshold=8, keep_recent=2)
    written += await fill(memory, thread.id, 6, start=8)

    second = await service.compact(thread.id, message_threshold=8, keep_recent=2)

    assert second.original_messages == 1 + 2 + 6 and second.compacted_messages == 3 and second.covered == 6
    sent = sent_texts(server)[1]
    assert sent[0] == COMPACTION_PROMPT
    assert sent[1] == f"{SUMMARY_HEADING}\nRecap: m0 m1 m2 m3 m4 m5"
    assert [t.split()[0] for t in sent[2:8]] == ["m6", "m7", "m8", "m9", "m10", "m11"]
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert view[0].id == second.entry_id != first.entry_id
    assert [e.id for e in view[1:]] == [e.id for e in written[12:]]
    assert len(unwrap(await memory.get_entries(thread.id, types="all"))) == 14 + 2


@pytest.mark.parametrize(
    "failure", ["http-500", "timeout", "blank", "surrogate", "longer", "ok", "punctuation", "refusal", "raises"]
)
async def test_a_failing_summarizer_leaves_the_thread_as_it_was(
    failure: str, memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    thread = unwrap(await memory.create_thread("concierge"))
    await fill(memory, thread.id, 8)
    before = await everything(memory, thread.id)
    summarize = summarize_fn(client)
    timeout = 60.0
    if failure == "http-500":
        server.enqueue(PATH, status=500, json={"error": {"message": "overloaded"}})
    elif failure == "timeout":
        server.enqueue(PATH, json={}, delay=1.5)
        timeout = 0.3
    elif failure == "blank":
        server.fallback(PATH, openai_chat_handler("   "))
    elif failure == "surrogate":
        answer = {"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop"}]}
        answer["choices"][0]["message"] = {"role": "assistant", "content": "SURROGATE broken"}  # type: ignore[index]
        server.enqueue(PATH, body=json.dumps(answer).replace("SURROGATE", "\\ud800"))
    elif failure == "longer":
        server.fallback(PATH, openai_chat_handler("word " * 2000))
    elif failure == "ok":  # an answer, not a summary: fewer than MIN_SUMMARY_WORDS words
        server.fallback(PATH, openai_chat_handler("OK."))
    elif failure == "punctuation":
        server.fallback(PATH, openai_chat_handler("... -- !!! ?"))
    elif failure == "refusal":
        server.fallback(PATH, openai_chat_handler("Sorry, no."))
    else:

        async def boom(messages: Sequence[Message], options: SummarizeOptions) -> str:
            raise RuntimeError("no model today")

        summarize = boom
    service = CompactionService(memory, summarize, timeout=timeout)

    with pytest.raises(CompactionError):
        await service.compact(thread.id, message_threshold=4, keep_recent=2)
    assert await everything(memory, thread.id) == before


async def test_entries_added_while_the_summary_is_written_stay_after_it(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    written = await fill(memory, thread.id, 6)
    model = summarize_fn(client)
    late: list[MemoryEntry] = []

    async def racing(messages: Sequence[Message], options: SummarizeOptions) -> str:
        late.extend(await fill(memory, thread.id, 2, start=100))
        return await model(messages, options)

    result = await CompactionService(memory, racing).compact(thread.id, message_threshold=6, keep_recent=0)

    assert result.covered == 6 and result.compacted_messages == 3
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert [e.id for e in view] == [result.entry_id, late[0].id, late[1].id]
    event = view[0].event
    assert isinstance(event, CompactionEvent) and event.first_kept_entry_id == late[0].id
    assert event.summary == "Recap: " + " ".join(f"m{i}" for i in range(6))
    assert len(unwrap(await memory.get_entries(thread.id))) == len(written) + 2


@pytest.mark.parametrize("change", ["redact", "delete", "rewind"])
async def test_a_summary_whose_entries_changed_meanwhile_is_refused(
    change: str, memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    written = await fill(memory, thread.id, 8)
    model = summarize_fn(client)

    async def meanwhile(messages: Sequence[Message], options: SummarizeOptions) -> str:
        if change == "redact":
            unwrap(await memory.redact_entry(written[1].id, {"at": datetime.now(UTC), "reason": "erasure"}))
        elif change == "delete":
            unwrap(await memory.delete_entry(written[2].id))
        else:
            unwrap(await memory.rewind(thread.id, written[3].id))
        return await model(messages, options)

    before_change = await everything(memory, thread.id)
    with pytest.raises(CompactionError):
        await CompactionService(memory, meanwhile).compact(thread.id, message_threshold=4, keep_recent=2)
    after = await everything(memory, thread.id)
    assert not any(kind == "compaction" for _, kind, _ in after)
    if change == "rewind":
        assert after == before_change


async def test_window_strategies_leave_entries_out_without_a_model(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    written = await fill(memory, thread.id, 8)
    service = CompactionService(memory, summarize_fn(client))

    small = await service.compact(thread.id, strategy="hybrid", message_threshold=8, keep_recent=3)
    assert small.strategy == "sliding-window" and small.covered == 5 and server.requests_to(PATH) == []
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert [e.id for e in view[1:]] == [e.id for e in written[5:]]
    assert isinstance(view[0].event, CompactionEvent) and "5 earlier messages" in view[0].event.summary

    written += await fill(memory, thread.id, 8, start=8)
    large = await service.compact(thread.id, strategy="hybrid", message_threshold=8, keep_recent=2)
    assert large.strategy == "summary" and large.covered == 9 and len(server.requests_to(PATH)) == 1
    assert "5 earlier messages" in sent_texts(server)[0][1]  # the note is carried into the summary

    written += await fill(memory, thread.id, 4, start=16)
    window = await service.compact(thread.id, strategy="sliding-window", message_threshold=3, keep_recent=1)
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert window.strategy == "sliding-window" and [e.id for e in view[1:]] == [written[-1].id]
    assert isinstance(view[0].event, CompactionEvent) and view[0].event.summary.startswith("Recap: ")


async def test_a_tool_result_stays_with_its_call(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(recap))
    thread = unwrap(await memory.create_thread("concierge"))
    await fill(memory, thread.id, 4)
    call = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "message": {
                    "role": "assistant",
                    "content": "looking it up",
                    "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Rome"}}],
                },
            }
        )
    )
    await memory.add_entry(
        {"thread_id": thread.id, "message": {"role": "tool", "content": "sunny", "tool_call_id": "c1"}}
    )
    result = await CompactionService(memory, summarize_fn(client)).compact(
        thread.id, message_threshold=6, keep_recent=1
    )
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert result.covered == 4 and view[1].id == call.id
    sent = server.requests_to(PATH)[0].json()["messages"]
    assert not any(m.get("tool_call_id") for m in sent)


async def test_bad_arguments_name_themselves(memory: BaseMemoryAdapter, client: OpenAIChatClient) -> None:
    service = CompactionService(memory, summarize_fn(client))
    thread = unwrap(await memory.create_thread("concierge"))
    cases: list[tuple[str, dict[str, object]]] = [
        ("strategy", {"strategy": "shrink", "threshold": 10}),
        ("threshold", {}),
        ("threshold", {"threshold": 0}),
        ("message_threshold", {"message_threshold": True}),
        ("keep_recent", {"threshold": 10, "keep_recent": -1}),
        ("summary_model", {"threshold": 10, "summary_model": " "}),
        ("summary_prompt", {"threshold": 10, "summary_prompt": 3}),
    ]
    for name, kwargs in cases:
        with pytest.raises(InvalidArgumentError) as info:
            await service.compact(thread.id, **kwargs)  # type: ignore[arg-type]
        assert info.value.argument == name, (name, kwargs)
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        await service.compact("", threshold=10)
    with pytest.raises(NotFoundError):
        await service.compact("no-such-thread", threshold=10)
    with pytest.raises(InvalidArgumentError, match="timeout"):
        CompactionService(memory, summarize_fn(client), timeout=0)
    with pytest.raises(InvalidArgumentError, match="summarize"):
        CompactionService(memory, "model")  # type: ignore[arg-type]
    assert json.dumps(COMPACTION_PROMPT)


async def test_a_summary_too_short_for_what_it_replaces_is_refused(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    """The documented rule: at least MIN_SUMMARY_WORDS words, and at least MIN_SUMMARY_SHARE of the
    tokens replaced up to MIN_SUMMARY_TOKENS; a real summary of a long history passes."""
    from cogitator_memory.compaction.service import MIN_SUMMARY_TOKENS, check_summary
    from cogitator_memory.tokens import count_tokens

    thread = unwrap(await memory.create_thread("concierge"))
    await fill(memory, thread.id, 80)
    before = await everything(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client))
    short = "The user and the assistant talked about many topics."
    assert count_tokens(short) < MIN_SUMMARY_TOKENS
    server.fallback(PATH, openai_chat_handler(short))
    with pytest.raises(CompactionError, match="too short for what it replaces"):
        await service.compact(thread.id, message_threshold=10, keep_recent=2)
    assert await everything(memory, thread.id) == before

    long_enough = " ".join(f"m{i} covered topic {i}." for i in range(78))
    server.fallback(PATH, openai_chat_handler(long_enough))
    result = await service.compact(thread.id, message_threshold=10, keep_recent=2)
    assert result.compacted and result.covered == 78
    # A short history takes a short summary; no history takes three bare words.
    check_summary("Ana likes tea.", 40)
    with pytest.raises(CompactionError, match="at least 3 are needed"):
        check_summary("Noted!", 40)
    with pytest.raises(CompactionError, match="too short"):
        check_summary("Ana likes tea.", 5000)
