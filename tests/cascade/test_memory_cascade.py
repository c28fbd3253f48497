"""The cascade cases on the in-memory engine (threads, items, files, graph and vectors in
process memory); its raw data is every string the stores keep."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from cascade_raw import process_bytes

from cogitator_memory import InMemoryAdapter, InMemoryEmbeddingAdapter
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases


@pytest.fixture
async def stores() -> AsyncIterator[CascadeStores]:
    async with InMemoryAdapter() as memory, InMemoryEmbeddingAdapter(dimensions=DIMENSIONS) as vectors:

        async def raw() -> bytes:
            return process_bytes(memory, vectors)

        yield CascadeStores(memory=memory, embeddings=vectors, graph=memory, raw=raw)


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
