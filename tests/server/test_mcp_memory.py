"""MCP alone is a working memory (issue 35 item 3), through the official SDK's client in process:
``save_conversation`` writes what was said through ``Memory.add`` (indexed and extracted as it
does), every tool reads the one memory, each tool has its annotations and the server its
version, ``build_context`` takes the builder's parameters and lists the memory files, and the
memory tool of each session sends the checksum it last read (an edit of a file changed since is
refused)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cogitator_memory import __version__
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.mcp import create_server
from cogitator_memory.testing.scripted_server import ScriptedServer, openai_chat_handler

NO_VECTORS = {"provider": "none"}


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def _body(result: Any) -> Any:
    assert not result.is_error, _text(result)
    return json.loads(_text(result))


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    config = {"adapter": "sqlite", "path": str(tmp_path / "m.db"), "embedding": NO_VECTORS, "files": {"enabled": True}}
    async with Memory(config) as m:
        yield m


async def test_every_tool_is_annotated_and_the_server_has_the_package_version(memory: Memory) -> None:
    hints = {
        # name: (readOnlyHint, destructiveHint, idempotentHint)
        "save_conversation": (False, False, False),
        "remember": (False, False, True),
        "recall": (True, False, True),
        "forget": (False, True, True),
        "search_memory": (True, False, True),
        "build_context": (True, False, True),
        "memory": (False, True, False),
    }
    async with Client(create_server(memory, user_id="alex")) as client:
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("cogitator-memory", __version__)
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == set(hints)
        for tool in listed:
            a = tool.annotations
            assert a is not None, tool.name
            assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == hints[tool.name], tool.name
            assert a.open_world_hint is False, tool.name


async def test_what_was_said_is_saved_and_found(memory: Memory) -> None:
    """A conversation saved in a new thread, then a message added to it: search_memory finds
    the turns and build_context sends them, in the server user's thread."""
    async with Client(create_server(memory, user_id="alice")) as client:
        saved = _body(
            await client.call_tool(
                "save_conversation",
                {
                    "messages": [
                        {"role": "user", "content": "I'm allergic to peanuts."},
                        {"role": "assistant", "content": "Noted: no peanuts."},
                    ]
                },
            )
        )
        thread_id = saved["thread_id"]
        assert saved["saved"] == 2 and len(saved["entry_ids"]) == 2 and "replayed" not in saved
        system = _body(
            await client.call_tool(
                "save_conversation",
                {"messages": [{"role": "system", "content": "You plan trips."}, {"role": "user", "content": "Hi!"}]},
            )
        )
        assert system["saved"] == 2 and system["thread_id"] != saved["thread_id"]  # a new thread each time
        more = _body(
            await client.call_tool(
                "save_conversation",
                {"thread_id": thread_id, "messages": [{"role": "user", "content": "My sister Inês visits in May."}]},
            )
        )
        assert more["thread_id"] == thread_id and more["saved"] == 1
        hits = _body(await client.call_tool("search_memory", {"query": "peanuts"}))["results"]
        assert hits[0]["thread_id"] == thread_id and "peanuts" in hits[0]["text"]
        built = _body(await client.call_tool("build_context", {"thread_id": thread_id, "max_tokens": 2000}))
        said = [m["content"] for m in built["messages"] if m["role"] != "system"]
        assert said[:3] == ["I'm allergic to peanuts.", "Noted: no peanuts.", "My sister Inês visits in May."]
    thread = (await memory.adapter.get_thread(thread_id)).data
    assert thread is not None and thread.metadata == {"user_id": "alice"} and thread.agent_id == memory.agent_id
    assert [str(m.content) for m in await memory.history(thread_id)] == said[:3]


async def test_a_conversation_saved_after_the_fact_keeps_when_and_who(memory: Memory) -> None:
    """``created_at`` dates what is saved (a search for that time finds it) and each message's
    ``name`` says who of two people said it."""
    async with Client(create_server(memory, user_id="alice")) as client:
        sessions = [
            ("2024-03-12T18:30:00", "Ana", "We finally booked the cabin by the lake."),
            ("2024-05-20T09:00:00", "Ben", "We plan the cabin trip again: the cabin plan moved to the coast."),
        ]
        saved = []
        for when, who, text in sessions:
            saved.append(
                _body(
                    await client.call_tool(
                        "save_conversation",
                        {"messages": [{"role": "user", "content": text, "name": who}], "created_at": when},
                    )
                )
            )
        hits = _body(
            await client.call_tool("search_memory", {"query": "What did we plan for the cabin in March 2024?"})
        )
        assert hits["results"][0]["thread_id"] == saved[0]["thread_id"]
    for answer, (when, who, _text_said) in zip(saved, sessions, strict=True):
        entry = (await memory.adapter.get_entry(answer["entry_ids"][0])).data
        assert entry is not None and entry.message is not None
        assert entry.created_at.isoformat() == when + "+00:00" and entry.message.name == who


