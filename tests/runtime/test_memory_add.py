"""``Memory.add`` once the turns are stored: failures of compaction and extraction are reported,
not raised; a retry with the same idempotency key writes nothing twice; concurrent adds to one
thread keep each call's messages next to each other. Real stores, a real model over HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_memory import _config

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.models.base import summarize_fn
from cogitator_memory.models.factory import create_chat_client
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.testing.scripted_server import ScriptedResponse, ScriptedServer, openai_chat_handler

ENGINES = ["memory", "sqlite", "postgres", "redis", "mongodb"]
TURNS = [
    {"role": "user", "content": "I live in Braga and I keep bees."},
    {"role": "assistant", "content": "Bees in Braga, lovely. How many hives?"},
]
ITEMS = [
    {
        "kind": "fact",
        "subject": "user",
        "attribute": "city",
        "value": "Braga",
        "quotes": [{"message": 1, "quote": "I live in Braga"}],
    }
]


def _dead_url() -> str:
    """The URL of a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _answer(server: ScriptedServer, kind: str) -> str:
    """Make ``server`` answer chat calls the way ``kind`` fails; the base URL to use."""
    if kind == "dead port":
        return _dead_url()
    if kind == "401":
        response = ScriptedResponse(401, json={"error": {"message": "bad key", "type": "invalid_api_key"}})
    elif kind == "500":
        response = ScriptedResponse(500, json={"error": {"message": "boom"}})
    elif kind == "html":
        response = ScriptedResponse(
            200, body="<html><body>Gateway</body></html>", headers={"Content-Type": "text/html"}
        )
    else:  # prose: a well-formed chat answer without the JSON asked for
        server.fallback("/v1/chat/completions", openai_chat_handler("Sure! The user seems to like bees."))
        return server.url + "/v1"
    server.fallback("/v1/chat/completions", lambda request: response)
    return server.url + "/v1"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


async def _memory(config: dict[str, Any], base_url: str) -> Memory:
    model = {"provider": "compatible", "model": "m", "base_url": base_url, "api_key": "k"}
    # The config's model, without retries (a 500 or a dead port fails at once).
    client = create_chat_client({**model, "max_retries": 0})
    memory = Memory({**config, "model": model, "embedding": {"provider": "none"}}, summarize=summarize_fn(client))
    memory._owned.append(client)
    await memory.connect()
    return memory


async def _texts(memory: Memory, thread_id: str) -> list[str]:
    return [str(m.content) for m in await memory.history(thread_id)]


STAGES = {
    "compaction": {"compaction": {"threshold": 2, "keep_recent": 1}},
    "extraction": {"extraction": {"mode": "active"}},
}


FAILURES = [
    (stage, kind)
    for stage in STAGES
    for kind in ("dead port", "401", "500", "html", "prose")
    # Any text is a summary to compaction: prose does not fail it.
    if (stage, kind) != ("compaction", "prose")
]


@pytest.mark.parametrize(("stage", "kind"), FAILURES)
async def test_a_failure_after_the_write_is_reported_not_raised(
    server: ScriptedServer, tmp_path: Path, stage: str, kind: str
) -> None:
    memory = await _memory({**_config("sqlite", tmp_path), **STAGES[stage]}, _answer(server, kind))
    try:
        added = await memory.add(TURNS, user_id="ana", thread_id="t")
        assert [e.message.content for e in added.entries if e.message] == [t["content"] for t in TURNS]
        assert [error.stage for error in added.errors] == [stage]
        assert added.errors[0].message and not added.replayed
        assert await _texts(memory, "t") == [t["content"] for t in TURNS]  # the turns stay
    finally:
        await memory.close()


async def test_a_step_that_works_reports_no_error(server: ScriptedServer, tmp_path: Path) -> None:
    server.fallback("/v1/chat/completions", openai_chat_handler(json.dumps(ITEMS)))
    memory = await _memory({**_config("sqlite", tmp_path), **STAGES["extraction"]}, server.url + "/v1")
    try:
        added = await memory.add(TURNS, user_id="ana", thread_id="t")
        assert added.errors == [] and len(added.entries) == 2
        found = await memory.items.query({"agent_id": "default", "user_id": "ana"}, statuses=["active"])
        assert [item.value for item in found] == ["Braga"]
    finally:
        await memory.close()


@pytest.fixture(params=ENGINES)
async def failing(request: pytest.FixtureRequest, tmp_path: Path, server: ScriptedServer) -> AsyncIterator[Memory]:
    """A memory on every store whose extraction fails (the model answers 401)."""
    memory = await _memory({**_config(request.param, tmp_path), **STAGES["extraction"]}, _answer(server, "401"))
    try:
        yield memory
    finally:
        await memory.close()


async def test_a_retry_with_the_key_writes_nothing_twice(failing: Memory) -> None:
    first = await failing.add(TURNS, user_id="ana", thread_id="t", idempotency_key="turn-1")
    assert [error.stage for error in first.errors] == ["extraction"] and not first.replayed
    again = await failing.add(TURNS, user_id="ana", thread_id="t", idempotency_key="turn-1")
    assert again.replayed and again.errors == []
    assert [e.id for e in again.entries] == [e.id for e in first.entries]
    assert await _texts(failing, "t") == [t["content"] for t in TURNS]
    # Another key is another add; the first key still names the first one.
    later = [{"role": "user", "content": "Three hives."}]
    await failing.add(later, user_id="ana", thread_id="t", idempotency_key="turn-2")
    await failing.add(later, user_id="ana", thread_id="t", idempotency_key="turn-2")
    await failing.add(TURNS, user_id="ana", thread_id="t", idempotency_key="turn-1")
    assert await _texts(failing, "t") == [t["content"] for t in TURNS] + ["Three hives."]
    # The key is the thread's: the same key on another thread is a new add.
    other = await failing.add(TURNS, user_id="ana", thread_id="t2", idempotency_key="turn-1")
    assert not other.replayed and await _texts(failing, "t2") == [t["content"] for t in TURNS]


