"""The fact conformance suite on InMemoryAdapter."""

from collections.abc import AsyncIterator

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.items.facts import is_fact_adapter
from cogitator_memory.testing.facts import FactConformanceCase, fact_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as memory:
        yield memory


@pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
async def test_fact_conformance(case: FactConformanceCase, store: InMemoryAdapter) -> None:
    await case.run(store)


def test_the_in_memory_store_is_a_fact_adapter() -> None:
    assert is_fact_adapter(InMemoryAdapter())
    assert not is_fact_adapter(object())


async def test_a_disconnected_store_fails_every_fact_call() -> None:
    memory = InMemoryAdapter()
    for result in (
        await memory.add_fact({"agent_id": "a", "content": "x"}),
        await memory.get_fact("fact_1"),
        await memory.get_facts("a"),
        await memory.search_facts("a", "x"),
        await memory.update_fact("fact_1", {}),
        await memory.delete_fact("fact_1"),
    ):
        assert not result.success and "not connected" in (result.error or "")
