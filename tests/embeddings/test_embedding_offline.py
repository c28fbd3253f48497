"""The hashing embedder, the factory, Retry-After parsing and the scripted server itself."""

from __future__ import annotations

import math
import time
from email.utils import formatdate

import httpx
import pytest

from cogitator_memory.embeddings import (
    EmbeddingService,
    GoogleEmbeddingService,
    HashingEmbedder,
    LocalEmbeddingService,
    OllamaEmbeddingService,
    OpenAIEmbeddingService,
    RetryPolicy,
    create_embedding_service,
    parse_retry_after,
)
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.testing.scripted_server import ScriptedResponse, ScriptedServer


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_hashing_is_deterministic_normalised_and_sized() -> None:
    embedder = HashingEmbedder(64)
    first = await embedder.embed("Deterministic vectors for tests")
    again = await HashingEmbedder(64).embed("Deterministic vectors for tests")
    assert first == again and len(first) == 64
    assert math.isclose(math.sqrt(sum(v * v for v in first)), 1.0)
    other_seed = await HashingEmbedder(64, seed=1).embed("Deterministic vectors for tests")
    assert other_seed != first
    assert isinstance(embedder, EmbeddingService)


async def test_hashing_similar_texts_are_closer_than_unrelated() -> None:
    embedder = HashingEmbedder(256)
    base, near, far = await embedder.embed_batch(
        ["The database migration failed last night", "database migrations failing at night", "I love baking bread"]
    )
    assert cosine(base, near) > 0.25
    assert cosine(base, near) > cosine(base, far) + 0.3


async def test_hashing_handles_unicode_and_punctuation_only() -> None:
    embedder = HashingEmbedder(32)
    for text in ["Привет, мир", "東京タワー", "!!!", "🙂🙂"]:
        vector = await embedder.embed(text)
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0)
    a, b = await embedder.embed_batch(["Привет мир", "привет МИР"])
    assert cosine(a, b) == pytest.approx(1.0)


async def test_hashing_refuses_bad_options_and_empty_text() -> None:
    with pytest.raises(InvalidArgumentError, match="'dimensions'"):
        HashingEmbedder(0)
    with pytest.raises(InvalidArgumentError, match="'char_ngrams'"):
        HashingEmbedder(8, char_ngrams=(0,))
    with pytest.raises(InvalidArgumentError, match="'bigram_weight'"):
        HashingEmbedder(8, bigram_weight=float("nan"))
    with pytest.raises(InvalidArgumentError, match="'text'"):
        await HashingEmbedder(8).embed(" \n")


def test_factory_builds_each_provider() -> None:
    assert isinstance(create_embedding_service({"provider": "hashing", "dimensions": 16}), HashingEmbedder)
    openai = create_embedding_service({"provider": "openai", "api_key": "k", "max_retries": 5, "timeout": 3})
    assert isinstance(openai, OpenAIEmbeddingService) and openai.dimensions == 1536
    assert openai.retry.max_retries == 5 and openai.timeout == 3
    ollama = create_embedding_service({"provider": "ollama", "model": "all-minilm"})
    assert isinstance(ollama, OllamaEmbeddingService) and ollama.dimensions == 384
    google = create_embedding_service({"provider": "google", "api_key": "k", "dimensions": 768})
    assert isinstance(google, GoogleEmbeddingService) and google.dimensions == 768
    local = create_embedding_service({"provider": "LOCAL", "batch_size": 8})
    assert isinstance(local, LocalEmbeddingService) and local.dimensions == 384 and local.batch_size == 8


def test_factory_refuses_unknown_provider_and_keys() -> None:
    with pytest.raises(InvalidArgumentError, match="'provider'"):
        create_embedding_service({"provider": "cohere"})
    with pytest.raises(InvalidArgumentError, match="'provider'"):
        create_embedding_service({})
    with pytest.raises(InvalidArgumentError, match="'apiKey'"):
        create_embedding_service({"provider": "openai", "apiKey": "k"})
    with pytest.raises(InvalidArgumentError, match="'max_retries'"):
        create_embedding_service({"provider": "hashing", "max_retries": 2})
    with pytest.raises(InvalidArgumentError, match="'max_retries'"):
        create_embedding_service({"provider": "openai", "max_retries": -1})
    with pytest.raises(InvalidArgumentError, match="'config'"):
        create_embedding_service("openai")


def test_parse_retry_after() -> None:
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    now = time.time()
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_retry_policy_backoff_and_validation() -> None:
    policy = RetryPolicy(backoff_base=1, backoff_max=5, jitter=0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
    jittered = RetryPolicy(backoff_base=1, jitter=0.5)
    assert all(2 <= jittered.backoff(2) <= 3 for _ in range(20))
    with pytest.raises(InvalidArgumentError, match="'backoff_base'"):
        RetryPolicy(backoff_base=-1)


async def test_scripted_server_queues_records_and_falls_back() -> None:
    async with ScriptedServer() as server, httpx.AsyncClient(base_url=server.url) as client:
        server.enqueue("/x", status=201, json={"n": 1}, headers={"X-Test": "yes"})
        server.enqueue("/x", ScriptedResponse(status=200, body=b"raw"))
        server.fallback("/x", lambda r: ScriptedResponse(json={"echo": r.json()}))
        first = await client.post("/x?q=1", json={"a": 1})
        second = await client.post("/x", json={"a": 2})
        third = await client.post("/x", json={"a": 3})
        missing = await client.get("/nothing")
        assert (first.status_code, first.json(), first.headers["x-test"]) == (201, {"n": 1}, "yes")
        assert second.content == b"raw"
        assert third.json() == {"echo": {"a": 3}}
        assert missing.status_code == 404 and "/nothing" in missing.text
        assert [r.path for r in server.requests] == ["/x", "/x", "/x", "/nothing"]
        assert server.requests[0].query == "q=1" and server.requests[0].json() == {"a": 1}
        assert server.pending("/x") == 0 and len(server.requests_to("/x")) == 3
        with pytest.raises(InvalidArgumentError, match="'path'"):
            server.enqueue("x")


async def test_scripted_server_handler_errors_become_500() -> None:
    def broken(_: object) -> ScriptedResponse:
        raise KeyError("oops")

    async with ScriptedServer() as server, httpx.AsyncClient(base_url=server.url) as client:
        server.fallback("/boom", broken)
        answer = await client.post("/boom", json={})
        assert answer.status_code == 500 and "KeyError" in answer.text