async def test_a_retried_save_writes_nothing_twice(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="alice")) as client:
        call = {
            "thread_id": "chat-1",
            "idempotency_key": "turn-7",
            "messages": [{"role": "user", "content": "Book the table for eight."}],
        }
        first = _body(await client.call_tool("save_conversation", call))
        again = _body(await client.call_tool("save_conversation", call))
        assert again["replayed"] is True and again["entry_ids"] == first["entry_ids"]
        keyless = await client.call_tool("save_conversation", {**call, "thread_id": None})
        assert keyless.is_error and "thread_id" in _text(keyless)
    assert len(await memory.history("chat-1")) == 1


async def test_a_bad_save_is_a_tool_error_and_writes_nothing(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "Bob's secret: 4711."}], user_id="bob", thread_id="bob-chat")
    async with Client(create_server(memory, user_id="alice")) as client:
        for arguments, words in [
            ({"messages": []}, "messages"),
            ({"messages": [{"role": "robot", "content": "beep"}]}, "role"),
            ({"messages": [{"role": "user", "content": ""}]}, "content"),
            ({"messages": [{"role": "user", "content": "hi", "speaker": "x"}]}, "speaker"),
            ({"messages": [{"role": "user", "content": "hi", "name": ""}]}, "name"),
            ({"messages": [{"role": "user", "content": "hi"}], "created_at": "next spring"}, "created_at"),
            ({"messages": [{"role": "user", "content": "hi"}], "created_at": "2999-01-01T00:00:00"}, "created_at"),
            ({"messages": "hello"}, "messages"),
            ({"messages": [{"role": "user", "content": "hi"}], "thread_id": "bob-chat"}, "'thread_id'"),
            ({"messages": [{"role": "user", "content": "hi"}], "user_id": "bob"}, "'user_id'"),
            ({"messages": [{"role": "user", "content": "x" * 600_000}] * 2}, "'messages'"),
            ({"messages": [{"role": "user", "content": "hi"}] * 501}, "messages"),
        ]:
            refused = await client.call_tool("save_conversation", arguments)
            assert refused.is_error, (arguments, _text(refused))
            assert words in _text(refused) and "4711" not in _text(refused), (arguments, _text(refused))
    threads = (await memory.adapter.list_threads()).data
    assert threads is not None and [t.id for t in threads.threads] == ["bob-chat"]
    assert len(await memory.history("bob-chat")) == 1


async def test_a_saved_conversation_is_extracted_as_memory_add_does(tmp_path: Path) -> None:
    """With extraction on, the model reads what was saved into memory items of the user, which
    search_memory and build_context find."""
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
            "extraction": {"mode": "active"},
        }
        async with Memory(config) as memory, Client(create_server(memory, user_id="ana")) as client:
            saved = _body(
                await client.call_tool(
                    "save_conversation", {"messages": [{"role": "user", "content": "I live in Braga."}]}
                )
            )
            assert "warnings" not in saved
            items = await memory.items.query({"agent_id": memory.agent_id, "user_id": "ana"})
            assert [(i.attribute, i.value) for i in items] == [("city", "Braga")]
            hits = _body(await client.call_tool("search_memory", {"query": "Braga"}))["results"]
            assert {"item", "entry"} <= {h["kind"] for h in hits}
            other = _body(await client.call_tool("save_conversation", {"messages": [{"role": "user", "content": "x"}]}))
            built = _body(
                await client.call_tool("build_context", {"thread_id": other["thread_id"], "max_tokens": 3000})
            )
            assert "Braga" in json.dumps(built["messages"])  # the user's item, in another conversation
        assert len(server.requests_to("/v1/chat/completions")) == 2


