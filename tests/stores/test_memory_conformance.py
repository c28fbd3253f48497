"""The conformance suite on InMemoryAdapter."""

from collections.abc import AsyncIterator

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.testing import ConformanceCase, memory_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter(max_entries=20_000) as memory:
        yield memory


@pytest.mark.parametrize("case", memory_adapter_conformance_cases(), ids=str)
async def test_conformance(case: ConformanceCase, store: InMemoryAdapter) -> None:
    await case.run(store)
