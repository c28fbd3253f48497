"""The fact conformance suite on SQLiteAdapter, on a file (WAL) and on ':memory:', and facts
surviving a reopened file."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter
from cogitator_memory.result import unwrap
from cogitator_memory.testing.facts import FactConformanceCase, fact_adapter_conformance_cases


@pytest.fixture(params=["file", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteAdapter]:
    path = str(tmp_path / "nested" / "memory.db") if request.param == "file" else ":memory:"
    async with SQLiteAdapter(path=path) as memory:
        yield memory


@pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
async def test_fact_conformance(case: FactConformanceCase, store: SQLiteAdapter) -> None:
    await case.run(store)


async def test_facts_outlive_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    async with SQLiteAdapter(path=path) as memory:
        fact = unwrap(await memory.add_fact({"agent_id": "a", "content": "Likes tea", "metadata": {"user_id": "u"}}))
        unwrap(await memory.update_fact(fact.id, {"content": "Likes coffee"}))
    async with SQLiteAdapter(path=path) as memory:
        again = unwrap(await memory.get_fact(fact.id))
        assert again is not None and again.content == "Likes coffee" and again.created_at == fact.created_at
        assert [f.id for f in unwrap(await memory.get_facts("a", user_id="u"))] == [fact.id]