async def test_search_memory_finds_what_remember_saved(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="alex")) as client:
        _body(await client.call_tool("remember", {"fact": "User's dog is named Luna", "category": "pets"}))
        _body(await client.call_tool("remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"}))
        hits = _body(await client.call_tool("search_memory", {"query": "dog"}))["results"]
        assert [(h["kind"], h["text"]) for h in hits] == [("fact", "User's dog is named Luna")]
        only_turns = _body(await client.call_tool("search_memory", {"query": "dog", "kinds": ["entry"]}))
        assert only_turns["results"] == []
        only_facts = _body(await client.call_tool("search_memory", {"query": "dog", "kinds": ["fact"]}))["results"]
        assert [h["text"] for h in only_facts] == ["User's dog is named Luna"]
        refused = await client.call_tool("search_memory", {"query": "dog", "kinds": ["bogus"]})
        assert refused.is_error
        named = _body(await client.call_tool("search_memory", {"query": "Alex"}))["results"]
        assert any("Alex" in h["text"] for h in named)
        _body(await client.call_tool("forget", {"query": "Luna"}))
        assert _body(await client.call_tool("search_memory", {"query": "dog"}))["results"] == []
    async with Client(create_server(memory, user_id="sam")) as client:  # another user's facts stay theirs
        assert _body(await client.call_tool("search_memory", {"query": "Alex"}))["results"] == []


async def test_a_server_of_the_shared_memory_searches_no_users_memory(memory: Memory) -> None:
    """A server started without a user serves the shared memory: its search finds neither the
    facts another user saved nor their turns, as its recall does not (before, a user's fact came
    back: it belongs to no thread, so the thread-owner check let it through)."""
    await memory.remember("Ana's bank PIN is 4417", user_id="ana")
    await memory.add([{"role": "user", "content": "Ana's passport number is X123."}], user_id="ana")
    await memory.remember("The office bank holiday is in May")
    async with Client(create_server(memory)) as client:
        hits = _body(await client.call_tool("search_memory", {"query": "bank PIN"}))["results"]
        assert [h["text"] for h in hits] == ["The office bank holiday is in May"]
        assert _body(await client.call_tool("search_memory", {"query": "passport number"}))["results"] == []
        recalled = _body(await client.call_tool("recall", {"query": "bank"}))["results"]
        assert [r["fact"] for r in recalled] == ["The office bank holiday is in May"]
    async with Client(create_server(memory, user_id="ana")) as client:
        mine = {h["text"] for h in _body(await client.call_tool("search_memory", {"query": "bank PIN"}))["results"]}
        assert {"Ana's bank PIN is 4417", "The office bank holiday is in May"} <= mine
    async with Client(create_server(memory, any_user=True)) as client:  # an operator's server: every user
        every = {h["text"] for h in _body(await client.call_tool("search_memory", {"query": "bank PIN"}))["results"]}
        assert "Ana's bank PIN is 4417" in every


async def test_recall_never_gives_an_unrelated_fact(tmp_path: Path) -> None:
    """With an embedding service in the config, recall gives the fact its words match and only
    facts near by meaning: "dog" never gives "User lives in Porto" (issue 35 item 8)."""
    config = {
        "adapter": "sqlite",
        "path": str(tmp_path / "v.db"),
        "embedding": {"provider": "hashing", "dimensions": 64},
    }
    async with Memory(config) as memory, Client(create_server(memory, user_id="alex")) as client:
        for fact in ("User's dog is named Luna", "User lives in Porto", "User drinks green tea"):
            _body(await client.call_tool("remember", {"fact": fact}))
        dog = _body(await client.call_tool("recall", {"query": "dog"}))["results"]
        assert [r["fact"] for r in dog] == ["User's dog is named Luna"]
        assert _body(await client.call_tool("recall", {"query": "weather tomorrow"}))["results"] == []
        for result in _body(await client.call_tool("recall", {"query": "the dog named Luna"}))["results"]:
            assert result["fact"] == "User's dog is named Luna" and result["score"] >= 0.45


async def test_build_context_takes_the_builders_parameters(memory: Memory) -> None:
    await memory.add(
        [
            {"role": "user", "content": "We stayed at Hotel Avenida last April."},
            {"role": "assistant", "content": "Lovely."},
            {"role": "user", "content": "Then we flew home."},
        ],
        user_id="alex",
        thread_id="trip",
    )
    async with Client(create_server(memory, user_id="alex")) as client:
        built = _body(
            await client.call_tool(
                "build_context",
                {
                    "thread_id": "trip",
                    "current_input": "Where did we stay?",
                    "system_prompt": "You are a travel agent.",
                    "pinned": ["Always answer in Portuguese."],
                    "brief": "The user travels in spring.",
                    "max_tokens": 3000,
                    "reserve_tokens": 200,
                    "as_of": "2026-10-21T15:00:00+00:00",
                    "time_zone": "Europe/Lisbon",
                    "strategy": "recent",
                },
            )
        )
        system = built["messages"][0]
        assert system["role"] == "system"
        assert (
            system["content"].startswith("You are a travel agent.")
            and "Always answer in Portuguese." in system["content"]
        )
        assert built["strategy"] == "recent"
        assert "The user travels in spring." in json.dumps(built["messages"])
        first = next(
            h["id"]
            for h in _body(await client.call_tool("search_memory", {"query": "Hotel Avenida"}))["results"]
            if "Avenida" in h["text"]
        )
        at_first = _body(
            await client.call_tool("build_context", {"thread_id": "trip", "leaf_id": first, "max_tokens": 3000})
        )
        texts = [m["content"] for m in at_first["messages"] if m["role"] != "system"]
        assert "We stayed at Hotel Avenida last April." in texts and "Then we flew home." not in texts
        for arguments, words in [
            ({"strategy": "smart"}, "strategy"),
            ({"max_tokens": 1000, "reserve_tokens": 1000}, "reserve_tokens"),
            ({"time_zone": "Mars/Olympus_Mons"}, "time_zone"),
            ({"as_of": "yesterday"}, "as_of"),
            ({"pinned": "not a list"}, "pinned"),
        ]:
            refused = await client.call_tool("build_context", {"thread_id": "trip", **arguments})
            assert refused.is_error and words in _text(refused), (arguments, _text(refused))


