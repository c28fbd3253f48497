"""``search_memory(kinds=...)``: a search asks only the channels of the kinds of hits wanted
(turns, memory items, facts saved with ``remember``), on every store; bad kinds are refused by name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.search import search_memory
from engine_configs import memory_config

ENGINES = ["memory", "sqlite", "postgres", "redis", "mongodb"]


@pytest.fixture(params=ENGINES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    config = {**memory_config(request.param, tmp_path, "sk"), "embedding": {"provider": "hashing", "dimensions": 64}}
    async with Memory(config) as opened:
        await opened.add([{"role": "user", "content": "I'm allergic to peanuts."}], user_id="ana", thread_id="t1")
        await opened.items.add(
            {
                "kind": "fact",
                "subject": "Ana",
                "attribute": "allergy",
                "value": "peanuts",
                "trust": "system",
                "scope": {"agent_id": "default", "user_id": "ana"},
            }
        )
        if opened.graph is not None:  # remember needs a graph store (not every engine has one)
            await opened.remember("Ana carries an epipen because of peanuts", user_id="ana")
        await opened.flush()
        yield opened


async def test_kinds_picks_what_a_search_returns(memory: Memory) -> None:
    async def kinds_of(kinds: tuple[str, ...] | None) -> set[str]:
        hits = await search_memory(
            memory,
            "peanuts",
            agent="default",
            user="ana",
            thread_id=None,
            limit=10,
            kinds=kinds,  # type: ignore[arg-type]
        )
        return {h.kind for h in hits}

    facts = {"fact"} if memory.graph is not None else set()
    assert await kinds_of(None) == {"entry", "item", *facts}
    assert await kinds_of(("item",)) == {"item"}
    assert await kinds_of(("entry",)) == {"entry"}
    assert await kinds_of(("fact",)) == facts
    assert await kinds_of(("item", "fact")) == {"item", *facts}


async def test_kinds_within_one_thread_searches_turns_only(memory: Memory) -> None:
    def ask(kinds: tuple[str, ...]) -> object:
        return search_memory(memory, "peanuts", agent="default", user="ana", thread_id="t1", limit=10, kinds=kinds)  # type: ignore[arg-type]

    assert await ask(("item",)) == []  # type: ignore[comparison-overlap]
    found = await ask(("entry", "item"))  # type: ignore[misc]
    assert [h.kind for h in found] == ["entry"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", ["item", [], ["turn"], ["item", 3], 5])
async def test_bad_kinds_are_refused_by_name(memory: Memory, bad: object) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        await search_memory(memory, "peanuts", agent="default", user="ana", thread_id=None, limit=10, kinds=bad)  # type: ignore[arg-type]
    assert "kinds" in str(raised.value)
