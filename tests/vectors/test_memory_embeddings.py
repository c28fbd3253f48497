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


async def test_nearest_ids_asks_a_store_without_search_ids_by_its_search() -> None:
    # a store of your own written to EmbeddingAdapter alone (no search_ids): its search's hits
    # come back as VectorHits, the same as a built-in store's search_ids; a failure stays one
    from cogitator_memory.vectors import VectorHit
    from cogitator_memory.vectors.base import nearest_ids

    class SearchOnly:
        def __init__(self, inner: InMemoryEmbeddingAdapter) -> None:
            self.inner = inner

        async def search(self, vector: list[float], **kw: object) -> object:
            return await self.inner.search(vector, **kw)  # type: ignore[arg-type]

    inner = InMemoryEmbeddingAdapter(dimensions=2)
    await inner.connect()
    await inner.add_embeddings(
        [
            {"source_id": "a", "source_type": "message", "content": "a", "vector": [1.0, 0.0]},
            {"source_id": "b", "source_type": "message", "content": "b", "vector": [0.6, 0.8]},
        ]
    )
    own = await nearest_ids(SearchOnly(inner), [1.0, 0.0], limit=5, threshold=-1.0)
    built_in = await nearest_ids(inner, [1.0, 0.0], limit=5, threshold=-1.0)
    assert own.success and built_in.success
    assert all(type(h) is VectorHit for h in own.unwrap())
    assert [(h.source_id, round(h.score, 6)) for h in own.unwrap()] == [("a", 1.0), ("b", 0.6)]
    assert [(h.id, h.source_id) for h in own.unwrap()] == [(h.id, h.source_id) for h in built_in.unwrap()]
    failed = await nearest_ids(SearchOnly(inner), [1.0, 0.0], limit=0)
    assert not failed.success and "limit" in (failed.error or "")
