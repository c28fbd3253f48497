"""The embedding conformance suite on InMemoryEmbeddingAdapter (sized up front, and learning its size)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cogitator_memory.testing.embedding import embedding_adapter_conformance_cases
from cogitator_memory.vectors import InMemoryEmbeddingAdapter

CASES = embedding_adapter_conformance_cases()


@pytest.fixture(params=[8, None], ids=["dims8", "learned"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryEmbeddingAdapter]:
    async with InMemoryEmbeddingAdapter(dimensions=request.param) as adapter:
        yield adapter


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_conformance(case, store):
    await case.run(store)
