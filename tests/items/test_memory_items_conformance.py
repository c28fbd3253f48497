"""The memory item conformance suite on InMemoryAdapter."""

from collections.abc import AsyncIterator

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.testing.items import ItemConformanceCase, memory_item_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as memory:
        yield memory


@pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
async def test_item_conformance(case: ItemConformanceCase, store: InMemoryAdapter) -> None:
    await case.run(store)


def test_the_in_memory_store_declares_items() -> None:
    assert InMemoryAdapter().supports("items")