async def test_a_retry_of_tool_calls_and_anthropic_messages_is_replayed(failing: Memory) -> None:
    openai = [
        {"role": "user", "content": "What is 2+2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"e": "2+2"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "It is 4."},
    ]
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "calc", "input": {"e": "3+3"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "6"}]},
    ]
    for messages, system in ((openai, None), (anthropic, "Be exact.")):
        first = await failing.add(messages, thread_id="t", system=system, idempotency_key=str(system))
        again = await failing.add(messages, thread_id="t", system=system, idempotency_key=str(system))
        assert again.replayed and [e.id for e in again.entries] == [e.id for e in first.entries]
    entries = (await failing.adapter.get_entries("t", types="all")).data or []
    assert len(entries) == len(openai) + len(anthropic) + 1  # + the system prompt, each once


async def test_a_key_used_for_other_messages_is_refused(failing: Memory) -> None:
    await failing.add(TURNS, thread_id="t", idempotency_key="k")
    changed = [TURNS[0], {"role": "assistant", "content": "Something else."}]
    for messages in (changed, TURNS[:1], TURNS[:1] + TURNS + TURNS[1:], TURNS[::-1]):
        with pytest.raises(InvalidArgumentError) as refused:
            await failing.add(messages, thread_id="t", idempotency_key="k")
        assert refused.value.argument == "idempotency_key"
    assert await _texts(failing, "t") == [t["content"] for t in TURNS]


async def test_a_retry_completes_an_add_cut_short(failing: Memory) -> None:
    # An add cut short after its first message (a killed process) left only that one, and
    # another add came after it.
    await failing.add(TURNS[:1], thread_id="t", idempotency_key="k")
    await failing.add([{"role": "user", "content": "meanwhile"}], thread_id="t")
    resumed = await failing.add(TURNS, thread_id="t", idempotency_key="k")
    assert not resumed.replayed and len(resumed.entries) == 2
    # Each message once, none hidden on a branch (the answer goes after the active leaf).
    assert await _texts(failing, "t") == [TURNS[0]["content"], "meanwhile", TURNS[1]["content"]]
    assert (await failing.add(TURNS, thread_id="t", idempotency_key="k")).replayed


async def test_a_key_is_checked_before_anything_is_written(tmp_path: Path) -> None:
    async with Memory({**_config("sqlite", tmp_path), "embedding": {"provider": "none"}}) as memory:
        for key, thread in (("", "t"), ("a\nb", "t"), ("x" * 300, "t"), (7, "t"), ("k", None)):
            with pytest.raises(InvalidArgumentError) as refused:
                await memory.add(TURNS, thread_id=thread, idempotency_key=key)  # type: ignore[arg-type]
            assert refused.value.argument == "idempotency_key"
        assert (await memory.adapter.list_threads()).data.threads == []  # type: ignore[union-attr]


@pytest.mark.parametrize("engine", ENGINES)
async def test_concurrent_adds_keep_each_call_together(engine: str, tmp_path: Path) -> None:
    async with Memory({**_config(engine, tmp_path), "embedding": {"provider": "none"}}) as memory:
        pairs = [
            [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
            for n in range(50)
        ]
        results = await asyncio.gather(*(memory.add(pair, user_id="ana", thread_id="busy") for pair in pairs))
        texts = await _texts(memory, "busy")
    assert len(texts) == 100 and sorted(texts) == sorted(m["content"] for pair in pairs for m in pair)
    assert all(texts[i].replace("question", "answer") == texts[i + 1] for i in range(0, 100, 2)), texts
    assert all(r.entries[1].parent_id == r.entries[0].id for r in results)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_conversation_added_after_the_fact_is_dated_and_found_then(engine: str, tmp_path: Path) -> None:
    """``created_at`` dates every message of the call: recall finds a session for a question
    about when it was said, and reads "tomorrow" in it from that day."""
    march = datetime(2024, 3, 12, 18, 30, tzinfo=UTC)
    async with Memory({**_config(engine, tmp_path), "embedding": {"provider": "none"}}) as memory:
        first = await memory.add(
            [
                {"role": "user", "content": "I fly to Oslo tomorrow for the tulip fair."},
                {"role": "assistant", "content": "Have a good flight!"},
            ],
            user_id="ana",
            created_at=march,
        )
        assert [e.created_at for e in first.entries] == [march, march]
        # the May session holds the question's words more; the March one was said then
        may = datetime(2024, 5, 2, 9, 0)  # naive: UTC
        later = await memory.add(
            [{"role": "user", "content": "The tulip fair again: a tulip fair trip, tulips everywhere."}],
            user_id="ana",
            created_at=may,
        )
        assert later.entries[0].created_at == may.replace(tzinfo=UTC)
        now = await memory.add([{"role": "user", "content": "Nothing about flowers."}], user_id="ana")
        assert now.entries[0].created_at > datetime(2026, 1, 1, tzinfo=UTC)
        hits = await memory.search("Where was I on 13 March 2024? The tulip fair?", user_id="ana")
        assert hits and hits[0].thread_id == first.thread_id and "Oslo" in hits[0].text
        for bad in (datetime.now(UTC) + timedelta(days=2), "2024-03-12"):
            with pytest.raises(InvalidArgumentError) as refused:
                await memory.add(TURNS, user_id="ana", thread_id="never", created_at=bad)  # type: ignore[arg-type]
            assert refused.value.argument == "created_at"
        assert (await memory.adapter.get_thread("never")).data is None
