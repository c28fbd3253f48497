"""InMemoryEmbeddingAdapter's BM25 parameters change how long documents are ranked."""

import pytest

from cogitator_memory import BM25, InMemoryEmbeddingAdapter, InvalidArgumentError, unwrap


async def _ranking(store: InMemoryEmbeddingAdapter) -> list[str]:
    long_reply = "hotel " * 3 + " ".join(f"filler{i}" for i in range(200))
    docs = [("short", "which hotel in Lisbon"), ("long", long_reply)] + [
        (f"other{i}", f"unrelated text number {i}") for i in range(8)
    ]
    async with store:
        unwrap(
            await store.add_embeddings(
                [
                    {"source_id": sid, "source_type": "message", "content": text, "vector": [1.0, float(i + 1)]}
                    for i, (sid, text) in enumerate(docs)
                ]
            )
        )
        hits = unwrap(await store.keyword_search("hotel", limit=2))
    return [h.source_id for h in hits]


async def test_length_normalisation_follows_the_bm25_given() -> None:
    # With b=0 length does not count and k1 large, the long reply's three "hotel"s win; with the
    # default b=0.75 its length pulls it below the short turn.
    assert await _ranking(InMemoryEmbeddingAdapter()) == ["short", "long"]
    assert await _ranking(InMemoryEmbeddingAdapter(bm25=BM25(k1=3.0, b=0.0))) == ["long", "short"]


def test_a_bm25_that_is_not_one_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="bm25"):
        InMemoryEmbeddingAdapter(bm25=(3, 1))  # type: ignore[arg-type]
