"""The memory file conformance suite on InMemoryAdapter."""

from collections.abc import AsyncIterator

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.files import is_memory_file_adapter
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as memory:
        yield memory


def test_the_in_memory_store_keeps_files() -> None:
    memory = InMemoryAdapter()
    assert memory.supports("files") and is_memory_file_adapter(memory)


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: InMemoryAdapter) -> None:
    await case.run(store)
