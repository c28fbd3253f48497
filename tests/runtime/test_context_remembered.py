"""build_context sends the facts remember saved that the input matches, on every store that
keeps a knowledge graph: the run's own and shared ones, never another user's, not once forgotten."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_memory import _config

from cogitator_memory.context.facts import REMEMBERED_LIMIT
from cogitator_memory.graph import GraphNode
from cogitator_memory.runtime.memory import Memory

GRAPH_ENGINES = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=GRAPH_ENGINES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory({**_config(request.param, tmp_path), "embedding": {"provider": "none"}}) as opened:
        yield opened


def _known(built: object) -> str:
    context = getattr(built, "memory_context", None) or ""
    return context


async def test_a_remembered_fact_reaches_the_next_conversation(memory: Memory) -> None:
    await memory.remember("Ana's dog is called Biscuit", user_id="ana")
    await memory.remember("Ana works as a nurse in Porto", user_id="ana")
    await memory.remember("Bo's dog is called Rex", user_id="bo")
    await memory.remember("The office dog policy allows small dogs", user_id=None)
    chat = await memory.add([{"role": "user", "content": "hello again"}], user_id="ana")
    built = await memory.build_context(chat.thread_id, user_id="ana", current_input="What is my dog called?")
    known = _known(built)
    assert "Known facts:" in known and "Biscuit" in known
    assert "Rex" not in known, "another user's fact is never sent"
    assert "small dogs" in known, "a shared fact is the run's too"
    assert "nurse" not in known, "only the facts the input matches"
    sent = [f for f in built.facts if isinstance(f, GraphNode)]
    assert {n.description or n.name for n in sent} >= {"Ana's dog is called Biscuit"}
    # no input: nothing to match, no remembered fact
    quiet = await memory.build_context(chat.thread_id, user_id="ana")
    assert "Biscuit" not in _known(quiet)


async def test_a_forgotten_fact_is_not_sent(memory: Memory) -> None:
    await memory.remember("Ana's dog is called Biscuit", user_id="ana")
    chat = await memory.add([{"role": "user", "content": "hello"}], user_id="ana")
    await memory.forget("Biscuit", user_id="ana")
    built = await memory.build_context(chat.thread_id, user_id="ana", current_input="What is my dog called?")
    assert "Biscuit" not in _known(built)


async def test_at_most_the_limit_is_sent(memory: Memory) -> None:
    for i in range(REMEMBERED_LIMIT + 4):
        await memory.remember(f"Ana's garden has rose bush number {i}", user_id="ana")
    chat = await memory.add([{"role": "user", "content": "hello"}], user_id="ana")
    built = await memory.build_context(chat.thread_id, user_id="ana", current_input="roses in my garden?")
    assert sum(isinstance(f, GraphNode) for f in built.facts) == REMEMBERED_LIMIT
