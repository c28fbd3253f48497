"""CogitatorSession: the Agents SDK's Runner over a scripted Chat Completions server on loopback
HTTP, items kept word for word, the thread underneath (search, compaction, forgetting), bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.integrations.openai_agents import ITEM_KEY, CogitatorSession
from cogitator_memory.result import unwrap
from cogitator_memory.runtime import Memory
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler
from engine_configs import memory_config

set_tracing_disabled(True)

ENGINES = ["sqlite", "postgres", "memory", "redis", "mongodb"]


@pytest.fixture(params=ENGINES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    config = memory_config(request.param, tmp_path, "oa")
    config["embedding"] = {"provider": "none"}
    async with Memory(config) as mem:
        yield mem


@asynccontextmanager
async def _agent(server: ScriptedServer, **kw: Any) -> AsyncIterator[Agent]:
    async with AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-test", max_retries=0) as client:
        yield Agent(name="helper", instructions="Be brief.", model=OpenAIChatCompletionsModel("m", client), **kw)


async def test_two_turns_the_second_sees_the_first(memory: Memory) -> None:
    def answer(chat: ScriptedChatRequest) -> str:
        said = [text for role, text in chat.messages if role == "user"]
        return "Nice to meet you, Ana." if len(said) == 1 else f"You told me: {said[0]}"

    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler(answer))
        session = CogitatorSession("chat-1", memory, user_id="ana")
        async with _agent(server) as agent:
            first = await Runner.run(agent, "My name is Ana.", session=session)
            second = await Runner.run(agent, "What is my name?", session=session)
        sent = server.requests_to("/v1/chat/completions")[1].json()["messages"]

    assert first.final_output == "Nice to meet you, Ana."
    assert second.final_output == "You told me: My name is Ana."
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in sent[1:2]] == ["My name is Ana."]
    # the session is a thread of the memory: its history, and the user's search, hold the turns
    history = await memory.history("chat-1")
    assert [(m.role, m.text) for m in history] == [
        ("user", "My name is Ana."),
        ("assistant", "Nice to meet you, Ana."),
        ("user", "What is my name?"),
        ("assistant", "You told me: My name is Ana."),
    ]
    hits = await memory.search("name Ana", user_id="ana")
    assert any(h.thread_id == "chat-1" for h in hits)
    assert (await memory.search("name Ana", user_id="bo")) == []


async def test_a_tool_call_round_trips_through_the_thread(memory: Memory) -> None:
    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    call = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": json.dumps({"city": "Lisbon"})},
                        }
                    ],
                },
            }
        ],
    }
    with ScriptedServer() as server:
        server.enqueue("/v1/chat/completions", json=call)
        server.fallback("/v1/chat/completions", openai_chat_handler(lambda chat: chat.messages[-1][1]))
        session = CogitatorSession("chat-tools", memory)
        async with _agent(server, tools=[weather]) as agent:
            result = await Runner.run(agent, "Weather in Lisbon?", session=session)
    assert result.final_output == "Sunny in Lisbon"
    items = await session.get_items()
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call_output", "message"]
    assert items[1]["call_id"] == "call_1" and json.loads(items[1]["arguments"]) == {"city": "Lisbon"}
    assert items[2] == {"call_id": "call_1", "output": "Sunny in Lisbon", "type": "function_call_output"}
    # underneath: an assistant message calling the tool, then the tool's result
    path = unwrap(await memory.adapter.get_path("chat-tools", include_tool_calls=True))
    assert [e.type for e in path] == ["message", "message", "tool_result", "message"]
    assert path[1].message is not None and path[1].message.tool_calls is not None
    assert path[1].message.tool_calls[0].arguments == {"city": "Lisbon"}
    assert path[2].message is not None and path[2].message.tool_call_id == "call_1"


ODD_ITEMS: list[Any] = [
    {"role": "developer", "content": "Answer in French."},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"},
    {
        "role": "user",
        "type": "message",
        "content": [
            {"type": "input_text", "text": "What is on this picture?"},
            {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"},
        ],
    },
    {"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/dog.png"}]},
    {"type": "function_call", "call_id": "c9", "name": "lookup", "arguments": "not json {", "id": "fc_9"},
    {"type": "function_call_output", "call_id": "c9", "output": [{"type": "input_text", "text": "found"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "cats"}},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Un chat.", "annotations": []}],
    },
]


async def test_items_come_back_as_they_were_added_and_events_stay_out_of_prompts(memory: Memory) -> None:
    session = CogitatorSession("odd", memory)
    await session.add_items(ODD_ITEMS)
    assert await session.get_items() == ODD_ITEMS
    assert await session.get_items(limit=2) == ODD_ITEMS[-2:]
    sent = await memory.history("odd")
    # the reasoning and the hosted search have no text: events, kept out of what a model is sent
    assert [(m.role, m.text) for m in sent] == [
        ("system", "Answer in French."),
        ("user", "What is on this picture?"),
        ("user", ""),
        ("assistant", ""),
        ("tool", "found"),
        ("assistant", "Un chat."),
    ]
    path = unwrap(await memory.adapter.get_path("odd", types="all"))
    assert [e.type for e in path].count("custom") == 2
    assert all(ITEM_KEY in (e.metadata or {}) for e in path)


async def test_pop_and_clear(memory: Memory) -> None:
    session = CogitatorSession("pop", memory, user_id="ana")
    assert await session.pop_item() is None
    await session.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    assert await session.pop_item() == {"role": "assistant", "content": "two"}
    assert await session.get_items() == [{"role": "user", "content": "one"}]
    await session.clear_session()
    assert await session.get_items() == []
    assert unwrap(await memory.adapter.get_thread("pop")) is None
    await session.clear_session()  # nothing left: still fine


async def test_entries_added_by_memory_add_read_as_sdk_items(memory: Memory) -> None:
    await memory.add(
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "checking",
                "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "42"},
        ],
        thread_id="mixed",
    )
    session = CogitatorSession("mixed", memory)
    assert await session.get_items() == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "checking"},
        {"type": "function_call", "call_id": "t1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "t1", "output": "42"},
    ]


async def test_bad_input_writes_nothing(memory: Memory) -> None:
    session = CogitatorSession("bad", memory, user_id="ana")
    with pytest.raises(InvalidArgumentError, match=r"items\[1\]"):
        await session.add_items([{"role": "user", "content": "ok"}, "not an item"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match=r"items\[0\]"):
        await session.add_items([{"role": "user", "content": float("nan")}])
    with pytest.raises(InvalidArgumentError, match="items"):
        await session.add_items({"role": "user", "content": "a dict"})  # type: ignore[arg-type]
    assert unwrap(await memory.adapter.get_thread("bad")) is None
    await session.add_items([{"role": "user", "content": "mine"}])
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await CogitatorSession("bad", memory, user_id="bo").add_items([{"role": "user", "content": "theirs"}])
    with pytest.raises(InvalidArgumentError, match="limit"):
        await session.get_items(limit=-1)
    assert await session.get_items() == [{"role": "user", "content": "mine"}]


async def test_compaction_applies_to_the_session(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler("Ana asked about trains."))
        config = {
            "adapter": "sqlite",
            "path": str(tmp_path / "m.db"),
            "embedding": {"provider": "none"},
            "model": {"provider": "compatible", "model": "m", "base_url": server.url + "/v1", "api_key": "k"},
            "compaction": {"threshold": 6, "keep_recent": 2},
        }
        async with Memory(config) as memory:
            session = CogitatorSession("long", memory)
            for i in range(4):
                await session.add_items([{"role": "user", "content": f"train {i}?"}])
                await session.add_items([{"role": "assistant", "content": f"at {i} pm"}])
            items = await session.get_items()
    assert items[0]["role"] == "user" and "Ana asked about trains." in items[0]["content"]
    assert items[-1] == {"role": "assistant", "content": "at 3 pm"}
    assert len(items) < 8


def test_a_missing_sdk_names_the_pip_command() -> None:
    script = (
        "import sys\n"
        "sys.modules['agents'] = None  # as if openai-agents were not installed\n"
        "from cogitator_memory.integrations import CogitatorSession\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "MissingDriverError" in out.stderr
    assert 'pip install "cogitator-memory[agents]"' in out.stderr
