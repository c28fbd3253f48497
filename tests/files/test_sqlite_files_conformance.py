"""The memory file conformance suite on SQLiteAdapter, on a file (WAL) and on ':memory:'."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases


@pytest.fixture(params=["file", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteAdapter]:
    path = str(tmp_path / "nested" / "memory.db") if request.param == "file" else ":memory:"
    async with SQLiteAdapter(path=path) as memory:
        yield memory


def test_the_sqlite_store_keeps_files() -> None:
    assert SQLiteAdapter(path=":memory:").supports("files")


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: SQLiteAdapter) -> None:
    await case.run(store)
