"""The graph conformance suite on InMemoryAdapter."""

from collections.abc import AsyncIterator

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.graph import is_graph_adapter
from cogitator_memory.testing.graph import GraphConformanceCase, graph_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as memory:
        yield memory


@pytest.mark.parametrize("case", graph_adapter_conformance_cases(), ids=str)
async def test_graph_conformance(case: GraphConformanceCase, store: InMemoryAdapter) -> None:
    await case.run(store)


def test_the_in_memory_store_keeps_a_graph() -> None:
    assert InMemoryAdapter().supports("graph")
    assert is_graph_adapter(InMemoryAdapter())
