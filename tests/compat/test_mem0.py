"""``memory.mem0``: mem0's calls and shapes over memory items, on every store, searched through
the recall index; bad input refused by name with nothing written."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.compat import Mem0Compat, SyncMem0Compat
from cogitator_memory.errors import InvalidArgumentError, NotFoundError
from cogitator_memory.models.base import summarize_fn
from cogitator_memory.models.factory import create_chat_client
from cogitator_memory.recall.item_vectors import item_vector_id
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.sync import SyncMemory
from cogitator_memory.testing.scripted_server import ScriptedServer, openai_chat_handler
from engine_configs import memory_config

ENGINES = ["memory", "sqlite", "postgres", "redis", "mongodb"]
HASHING = {"provider": "hashing", "dimensions": 64}


@pytest.fixture(params=ENGINES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    config = {**memory_config(request.param, tmp_path, "m0"), "embedding": HASHING}
    async with Memory(config) as opened:
        yield opened


async def test_add_get_search_and_get_all_in_mem0s_shapes(memory: Memory) -> None:
    m0 = memory.mem0
    added = await m0.add(
        [
            {"role": "system", "content": "You are a cooking assistant."},
            {"role": "user", "content": "I'm a vegetarian and allergic to peanuts.", "name": "alice_phone"},
            {"role": "assistant", "content": "Noted: no meat, no peanuts."},
        ],
        user_id="alice",
        metadata={"category": "food"},
        infer=False,
    )
    results = added["results"]
    assert [(r["memory"], r["event"], r["role"]) for r in results] == [
        ("I'm a vegetarian and allergic to peanuts.", "ADD", "user"),
        ("Noted: no meat, no peanuts.", "ADD", "assistant"),
    ]  # the system message is not a memory, as in mem0
    assert results[0]["actor_id"] == "alice_phone"
    mid = results[0]["id"]

    got = await m0.get(mid)
    assert got is not None
    assert got["id"] == mid and got["memory"] == "I'm a vegetarian and allergic to peanuts."
    assert got["metadata"] == {"category": "food"} and got["score"] is None
    assert got["user_id"] == "alice" and got["agent_id"] == "default" and "run_id" not in got
    assert got["role"] == "user" and got["actor_id"] == "alice_phone"
    assert len(got["hash"]) == 32 and got["created_at"] == got["updated_at"]

    found = await m0.search("peanuts allergy", filters={"user_id": "alice"})
    assert found["results"][0]["id"] == mid
    assert found["results"][0]["score"] > 0
    # mem0 1.x's arguments work the same
    assert (await m0.search("peanuts allergy", user_id="alice", limit=1))["results"][0]["id"] == mid
    assert (await m0.search("peanuts allergy", filters={"user_id": "bob"}))["results"] == []

    listed = (await m0.get_all(filters={"user_id": "alice"}))["results"]
    assert sorted(r["memory"] for r in listed) == sorted(r["memory"] for r in results)
    assert all("score" not in r for r in listed)
    assert len((await m0.get_all(filters={"user_id": "alice"}, top_k=1))["results"]) == 1
    assert await m0.get("mem_does_not_exist") is None


async def test_filters_with_mem0s_operators(memory: Memory) -> None:
    m0 = memory.mem0
    rows = [
        ("Pasta with tomato sauce is my favourite dinner.", {"category": "food", "rank": 1, "tags": "Italian"}),
        ("I cook pasta on Sundays.", {"category": "habit", "rank": 2}),
        ("Fresh pasta needs eggs and flour.", {"category": "food", "rank": 3, "tags": "recipe"}),
    ]
    ids = {}
    for text, meta in rows:
        ids[meta["rank"]] = (await m0.add(text, user_id="alice", metadata=meta, infer=False))["results"][0]["id"]

    async def ranks(filters: dict[str, Any]) -> set[int]:
        found = (await m0.search("pasta", filters={"user_id": "alice", **filters}))["results"]
        listed = (await m0.get_all(filters={"user_id": "alice", **filters}, top_k=100))["results"]
        assert {r["id"] for r in found} == {r["id"] for r in listed}  # one reading of a filter
        return {r["metadata"]["rank"] for r in found}

    assert await ranks({}) == {1, 2, 3}
    assert await ranks({"category": "food"}) == {1, 3}
    assert await ranks({"category": {"ne": "food"}}) == {2}
    assert await ranks({"rank": {"gte": 2}}) == {2, 3}
    assert await ranks({"rank": {"gt": 1, "lt": 3}}) == {2}
    assert await ranks({"rank": {"lte": 1}}) == {1}
    assert await ranks({"rank": {"in": [1, 3]}}) == {1, 3}
    assert await ranks({"rank": {"nin": [1, 3]}}) == {2}
    assert await ranks({"tags": "*"}) == {1, 3}
    assert await ranks({"tags": {"contains": "Ital"}}) == {1}
    assert await ranks({"tags": {"icontains": "ital"}}) == {1}
    assert await ranks({"OR": [{"rank": 1}, {"category": "habit"}]}) == {1, 2}
    assert await ranks({"AND": [{"category": "food"}, {"rank": {"gt": 1}}]}) == {3}
    assert await ranks({"NOT": [{"category": "food"}]}) == {2}
    assert await ranks({"role": "user", "rank": {"gt": "a"}}) == set()  # a number is never above text
    assert await m0.get(ids[1]) is not None


async def test_history_after_update_and_delete(memory: Memory) -> None:
    m0 = memory.mem0
    mid = (await m0.add("I live in Lisbon.", user_id="ana", run_id="chat-1", infer=False))["results"][0]["id"]
    first = await m0.get(mid)
    assert first is not None and first["run_id"] == "chat-1"

    assert await m0.update(mid, "I live in Porto.") == {"message": "Memory updated successfully!"}
    now = await m0.get(mid)
    assert now is not None and now["id"] == mid and now["memory"] == "I live in Porto."
    assert now["created_at"] == first["created_at"] and now["updated_at"] > first["updated_at"]
    await m0.update(mid, metadata={"source": "profile"})  # metadata alone: no new version
    assert (await m0.get(mid) or {})["metadata"] == {"source": "profile"}
    await m0.update(mid, data="I live in Braga.")  # mem0 1.x's name of text

    hits = (await m0.search("where do I live", filters={"user_id": "ana"}))["results"]
    assert [h["memory"] for h in hits] == ["I live in Braga."]  # the old values no longer hold

    history = await m0.history(mid)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I live in Lisbon."),
        ("UPDATE", "I live in Lisbon.", "I live in Porto."),
        ("UPDATE", "I live in Porto.", "I live in Braga."),
    ]
    assert {h["memory_id"] for h in history} == {mid} and not any(h["is_deleted"] for h in history)

    assert await m0.delete(mid) == {"message": "Memory deleted successfully!"}
    assert await m0.get(mid) is None
    assert (await m0.search("where do I live", filters={"user_id": "ana"}))["results"] == []
    assert (await m0.get_all(filters={"user_id": "ana"}))["results"] == []
    ended = await m0.history(mid)
    assert [h["event"] for h in ended] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    assert ended[-1]["old_memory"] == "I live in Braga." and ended[-1]["is_deleted"] is True
    with pytest.raises(NotFoundError):
        await m0.delete(mid)
    with pytest.raises(NotFoundError):
        await m0.update(mid, "I live in Faro.")
    assert await m0.history("mem_unknown") == []


async def test_delete_all_leaves_other_users_and_runs(memory: Memory) -> None:
    m0 = memory.mem0
    await m0.add("Alice plays the cello.", user_id="alice", infer=False)
    await m0.add("Alice visits Rome in May.", user_id="alice", run_id="trip", infer=False)
    bob = (await m0.add("Bob plays the cello too.", user_id="bob", infer=False))["results"][0]["id"]

    await m0.delete_all(user_id="alice", run_id="trip")
    assert [r["memory"] for r in (await m0.get_all(filters={"user_id": "alice"}))["results"]] == [
        "Alice plays the cello."
    ]
    assert await m0.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert (await m0.get_all(filters={"user_id": "alice"}))["results"] == []
    assert (await m0.search("cello", filters={"user_id": "alice"}))["results"] == []
    assert [r["id"] for r in (await m0.get_all(filters={"user_id": "bob"}))["results"]] == [bob]
    assert (await m0.search("cello", filters={"user_id": "bob"}))["results"][0]["id"] == bob
    with pytest.raises(InvalidArgumentError, match="user_id, agent_id or run_id"):
        await m0.delete_all()


async def test_agents_keep_their_own_memories_and_reset_purges_one_agent(memory: Memory) -> None:
    m0 = memory.mem0
    mine = (await m0.add("Likes green tea.", user_id="alice", infer=False))["results"][0]["id"]
    travel = (await m0.add("Likes window seats.", user_id="alice", agent_id="travel", infer=False))["results"][0]
    listed = (await m0.get_all(filters={"user_id": "alice", "agent_id": "travel"}))["results"]
    assert [r["id"] for r in listed] == [travel["id"]] and listed[0]["agent_id"] == "travel"
    assert [r["id"] for r in (await m0.get_all(user_id="alice"))["results"]] == [mine]

    assert await m0.reset() is None
    assert await m0.get(mine) is None and await m0.history(mine) == []
    assert (await m0.get_all(user_id="alice"))["results"] == []
    assert await m0.get(travel["id"]) is not None  # another agent's memories stay


async def test_bad_input_is_refused_by_name_and_writes_nothing(memory: Memory) -> None:
    m0 = memory.mem0
    cases: list[tuple[str, Any]] = [
        (
            "messages[1].content",
            m0.add([{"role": "user", "content": "ok"}, {"role": "user"}], user_id="a", infer=False),
        ),
        ("messages[0]", m0.add(["just text"], user_id="a", infer=False)),
        ("messages", m0.add(42, user_id="a", infer=False)),
        (
            "messages[1].content",
            m0.add(
                [{"role": "user", "content": "ok"}, {"role": "user", "content": "x" * 10_001}], user_id="a", infer=False
            ),
        ),
        ("messages[0].content", m0.add("nul \x00 byte", user_id="a", infer=False)),
        ("messages[0].role", m0.add([{"role": "", "content": "x"}], user_id="a", infer=False)),
        ("metadata.user_id", m0.add("x", user_id="a", metadata={"user_id": "b"}, infer=False)),
        ("timestamp", m0.add("x", user_id="a", timestamp=1700000000, infer=False)),
        ("expiration_date", m0.add("x", user_id="a", expiration_date="2030-01-01", infer=False)),
        ("memory_type", m0.add("x", agent_id="a", memory_type="procedural_memory", infer=False)),
        ("infer", m0.add("x", user_id="a")),  # no model configured
        ("user_id", m0.add("x", infer=False)),  # no scope
        ("filters.rank.between", m0.search("x", filters={"user_id": "a", "rank": {"between": [1, 2]}})),
        ("filters.OR", m0.search("x", filters={"user_id": "a", "OR": []})),
        ("filters.user_id", m0.search("x", filters={"user_id": {"in": ["a", "b"]}})),
        ("filters", m0.search("x", filters={"category": "food"})),
        ("user_id", m0.search("x", user_id="a", filters={"user_id": "b"})),
        ("top_k", m0.search("x", user_id="a", top_k=0)),
        ("limit", m0.search("x", user_id="a", top_k=5, limit=5)),
        ("rerank", m0.search("x", user_id="a", rerank=True)),
        ("explain", m0.search("x", user_id="a", explain=True)),
        ("query", m0.search("  ", user_id="a")),
        ("top_k", m0.get_all(user_id="a", top_k=1000)),
        ("memory_id", m0.get("")),
        ("text", m0.update("mem_x")),
        ("text", m0.update("mem_x", "y" * 10_001)),
        ("expiration_date", m0.update("mem_x", "y", expiration_date="2030-01-01")),
        ("data", m0.update("mem_x", "y", data="z")),
    ]
    for name, call in cases:
        with pytest.raises(InvalidArgumentError) as caught:
            await call
        assert caught.value.argument == name, (name, caught.value)
    assert (await m0.get_all(user_id="a"))["results"] == []


async def test_add_writes_the_vectors_of_its_memories(tmp_path: Path) -> None:
    config = {**memory_config("sqlite", tmp_path, "m0"), "embedding": HASHING}
    async with Memory(config) as memory:
        mid = (await memory.mem0.add("Runs 10 km on Saturdays.", user_id="ana", infer=False))["results"][0]["id"]
        stored = (await memory.vectors.get_by_sources([mid])).data
        assert [v.id for v in stored] == [item_vector_id(mid)]
        await memory.mem0.update(mid, "Runs 21 km on Saturdays.")
        history = await memory.mem0.history(mid)
        newest = (await memory.vectors.get_by_sources([history[-1]["id"]])).data
        assert [v.content for v in newest] == ["user said Runs 21 km on Saturdays."]
        await memory.mem0.reset()
        assert (await memory.vectors.get_by_sources([mid, history[-1]["id"]])).data == []


async def test_infer_true_extracts_memory_items_with_the_configured_model(tmp_path: Path) -> None:
    items = [
        {
            "kind": "fact",
            "subject": "user",
            "attribute": "city",
            "value": "Braga",
            "quotes": [{"message": 1, "quote": "I live in Braga"}],
        }
    ]
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler(json.dumps(items)))
        model = {"provider": "compatible", "model": "m", "base_url": server.url + "/v1", "api_key": "k"}
        client = create_chat_client({**model, "max_retries": 0})
        config = {
            **memory_config("sqlite", tmp_path, "m0"),
            "model": model,
            "extraction": {"mode": "active"},
            "embedding": {"provider": "none"},
        }
        memory = Memory(config, summarize=summarize_fn(client))
        memory._owned.append(client)
        async with memory:
            added = await memory.mem0.add(
                [{"role": "user", "content": "I live in Braga and I keep bees."}], user_id="ana", run_id="chat-7"
            )
            assert [(r["memory"], r["event"]) for r in added["results"]] == [("user city: Braga", "ADD")]
            mid = added["results"][0]["id"]
            assert [r["id"] for r in (await memory.mem0.get_all(user_id="ana"))["results"]] == [mid]
            assert [m.content for m in await memory.history("chat-7")] == ["I live in Braga and I keep bees."]
            # a memory extraction wrote is updated as a new state of its slot, with an id of its own
            answer = await memory.mem0.update(mid, "Porto")
            assert await memory.mem0.get(mid) is None
            assert (await memory.mem0.get(answer["id"]) or {})["memory"] == "user city: Porto"


def test_the_sync_twin_has_every_call_with_the_same_arguments(tmp_path: Path) -> None:
    public = {n for n, f in inspect.getmembers(Mem0Compat, inspect.iscoroutinefunction) if not n.startswith("_")}
    for name in public:
        twin = getattr(SyncMem0Compat, name)
        assert not inspect.iscoroutinefunction(twin)
        assert inspect.signature(twin) == inspect.signature(getattr(Mem0Compat, name)), name
    config = {**memory_config("sqlite", tmp_path, "m0"), "embedding": {"provider": "none"}}
    with SyncMemory(config) as memory:
        m0 = memory.mem0
        mid = m0.add("Prefers aisle seats.", user_id="bo", infer=False)["results"][0]["id"]
        assert m0.search("aisle seats", filters={"user_id": "bo"})["results"][0]["id"] == mid
        m0.update(mid, "Prefers window seats.")
        assert [h["event"] for h in m0.history(mid)] == ["ADD", "UPDATE"]
        m0.delete(mid)
        assert m0.get(mid) is None
        assert m0.get_all(user_id="bo")["results"] == []
