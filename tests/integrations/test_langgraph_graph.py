"""CogitatorStore in a LangGraph graph: a node that recalls from the store and saves to it, with a
chat model answering over real HTTP from a scripted server; and the store's own checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, PutOp
from langgraph_store_support import ENGINES, open_memory, open_store

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.integrations.langgraph import CogitatorStore
from cogitator_memory.models import OpenAIChatClient
from cogitator_memory.result import unwrap
from cogitator_memory.runtime import SyncMemory
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler


class State(TypedDict):
    user: str
    question: str
    answer: str


def _answer(chat: ScriptedChatRequest) -> str:
    known = [line[2:] for line in chat.system.splitlines() if line.startswith("- ")]
    return f"I remember: {'; '.join(known)}" if known else "I know nothing about you yet."


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_graph_recalls_what_an_earlier_run_saved(engine: str, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.fallback("/v1/chat/completions", openai_chat_handler(_answer))
        async with OpenAIChatClient(model="m", base_url=server.url + "/v1", api_key="k") as model:

            async def respond(state: State, *, store: BaseStore) -> dict[str, Any]:
                ns = ("memories", state["user"])
                found = await store.asearch(ns, query=state["question"], limit=5)
                system = "Facts:\n" + "\n".join(f"- {item.value['text']}" for item in found)
                reply = await model.complete([{"role": "user", "content": state["question"]}], system=system)
                return {"answer": reply.text}

            def save(state: State, *, store: BaseStore) -> dict[str, Any]:  # a sync node: a worker thread
                if state["question"].startswith("Remember"):
                    key = f"m{len(store.search(('memories', state['user']), limit=100))}"
                    store.put(("memories", state["user"]), key, {"text": state["question"][9:].strip()})
                return {}

            builder = StateGraph(State)
            builder.add_node("respond", respond)
            builder.add_node("save", save)
            builder.add_edge(START, "respond")
            builder.add_edge("respond", "save")
            builder.add_edge("save", END)
            async with open_store(engine, tmp_path) as store:
                graph = builder.compile(store=store)
                first = await graph.ainvoke({"user": "ana", "question": "Remember: Ana is allergic to peanuts"})
                await graph.ainvoke({"user": "bo", "question": "Remember: Bo is allergic to cats"})
                second = await graph.ainvoke({"user": "ana", "question": "What am I allergic to?"})
                saved = await store.asearch(("memories",))
    assert first["answer"] == "I know nothing about you yet."
    assert second["answer"] == "I remember: Ana is allergic to peanuts"
    assert sorted(item.namespace for item in saved) == [("memories", "ana"), ("memories", "bo")]
    sent = server.requests_to("/v1/chat/completions")[-1].json()["messages"]
    assert "Bo" not in sent[0]["content"]


async def test_items_are_memory_items_of_the_users_scope(tmp_path: Path) -> None:
    async with open_memory("sqlite", tmp_path) as memory:
        store = CogitatorStore(memory, user_label=1)
        await store.aput(("memories", "ana"), "diet", {"text": "Ana is vegetarian"})
        await store.aput(("memories", "bo"), "diet", {"text": "Bo eats fish"})
        items = unwrap(await memory.adapter.query_items({"within": {"agent_id": "langgraph", "user_id": "ana"}}))
        assert [(i.subject, i.attribute, i.scope.user_id) for i in items] == [("memories.ana", "diet", "ana")]
        # Memory.search finds them for their user, and forgetting the user takes them away
        hits = await memory.search("vegetarian", user_id="ana", agent_id="langgraph")
        assert [h.kind for h in hits] == ["item"]
        assert await memory.search("vegetarian", user_id="bo", agent_id="langgraph") == []
        await memory.forget_user("ana", agent_id="langgraph")  # the store's agent: see docs/langgraph.md
        assert await store.aget(("memories", "ana"), "diet") is None
        assert (await store.aget(("memories", "bo"), "diet")) is not None
        with pytest.raises(InvalidArgumentError, match="user id at position 1"):
            await store.aput(("memories",), "k", {"text": "no user"})


async def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    async with open_memory("sqlite", tmp_path) as memory:
        store = CogitatorStore(memory)
        good = PutOp(("docs",), "a", {"text": "fine"})
        for bad, argument in [
            (PutOp(("docs",), "", {"text": "empty key"}), r"ops\[1\]\.key"),
            (PutOp(("docs",), "k" * 201, {"text": "long key"}), r"ops\[1\]\.key"),
            (PutOp(("docs",), "b", {"n": float("nan")}), r"ops\[1\]\.value"),
            (PutOp(("docs",), "b", {"t": 1}, ttl=-1), r"ops\[1\]\.ttl"),
        ]:
            with pytest.raises(InvalidArgumentError, match=argument):
                await store.abatch([good, bad])
        assert await store.asearch(("docs",)) == []
        with pytest.raises(InvalidArgumentError, match="filter"):
            await store.asearch(("docs",), filter={"n": {"$regex": "x"}})
        with pytest.raises(InvalidArgumentError, match="distance_type"):
            CogitatorStore(
                memory, index={"dims": 8, "embed": {"provider": "hashing", "dimensions": 8}, "distance_type": "l2"}
            )
        with pytest.raises(InvalidArgumentError, match=r"index\.dims"):
            CogitatorStore(memory, index={"dims": 9, "embed": {"provider": "hashing", "dimensions": 8}})
        with pytest.raises(InvalidArgumentError, match=r"index\.embed"):
            CogitatorStore(memory, index={"dims": 8})
        with pytest.raises(InvalidArgumentError, match="ttl"):
            CogitatorStore(memory, ttl={"default_ttl": 0})
        with pytest.raises(InvalidArgumentError, match="ttl"):
            CogitatorStore(memory, ttl={"default_tll": 1})


def test_sync_memory_serves_sync_and_async_calls(tmp_path: Path) -> None:
    import asyncio

    config = {"adapter": "sqlite", "path": str(tmp_path / "m.db"), "embedding": {"provider": "none"}}
    with SyncMemory(config) as memory:
        store = CogitatorStore(memory)
        store.put(("docs",), "a", {"text": "hello sync"})
        assert store.get(("docs",), "a").value == {"text": "hello sync"}  # type: ignore[union-attr]

        async def from_a_loop() -> list[Any]:
            return await store.asearch(("docs",), query="hello")

        assert [i.key for i in asyncio.run(from_a_loop())] == ["a"]


def test_a_missing_langgraph_names_the_pip_command() -> None:
    script = (
        "import sys\n"
        "sys.modules['langgraph.store.base'] = None  # as if langgraph-checkpoint were not installed\n"
        "from cogitator_memory.integrations import CogitatorStore\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "MissingDriverError" in out.stderr
    assert 'pip install "cogitator-memory[langgraph]"' in out.stderr