async def test_build_context_lists_the_memory_files(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="alex")) as client:
        empty = _body(await client.call_tool("build_context", {"thread_id": "t", "max_tokens": 2000}))
        assert "Memory files" not in json.dumps(empty["messages"])
        made = await client.call_tool(
            "memory", {"command": "create", "path": "/memories/diet.md", "file_text": "No peanuts.\n"}
        )
        assert not made.is_error, _text(made)
        built = _body(
            await client.call_tool("build_context", {"thread_id": "t", "max_tokens": 2000, "pinned": ["Be brief."]})
        )
        system = built["messages"][0]["content"]
        assert system.count("Memory files") == 1 and system.count("/memories/diet.md") == 1
        assert system.index("Be brief.") < system.index("Memory files")
    async with Client(create_server(memory, user_id="sam")) as client:  # Sam's context lists Sam's files
        other = _body(await client.call_tool("build_context", {"thread_id": "u", "max_tokens": 2000}))
        assert "/memories/diet.md" not in json.dumps(other["messages"])


async def test_an_edit_of_a_file_changed_since_it_was_read_is_refused(memory: Memory) -> None:
    """Two servers of one user (two desktop apps) edit one file: the one that read it before the
    other changed it is told to view it again, and nothing of the other's change is lost."""
    path = "/memories/trip.md"
    async with Client(create_server(memory, user_id="alex")) as a, Client(create_server(memory, user_id="alex")) as b:
        made = await a.call_tool(
            "memory", {"command": "create", "path": path, "file_text": "likes: tea\ncity: Porto\n"}
        )
        assert not made.is_error, _text(made)
        assert "Porto" in _text(await b.call_tool("memory", {"command": "view", "path": path}))
        changed = await b.call_tool(
            "memory", {"command": "str_replace", "path": path, "old_str": "Porto", "new_str": "Braga"}
        )
        assert not changed.is_error, _text(changed)
        for command in (
            {"command": "str_replace", "path": path, "old_str": "tea", "new_str": "coffee"},
            {"command": "insert", "path": path, "insert_line": 0, "insert_text": "# Trip"},
            {"command": "delete", "path": path},
            {"command": "rename", "old_path": path, "new_path": "/memories/old-trip.md"},
        ):
            refused = await a.call_tool("memory", command)
            assert refused.is_error and "changed since it was read" in _text(refused), (command, _text(refused))
        assert "city: Braga" in _text(await a.call_tool("memory", {"command": "view", "path": path}))
        edited = await a.call_tool(
            "memory", {"command": "str_replace", "path": path, "old_str": "tea", "new_str": "coffee"}
        )
        assert not edited.is_error, _text(edited)  # read again: the edit is made
        # b wrote the version a has edited since: b is refused now, and reads a's change
        stale = await b.call_tool(
            "memory", {"command": "insert", "path": path, "insert_line": 0, "insert_text": "# Trip"}
        )
        assert stale.is_error and "changed since it was read" in _text(stale)
        text = _text(await b.call_tool("memory", {"command": "view", "path": path}))
        assert "likes: coffee" in text and "city: Braga" in text
        moved = await b.call_tool(
            "memory", {"command": "rename", "old_path": path, "new_path": "/memories/trips/2026.md"}
        )
        assert not moved.is_error, _text(moved)
        # a file a server never showed is changed on what stands
        fresh = await a.call_tool(
            "memory",
            {"command": "str_replace", "path": "/memories/trips/2026.md", "old_str": "coffee", "new_str": "mate"},
        )
        assert not fresh.is_error, _text(fresh)
