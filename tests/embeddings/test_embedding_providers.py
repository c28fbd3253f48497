"""The OpenAI, Ollama and Google clients over real HTTP against a scripted loopback server."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import pytest

from cogitator_memory.embeddings import (
    EmbeddingServiceError,
    GoogleEmbeddingService,
    HttpEmbeddingService,
    OllamaEmbeddingService,
    OpenAIEmbeddingService,
    RetryPolicy,
)
from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.testing.scripted_server import (
    Handler,
    ScriptedServer,
    google_batch_embed_handler,
    ollama_embed_handler,
    openai_embeddings_handler,
)

DIMS = 8


@dataclass
class Provider:
    """How to reach one provider on the scripted server and how its answers look."""

    name: str
    path: str
    handler: Callable[[int], Handler]
    make: Callable[..., HttpEmbeddingService]
    good_body: Callable[[list[list[Any]]], Any]
    wrong_shape: Any


def _openai(url: str, **kw: Any) -> HttpEmbeddingService:
    return OpenAIEmbeddingService(base_url=url + "/v1", api_key="sk-test", model="test-model", dimensions=DIMS, **kw)


def _ollama(url: str, **kw: Any) -> HttpEmbeddingService:
    return OllamaEmbeddingService(base_url=url, model="test-model", dimensions=DIMS, **kw)


def _google(url: str, **kw: Any) -> HttpEmbeddingService:
    return GoogleEmbeddingService(base_url=url + "/v1beta", api_key="g-key", model="test-model", dimensions=DIMS, **kw)


PROVIDERS = [
    Provider(
        "openai",
        "/v1/embeddings",
        openai_embeddings_handler,
        _openai,
        lambda vs: {"data": [{"index": i, "embedding": v} for i, v in enumerate(vs)]},
        {"embeddings": []},
    ),
    Provider(
        "ollama",
        "/api/embed",
        ollama_embed_handler,
        _ollama,
        lambda vs: {"embeddings": vs},
        {"data": []},
    ),
    Provider(
        "google",
        "/v1beta/models/test-model:batchEmbedContents",
        lambda d: google_batch_embed_handler(d, api_key="g-key"),
        _google,
        lambda vs: {"embeddings": [{"values": v} for v in vs]},
        {"embedding": {"values": [1.0]}},
    ),
]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


class Retries:
    """A fast retry policy that records every retry it makes."""

    def __init__(self, max_retries: int = 2) -> None:
        self.calls: list[tuple[int, float, str]] = []
        self.policy = RetryPolicy(
            max_retries=max_retries, backoff_base=0.01, jitter=0, on_retry=lambda a, d, r: self.calls.append((a, d, r))
        )


@pytest.fixture
async def make_service(
    server: ScriptedServer, provider: Provider
) -> AsyncIterator[Callable[..., HttpEmbeddingService]]:
    made: list[HttpEmbeddingService] = []

    def make(**kw: Any) -> HttpEmbeddingService:
        service = provider.make(server.url, **kw)
        made.append(service)
        return service

    yield make
    for service in made:
        await service.aclose()


TEXTS = ["the cat sat on the mat", "dogs bark at night", "a third text", "four", "five words are here"]


def approx(vectors: list[list[float]] | list[float]) -> Any:
    """Compare float vectors (or lists of them) to within rounding."""
    if vectors and isinstance(vectors[0], list):
        return [pytest.approx(v) for v in vectors]
    return pytest.approx(vectors)


def expected(texts: list[str]) -> list[list[float]]:
    from cogitator_memory.embeddings import HashingEmbedder

    embedder = HashingEmbedder(DIMS)
    return [embedder.vector(t) for t in texts]


async def test_success_returns_vectors_in_order_and_sends_the_provider_shape(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.fallback(provider.path, provider.handler(DIMS))
    service = make_service()
    vectors = await service.embed_batch(TEXTS[:3])
    assert vectors == approx(expected(TEXTS[:3]))
    assert await service.embed("dogs bark at night") == approx(expected(["dogs bark at night"])[0])
    sent = server.requests_to(provider.path)
    assert len(sent) == 2
    body = sent[0].json()
    assert sent[0].method == "POST"
    if provider.name == "openai":
        assert body["input"] == TEXTS[:3] and body["model"] == "test-model"
        assert sent[0].header("authorization") == "Bearer sk-test"
        assert "dimensions" not in body  # only text-embedding-3 models take it
    elif provider.name == "ollama":
        assert body["input"] == TEXTS[:3] and body["model"] == "test-model"
    else:
        assert [r["content"]["parts"][0]["text"] for r in body["requests"]] == TEXTS[:3]
        assert body["requests"][0]["model"] == "models/test-model"
        assert sent[0].header("x-goog-api-key") == "g-key"
        assert "g-key" not in sent[0].query


async def test_batches_are_split_by_batch_size(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.fallback(provider.path, provider.handler(DIMS))
    service = make_service(batch_size=2)
    vectors = await service.embed_batch(TEXTS)
    assert vectors == approx(expected(TEXTS))
    sent = server.requests_to(provider.path)
    assert len(sent) == 3
    sizes = [len(r.json()["requests"] if provider.name == "google" else r.json()["input"]) for r in sent]
    assert sizes == [2, 2, 1]


async def test_429_with_retry_after_seconds_is_waited_then_succeeds(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
    server.fallback(provider.path, provider.handler(DIMS))
    retries = Retries()
    service = make_service(retry=retries.policy)
    assert await service.embed_batch(TEXTS[:2]) == approx(expected(TEXTS[:2]))
    assert len(server.requests_to(provider.path)) == 2
    assert len(retries.calls) == 1
    attempt, delay, reason = retries.calls[0]
    assert (attempt, delay) == (1, 1.0)
    assert "429" in reason and "slow down" in reason


async def test_500_then_success(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, status=500, body="internal error")
    server.enqueue(provider.path, status=502, json={"error": "bad gateway"})
    server.fallback(provider.path, provider.handler(DIMS))
    retries = Retries()
    service = make_service(retry=retries.policy)
    assert await service.embed("hello") == approx(expected(["hello"])[0])
    assert len(server.requests_to(provider.path)) == 3
    assert [c[1] for c in retries.calls] == [0.01, 0.02]  # exponential backoff, no jitter


async def test_exhausted_retries_raise_with_provider_and_status(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    for _ in range(3):
        server.enqueue(provider.path, status=503, json={"error": {"message": "overloaded"}})
    server.fallback(provider.path, provider.handler(DIMS))
    retries = Retries(max_retries=2)
    service = make_service(retry=retries.policy)
    with pytest.raises(EmbeddingServiceError) as info:
        await service.embed("hello")
    error = info.value
    assert (error.provider, error.status, error.attempts, error.retryable) == (provider.name, 503, 3, True)
    assert provider.name in str(error) and "503" in str(error) and "overloaded" in str(error)
    assert isinstance(error, MemoryStoreError)
    assert len(server.requests_to(provider.path)) == 3


async def test_400_is_not_retried(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, status=400, json={"error": {"message": "model not found"}})
    server.fallback(provider.path, provider.handler(DIMS))
    retries = Retries()
    service = make_service(retry=retries.policy)
    with pytest.raises(EmbeddingServiceError) as info:
        await service.embed("hello")
    assert info.value.status == 400 and not info.value.retryable
    assert "model not found" in str(info.value) and "400" in str(info.value)
    assert len(server.requests_to(provider.path)) == 1 and retries.calls == []


@pytest.mark.parametrize("kind", ["not-json", "wrong-shape", "wrong-count", "non-numeric", "wrong-dims", "nan-text"])
async def test_malformed_bodies_fail_clearly_without_retry(
    kind: str, server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    good = [[0.5] * DIMS, [0.25] * DIMS]
    if kind == "not-json":
        server.enqueue(provider.path, body="<html>gateway</html>")
    elif kind == "wrong-shape":
        server.enqueue(provider.path, json=provider.wrong_shape)
    elif kind == "wrong-count":
        server.enqueue(provider.path, json=provider.good_body(good[:1]))
    elif kind == "non-numeric":
        server.enqueue(provider.path, json=provider.good_body([good[0], ["x"] * DIMS]))
    elif kind == "wrong-dims":
        server.enqueue(provider.path, json=provider.good_body([good[0], [0.5] * (DIMS + 1)]))
    else:
        server.enqueue(provider.path, json=provider.good_body([good[0], [True] * DIMS]))
    retries = Retries()
    service = make_service(retry=retries.policy)
    with pytest.raises(EmbeddingServiceError) as info:
        await service.embed_batch(["one", "two"])
    message = str(info.value)
    assert info.value.provider == provider.name and info.value.status == 200
    assert provider.name in message and "200" in message and "malformed" in message
    assert len(server.requests_to(provider.path)) == 1 and retries.calls == []
    if kind == "wrong-dims":
        assert f"{DIMS + 1} dimensions, expected {DIMS}" in message
    if kind == "wrong-count":
        assert "1 vectors for 2 texts" in message


async def test_timeout_is_retried_then_reported(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, json=provider.good_body([[0.5] * DIMS]), delay=2.0)
    server.enqueue(provider.path, json=provider.good_body([[0.5] * DIMS]), delay=2.0)
    retries = Retries(max_retries=1)
    service = make_service(retry=retries.policy, timeout=0.2)
    with pytest.raises(EmbeddingServiceError) as info:
        await service.embed("slow")
    assert info.value.status is None and info.value.attempts == 2
    assert "timed out" in str(info.value) and provider.name in str(info.value)
    assert len(retries.calls) == 1


async def test_timeout_then_success(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, json=provider.good_body([[0.5] * DIMS]), delay=2.0)
    server.fallback(provider.path, provider.handler(DIMS))
    service = make_service(retry=Retries().policy, timeout=0.3)
    assert await service.embed("fast now") == approx(expected(["fast now"])[0])


async def test_dropped_connection_is_retried(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, drop=True)
    server.fallback(provider.path, provider.handler(DIMS))
    retries = Retries()
    service = make_service(retry=retries.policy)
    assert await service.embed("hello") == approx(expected(["hello"])[0])
    assert len(retries.calls) == 1 and "cannot reach" in retries.calls[0][2]


async def test_retry_after_longer_than_allowed_fails_at_once(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.enqueue(provider.path, status=429, headers={"Retry-After": "3600"}, json={"error": {"message": "quota"}})
    service = make_service(retry=RetryPolicy(max_retries=3, max_retry_after=10))
    with pytest.raises(EmbeddingServiceError) as info:
        await service.embed("hello")
    assert info.value.status == 429 and "3600" in str(info.value)
    assert len(server.requests_to(provider.path)) == 1


async def test_empty_input_rules(
    server: ScriptedServer, provider: Provider, make_service: Callable[..., HttpEmbeddingService]
) -> None:
    server.fallback(provider.path, provider.handler(DIMS))
    service = make_service()
    assert await service.embed_batch([]) == []
    with pytest.raises(InvalidArgumentError, match="'text'"):
        await service.embed("")
    with pytest.raises(InvalidArgumentError, match=r"texts\[1\]"):
        await service.embed_batch(["fine", "   "])
    with pytest.raises(InvalidArgumentError, match=r"texts\[0\]"):
        await service.embed_batch([3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="'texts'"):
        await service.embed_batch("a string")
    assert server.requests == []


async def test_unreachable_server_reports_no_status(provider: Provider) -> None:
    with ScriptedServer() as closed:
        url = closed.url
    retries = Retries(max_retries=1)
    service = provider.make(url, retry=retries.policy, timeout=2)
    async with service:
        with pytest.raises(EmbeddingServiceError) as info:
            await service.embed("hello")
    assert info.value.status is None and "cannot reach" in str(info.value) and info.value.attempts == 2


async def test_retry_after_http_date(server: ScriptedServer) -> None:
    when = formatdate(time.time() + 2, usegmt=True)
    server.enqueue("/api/embed", status=503, headers={"Retry-After": when})
    server.fallback("/api/embed", ollama_embed_handler(DIMS))
    retries = Retries()
    async with _ollama(server.url, retry=retries.policy) as service:
        await service.embed("hello")
    assert len(retries.calls) == 1 and 0.0 < retries.calls[0][1] <= 2.0


async def test_openai_sends_dimensions_only_for_text_embedding_3(server: ScriptedServer) -> None:
    server.fallback("/v1/embeddings", openai_embeddings_handler())
    async with OpenAIEmbeddingService(base_url=server.url + "/v1", model="text-embedding-3-small", dimensions=16) as s:
        assert len(await s.embed("hi")) == 16
    async with OpenAIEmbeddingService(base_url=server.url + "/v1", model="custom", dimensions=8) as s:
        assert len(await s.embed("hi")) == 8
    first, second = (r.json() for r in server.requests)
    assert first["dimensions"] == 16 and "dimensions" not in second
    assert server.requests[1].header("authorization") in (None, f"Bearer {os.environ.get('OPENAI_API_KEY')}")


async def test_google_sends_output_dimensionality_and_task_type(server: ScriptedServer) -> None:
    path = "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    server.fallback(path, google_batch_embed_handler())
    service = GoogleEmbeddingService(
        base_url=server.url + "/v1beta", api_key="k", dimensions=12, task_type="RETRIEVAL_QUERY"
    )
    async with service:
        assert len(await service.embed("hi")) == 12
    request = server.requests[0].json()["requests"][0]
    assert request["outputDimensionality"] == 12 and request["taskType"] == "RETRIEVAL_QUERY"


async def test_google_without_key_fails_before_sending(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    async with GoogleEmbeddingService(base_url=server.url, model="text-embedding-004") as service:
        with pytest.raises(EmbeddingServiceError, match="no API key"):
            await service.embed("hi")
    assert server.requests == []


def test_unknown_model_needs_dimensions() -> None:
    with pytest.raises(InvalidArgumentError, match="'dimensions'"):
        OpenAIEmbeddingService(model="my-model")
    with pytest.raises(InvalidArgumentError, match="'dimensions'"):
        OllamaEmbeddingService(model="my-model")
    with pytest.raises(InvalidArgumentError, match="'batch_size'"):
        OllamaEmbeddingService(batch_size=0)
    with pytest.raises(InvalidArgumentError, match="'timeout'"):
        OllamaEmbeddingService(timeout=0)
    assert OllamaEmbeddingService(model="nomic-embed-text:latest").dimensions == 768


async def test_environment_keys_go_only_to_the_providers_own_host(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key read from the environment is never sent to a server the caller pointed the client at."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai-secret")
    monkeypatch.setenv("GEMINI_API_KEY", "env-gemini-secret")
    server.fallback("/v1/embeddings", openai_embeddings_handler())
    async with OpenAIEmbeddingService(base_url=server.url + "/v1", model="custom", dimensions=8) as service:
        await service.embed("hi")
    assert server.requests[0].header("authorization") is None
    # Passed explicitly, the key goes wherever the caller says.
    async with OpenAIEmbeddingService(
        base_url=server.url + "/v1", model="custom", dimensions=8, api_key="sk-given"
    ) as service:
        await service.embed("hi")
    assert server.requests[1].header("authorization") == "Bearer sk-given"
    # Google's client has no key for a foreign host, so it fails before sending anything.
    async with GoogleEmbeddingService(base_url=server.url, model="text-embedding-004") as google:
        with pytest.raises(EmbeddingServiceError, match="no API key"):
            await google.embed("hi")
    assert len(server.requests) == 2
    # The provider's own addresses still read the environment.
    assert OpenAIEmbeddingService()._api_key == "sk-env-openai-secret"
    assert GoogleEmbeddingService()._api_key == "env-gemini-secret"
