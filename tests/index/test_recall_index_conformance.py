"""The recall-index conformance suite on the embedded stores: in-memory, and SQLite on a file and on ':memory:'."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter
from cogitator_memory.testing.recall_index import RecallIndexConformanceCase, recall_index_conformance_cases


@pytest.fixture(params=["memory", "sqlite-file", "sqlite-memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        async with InMemoryAdapter() as memory:
            yield memory
        return
    path = str(tmp_path / "recall.db") if request.param == "sqlite-file" else ":memory:"
    async with SQLiteAdapter(path=path) as sqlite:
        yield sqlite


@pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
async def test_recall_index_conformance(case: RecallIndexConformanceCase, store: Any) -> None:
    await case.run(store)
