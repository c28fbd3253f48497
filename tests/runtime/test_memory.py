"""The Memory facade on every engine: add, search, build_context, the memory tools, history,
memory files; bad input and unreachable stores; compaction from the config over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.runtime.config import ConfigError
from cogitator_memory.runtime.memory import CORE_FACTS_HEADING, Memory, message_format
from cogitator_memory.testing.scripted_server import ScriptedServer, openai_chat_handler
from engine_configs import memory_config

NO_VECTORS = {"provider": "none"}
HASHING = {"provider": "hashing", "dimensions": 64}


def _config(engine: str, tmp_path: Path) -> dict[str, Any]:
    return memory_config(engine, tmp_path, "rt")


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis", "mongodb"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    config = {**_config(request.param, tmp_path), "embedding": HASHING, "files": {"enabled": True}}
    async with Memory(config) as opened:
        yield opened


async def test_add_search_and_history_on_every_engine(memory: Memory) -> None:
    added = await memory.add(
        [
            {"role": "user", "content": "My sister Marta moved to Porto last spring."},
            {"role": "assistant", "content": "Porto is lovely. Is she enjoying it?"},
        ],
        user_id="ana",
        thread_id="t-ana",
    )
    assert added.thread_id == "t-ana" and [e.message.role for e in added.entries if e.message] == ["user", "assistant"]
    await memory.add([{"role": "user", "content": "I moved to Porto too."}], user_id="bo", thread_id="t-bo")
    await memory.flush()
    hits = await memory.search("Porto sister", user_id="ana")
    assert hits and hits[0].thread_id == "t-ana" and "Marta" in hits[0].text
    assert all(hit.thread_id == "t-ana" for hit in hits)  # Bo's thread is not Ana's
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await memory.add([{"role": "user", "content": "mine now"}], user_id="bo", thread_id="t-ana")
    again = await memory.add([{"role": "user", "content": "She works at the port."}], thread_id="t-ana")
    assert again.thread_id == "t-ana"
    history = await memory.history("t-ana")
    assert [m.content for m in history] == [
        "My sister Marta moved to Porto last spring.",
        "Porto is lovely. Is she enjoying it?",
        "She works at the port.",
    ]
    assert len(await memory.history("t-ana", limit=1)) == 1


async def test_core_facts_go_into_the_system_prompt(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "hello"}], user_id="ana", thread_id="t1")
    facts = await memory.core_facts(user_id="ana")
    await facts.set("user_name", "Ana")
    built = await memory.build_context("t1", user_id="ana", system_prompt="Be brief.", current_input="hi")
    system = built.messages[0]
    assert system.role == "system"
    assert system.content == f"Be brief.\n\n{CORE_FACTS_HEADING}:\nuser_name: Ana"
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await memory.build_context("t1", user_id="bo", system_prompt="Be brief.")
    await memory.add([{"role": "user", "content": "hello"}], user_id="bo", thread_id="t2")
    other = await memory.build_context("t2", user_id="bo", system_prompt="Be brief.")
    assert other.messages[0].content == "Be brief."
    assert await memory.facts(user_id="ana") == {"user_name": "Ana"}


async def test_memory_files_are_per_user(memory: Memory) -> None:
    made = await memory.memory_file_tool(
        {"command": "create", "path": "/memories/notes.md", "file_text": "likes tea"}, user_id="ana"
    )
    assert not made.is_error
    seen = await memory.memory_file_tool({"command": "view", "path": "/memories/notes.md"}, user_id="ana")
    assert "likes tea" in seen.content
    hidden = await memory.memory_file_tool({"command": "view", "path": "/memories/notes.md"}, user_id="bo")
    assert hidden.is_error
    refused = await memory.memory_file_tool({"command": "view", "path": "/etc/passwd"}, user_id="ana")
    assert refused.is_error and "/memories" in refused.content


@pytest.mark.parametrize("engine", ["memory", "sqlite", "postgres"])
async def test_remember_recall_forget_through_the_memory_tools(engine: str, tmp_path: Path) -> None:
    async with Memory({**_config(engine, tmp_path), "embedding": NO_VECTORS}) as memory:
        saved = await memory.remember("User's dog is named Luna", category="pets", user_id="alex")
        assert saved["saved"] is True
        await memory.remember("Alex", core_fact_key="user_name", user_id="alex")
        found = await memory.recall("dog", user_id="alex")
        assert [r["fact"] for r in found["results"]] == ["User's dog is named Luna"]
        assert found["core_facts"] == {"user_name": "Alex"}
        assert (await memory.recall("dog", user_id="sam"))["results"] == []
        gone = await memory.forget("dog", user_id="alex")
        assert gone["forgotten"] == 1
        assert (await memory.recall("dog", user_id="alex"))["results"] == []
        with pytest.raises(InvalidArgumentError, match="fact"):
            await memory.remember("   ", user_id="alex")


@pytest.mark.parametrize("engine", ["redis", "mongodb"])
async def test_stores_without_a_graph(engine: str, tmp_path: Path) -> None:
    async with Memory({**_config(engine, tmp_path), "embedding": NO_VECTORS}) as memory:
        assert memory.graph is None
        with pytest.raises(MemoryStoreError, match="knowledge graph is off"):
            await memory.recall("dog")
    with pytest.raises(ConfigError) as caught:
        Memory({**_config(engine, tmp_path), "knowledge_graph": True})
    assert caught.value.key == "memory.knowledge_graph"


async def test_anthropic_messages_are_told_apart(tmp_path: Path) -> None:
    anthropic = [
        {"role": "user", "content": "What is 2+2?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "calc", "input": {"expr": "2+2"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "4"}]},
    ]
    assert message_format(anthropic) == "anthropic"
    assert message_format([{"role": "user", "content": "hi"}]) == "openai"
    async with Memory({"adapter": "memory", "embedding": NO_VECTORS}) as memory:
        added = await memory.add(anthropic, thread_id="t", system="Be exact.")
        assert [e.type for e in added.entries] == ["message", "message", "message", "tool_result"]
        assert added.entries[0].message is not None and added.entries[0].message.role == "system"
        with pytest.raises(InvalidArgumentError, match="system"):
            await memory.add([{"role": "user", "content": "x"}], format="openai", system="nope")


async def test_bad_messages_write_nothing(tmp_path: Path) -> None:
    async with Memory({"adapter": "sqlite", "path": str(tmp_path / "m.db"), "embedding": NO_VECTORS}) as memory:
        with pytest.raises(InvalidArgumentError, match=r"messages\[1\]"):
            await memory.add([{"role": "user", "content": "fine"}, {"role": "wizard", "content": "no"}], thread_id="t")
        assert (await memory.adapter.get_thread("t")).data is None
        with pytest.raises(InvalidArgumentError, match="messages"):
            await memory.add("hello")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="query"):
            await memory.search("  ")
        with pytest.raises(InvalidArgumentError, match="limit"):
            await memory.search("x", limit=0)


async def test_calls_before_connect_are_refused() -> None:
    memory = Memory({"adapter": "memory", "embedding": NO_VECTORS})
    with pytest.raises(MemoryStoreError, match="not connected"):
        await memory.search("x")


async def test_unreachable_store_names_the_key_before_anything_starts() -> None:
    config = {
        "adapter": "redis",
        "connection_string": "redis://127.0.0.1:1/0",
        "options": {"connect_timeout": 0.5},
        "on_error": "raise",
    }
    with pytest.raises(ConfigError) as caught:
        await Memory.open(config)
    assert caught.value.key == "memory.connection_string"
    assert "cannot reach the redis store" in str(caught.value)


async def test_unreachable_store_can_disable_memory_with_a_warning() -> None:
    config = {
        "adapter": "redis",
        "connection_string": "redis://127.0.0.1:1/0",
        "options": {"connect_timeout": 0.5},
        "embedding": NO_VECTORS,
    }  # on_error: disable is the default (spec: the agent goes on without memory, with a warning)
    with pytest.warns(RuntimeWarning, match="memory disabled"):
        memory = await Memory.open(config)
    try:
        assert memory.enabled is False
        assert (await memory.add([{"role": "user", "content": "hi"}], thread_id="t")).entries == []
        assert await memory.search("hi") == []
        assert await memory.history("t") == []
    finally:
        await memory.close()


def test_bad_store_options_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Memory({"adapter": "sqlite", "path": str(tmp_path / "x.db"), "options": {"wal": True}})
    assert caught.value.key == "memory.options"
    with pytest.raises(ConfigError) as bad_url:
        Memory({"adapter": "mongodb", "connection_string": "http://nope"})
    assert bad_url.value.key == "memory.connection_string"


async def test_compaction_from_the_config_asks_the_model_over_http(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler("The user counted to five."))
        config = {
            "adapter": "sqlite",
            "path": str(tmp_path / "c.db"),
            "embedding": NO_VECTORS,
            "model": {"provider": "compatible", "model": "m", "base_url": server.url + "/v1", "api_key": "k"},
            "compaction": {"threshold": 6, "keep_recent": 2},
        }
        async with Memory(config) as memory:
            turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"number {i}"} for i in range(6)]
            await memory.add(turns, thread_id="t")
            history = await memory.history("t")
        assert len(server.requests_to("/v1/chat/completions")) == 1
        texts = [str(m.content) for m in history]
        assert texts[0] == "Summary of the earlier conversation:\nThe user counted to five."
        assert texts[-2:] == ["number 4", "number 5"]


async def test_auto_extract_reads_user_messages_into_the_graph(tmp_path: Path) -> None:
    quoted = [
        {"entity": "Ana", "type": "person", "quotes": [{"message": 1, "quote": "Ana"}]},
        {"entity": "Porto", "type": "location", "quotes": [{"message": 1, "quote": "Porto"}]},
        {
            "relation": "located_in",
            "source": "Ana",
            "target": "Porto",
            "quotes": [{"message": 1, "quote": "Ana lives in Porto"}],
        },
    ]
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler(json.dumps(quoted)))
        config = {
            "adapter": "sqlite",
            "path": str(tmp_path / "g.db"),
            "embedding": NO_VECTORS,
            "model": {"provider": "compatible", "model": "m", "base_url": server.url + "/v1", "api_key": "k"},
            "auto_extract": True,
        }
        async with Memory(config) as memory:
            await memory.add(
                [{"role": "user", "content": "Ana lives in Porto."}, {"role": "assistant", "content": "Nice."}],
                user_id="ana",
                thread_id="t",
            )
            await memory.flush()
            edges = (await memory.adapter.query_edges({"agent_id": "default"})).data or []
            nodes = {n.id: n.name for n in (await memory.adapter.query_nodes({"agent_id": "default"})).data or []}
        found = {(nodes[e.source_id], e.type, nodes[e.target_id]) for e in edges}
        assert ("Ana", "located_in", "Porto") in found  # (and the inverse the inference pass adds)
        assert {e.origin for e in edges if e.type == "located_in"} == {"extracted"}
        assert len(server.requests_to("/v1/chat/completions")) == 1  # the user's message only


@pytest.mark.parametrize(("mode", "status"), [("shadow", "suggested"), ("active", "active")])
async def test_extraction_writes_memory_items_in_the_users_scope(tmp_path: Path, mode: str, status: str) -> None:
    answer = [
        {
            "kind": "fact",
            "subject": "user",
            "attribute": "city",
            "value": "Braga",
            "quotes": [{"message": 1, "quote": "I live in Braga"}],
        }
    ]
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler(json.dumps(answer)))
        config = {
            "adapter": "sqlite",
            "path": str(tmp_path / "x.db"),
            "embedding": NO_VECTORS,
            "model": {"provider": "compatible", "model": "m", "base_url": server.url + "/v1", "api_key": "k"},
            "extraction": {"mode": mode},
        }
        async with Memory(config) as memory:
            await memory.add([{"role": "user", "content": "I live in Braga."}], user_id="ana", thread_id="t")
            found = await memory.items.query(
                {"agent_id": "default", "user_id": "ana"}, statuses=["suggested", "active"]
            )
        assert [(i.value, i.status) for i in found] == [("Braga", status)]
        assert found[0].scope.user_id == "ana"
        assert len(server.requests_to("/v1/chat/completions")) == 1


async def test_a_built_context_counts_the_items_it_sends_and_lists_the_memory_files(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "I moved to Porto."}], user_id="ana", thread_id="ana-t")
    scope = {"agent_id": memory.agent_id, "user_id": "ana"}
    fact = await memory.items.add(
        {
            "kind": "fact",
            "subject": "Ana",
            "attribute": "city",
            "value": "lives in Porto",
            "trust": "system",
            "scope": scope,
        }
    )
    other = await memory.items.add(
        {"kind": "fact", "subject": "Bo", "attribute": "city", "value": "lives in Faro", "trust": "system"}
        | {"scope": {"agent_id": memory.agent_id, "user_id": "bo"}}
    )
    made = await memory.memory_file_tool(
        {"command": "create", "path": "/memories/trip.md", "file_text": "Porto in May"}, user_id="ana"
    )
    assert not made.is_error
    built = await memory.build_context("ana-t", user_id="ana", current_input="Where do I live?", max_tokens=2000)
    assert any(getattr(f, "item_id", None) == fact.id for f in built.facts)
    system = built.messages[0].content
    assert isinstance(system, str) and "/memories/trip.md" in system  # the files, listed once
    assert system.count("/memories/trip.md") == 1
    await memory.flush()  # the count is written in the background; flush waits for it
    read = (await memory.adapter.get_items([fact.id, other.id])).unwrap()  # type: ignore[attr-defined]
    counted = {item.id: item for item in read}
    assert counted[fact.id].times_retrieved == 1 and counted[fact.id].last_retrieved_at is not None
    assert counted[other.id].times_retrieved == 0  # not sent: not counted


async def test_memory_file_edits_are_refused_when_the_file_changed_since_the_caller_read_it(memory: Memory) -> None:
    path = "/memories/notes.md"
    await memory.memory_file_tool({"command": "create", "path": path, "file_text": "tea\n"}, user_id="ana")
    seen = await memory.memory_file_tool({"command": "view", "path": path}, user_id="ana")
    assert "tea" in seen.content
    assert memory.files is not None  # another writer (another process, the inspector) changes it
    scope = {"agent_id": memory.agent_id, "user_id": "ana"}
    await memory.files.run(
        {"scope": scope}, {"command": "str_replace", "path": path, "old_str": "tea", "new_str": "coffee"}
    )
    refused = await memory.memory_file_tool(
        {"command": "str_replace", "path": path, "old_str": "coffee", "new_str": "water"}, user_id="ana"
    )
    assert refused.is_error and "changed since it was read" in refused.content
    again = await memory.memory_file_tool({"command": "view", "path": path}, user_id="ana")
    assert "coffee" in again.content
    done = await memory.memory_file_tool(
        {"command": "str_replace", "path": path, "old_str": "coffee", "new_str": "water"}, user_id="ana"
    )
    assert not done.is_error
