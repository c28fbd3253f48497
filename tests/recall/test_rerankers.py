"""HTTP rerankers over real HTTP against ScriptedServer: request shapes, answers, retries, errors."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.http import RetryPolicy
from cogitator_memory.recall import (
    CohereReranker,
    HttpReranker,
    JinaReranker,
    MemoryRetriever,
    Reranker,
    RerankerError,
    RerankResult,
    VoyageReranker,
)
from cogitator_memory.testing.scripted_server import (
    Handler,
    ScriptedServer,
    cohere_rerank_handler,
    jina_rerank_handler,
    voyage_rerank_handler,
)

FAST = RetryPolicy(max_retries=2, backoff_base=0.0, jitter=0.0)
KEY = "sk-rerank-secret-123456"

SHAPES: list[tuple[type[HttpReranker], str, Callable[..., Handler], str]] = [
    (CohereReranker, "/v2/rerank", cohere_rerank_handler, "top_n"),
    (JinaReranker, "/v1/rerank", jina_rerank_handler, "top_n"),
    (VoyageReranker, "/v1/rerank", voyage_rerank_handler, "top_k"),
]
IDS = ["cohere", "jina", "voyage"]

DOCS = ["the cat sat on the mat", "stock markets fell on monday", "a cat and a dog on a mat", "rain tomorrow"]


@pytest.mark.parametrize(("cls", "path", "handler", "limit_key"), SHAPES, ids=IDS)
async def test_request_shape_and_answer(
    cls: type[HttpReranker], path: str, handler: Callable[..., Handler], limit_key: str
) -> None:
    with ScriptedServer() as server:
        server.fallback(path, handler(api_key=KEY))
        async with cls(api_key=KEY, base_url=server.url, retry=FAST) as reranker:
            assert isinstance(reranker, Reranker)
            results = await reranker.rerank("cat on the mat", DOCS)
        body = server.requests[0].json()
        assert body["query"] == "cat on the mat" and body["documents"] == DOCS
        assert body["model"] == cls.default_model
        assert limit_key not in body  # every document is ranked unless a limit is given
        assert server.requests[0].header("authorization") == f"Bearer {KEY}"
        assert [r.index for r in results][:2] == [0, 2]
        assert all(isinstance(r, RerankResult) for r in results)
        assert results[0].score >= results[1].score >= results[-1].score


@pytest.mark.parametrize(("cls", "path", "handler", "limit_key"), SHAPES, ids=IDS)
async def test_limit_is_sent_and_a_wrong_key_fails_without_showing_it(
    cls: type[HttpReranker], path: str, handler: Callable[..., Handler], limit_key: str
) -> None:
    with ScriptedServer() as server:
        server.fallback(path, handler(api_key=KEY))
        limited: Any = cls(api_key=KEY, base_url=server.url, retry=FAST, **{limit_key: 2})
        async with limited:
            results = await limited.rerank("cat on the mat", DOCS)
        assert server.requests[-1].json()[limit_key] == 2 and len(results) == 2
        async with cls(api_key="sk-wrong-key-999999", base_url=server.url, retry=FAST) as wrong:
            with pytest.raises(RerankerError) as failed:
                await wrong.rerank("cat", DOCS)
        assert failed.value.status == 401 and not failed.value.retryable
        assert "sk-wrong-key-999999" not in str(failed.value)
        assert len(server.requests) == 2  # a 401 is not retried


@pytest.mark.parametrize(("cls", "path", "handler", "limit_key"), SHAPES, ids=IDS)
async def test_429_and_5xx_are_retried_then_answered(
    cls: type[HttpReranker], path: str, handler: Callable[..., Handler], limit_key: str
) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=3, backoff_base=0.0, jitter=0.0, on_retry=lambda n, d, r: waits.append(d))
    with ScriptedServer() as server:
        server.fallback(path, handler())
        server.enqueue(path, status=429, headers={"Retry-After": "0.05"}, json={"message": "slow down"})
        server.enqueue(path, status=503, json={"message": "busy"})
        async with cls(base_url=server.url, retry=policy) as reranker:
            results = await reranker.rerank("cat", DOCS)
        assert len(server.requests) == 3 and len(results) == len(DOCS)
        assert waits == [0.05, 0.0]


@pytest.mark.parametrize(("cls", "path", "handler", "limit_key"), SHAPES, ids=IDS)
async def test_malformed_answers_are_errors(
    cls: type[HttpReranker], path: str, handler: Callable[..., Handler], limit_key: str
) -> None:
    key = "data" if cls is VoyageReranker else "results"
    bad_answers: list[Any] = [
        {"nothing": []},
        {key: [{"index": 9, "relevance_score": 0.5}]},
        {key: [{"index": 0, "relevance_score": "high"}]},
        {key: [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]},
        {key: ["not an object"]},
    ]
    async with ScriptedServer() as server, cls(base_url=server.url, retry=FAST) as reranker:
        for answer in bad_answers:
            server.enqueue(path, json=answer)
            with pytest.raises(RerankerError, match="malformed answer"):
                await reranker.rerank("cat", DOCS)
        server.enqueue(path, body="<html>oops</html>")
        with pytest.raises(RerankerError, match="not JSON"):
            await reranker.rerank("cat", DOCS)
        server.enqueue(path, drop=True)
        server.enqueue(path, drop=True)
        server.enqueue(path, drop=True)
        with pytest.raises(RerankerError) as dropped:
            await reranker.rerank("cat", DOCS)
        assert dropped.value.status is None and dropped.value.retryable and dropped.value.attempts == 3


async def test_no_documents_make_no_request_and_bad_arguments_are_named() -> None:
    async with ScriptedServer() as server, CohereReranker(base_url=server.url, retry=FAST) as reranker:
        assert await reranker.rerank("cat", []) == []
        assert server.requests == []
        with pytest.raises(InvalidArgumentError, match=r"documents\[1\]"):
            await reranker.rerank("cat", ["a", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="base_url"):
        CohereReranker(base_url="ftp://example")
    with pytest.raises(InvalidArgumentError, match="top_n"):
        JinaReranker(top_n=0)
    with pytest.raises(InvalidArgumentError, match="model"):
        VoyageReranker(model=" ")


async def test_the_environment_key_goes_only_to_the_providers_own_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "voyage-env-key-4242")
    assert VoyageReranker()._api_key == "voyage-env-key-4242"  # api.voyageai.com: read
    assert "voyage-env-key-4242" not in repr(VoyageReranker())
    with ScriptedServer() as server:
        server.fallback("/v1/rerank", voyage_rerank_handler())
        async with VoyageReranker(base_url=server.url, retry=FAST) as reranker:
            results = await reranker.rerank("cat", DOCS)
        assert results[0].index in (0, 2)
        assert server.requests[0].header("authorization") is None  # another host: never sent
        async with VoyageReranker(base_url=server.url, api_key="given-key", retry=FAST) as reranker:
            await reranker.rerank("cat", DOCS)
        assert server.requests[1].header("authorization") == "Bearer given-key"


async def test_a_retriever_with_an_http_reranker_and_one_that_fails() -> None:
    from datetime import UTC, datetime

    from cogitator_memory import InMemoryAdapter, unwrap

    async with InMemoryAdapter() as memory, contextlib.AsyncExitStack() as stack:
        thread = unwrap(await memory.create_thread("agent"))
        texts = ["garden tomatoes", "tomatoes in the garden need water and sun", "garden chairs", "tomato soup"]
        turns = [
            unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": t}}))
            for t in texts
        ]
        with ScriptedServer() as server:
            server.fallback("/v2/rerank", cohere_rerank_handler())
            reranker = CohereReranker(base_url=server.url, retry=FAST)
            await stack.enter_async_context(reranker)
            at = datetime(2026, 1, 1, tzinfo=UTC)
            found = await MemoryRetriever(reranker=reranker).retrieve(
                "do the tomatoes in the garden need water?", anchor=at, history=turns
            )
            assert found.hits[0].id == turns[1].id and found.hits[0].relevance is not None
            assert found.errors == [] and len(server.requests) == 1
            server.enqueue("/v2/rerank", status=400, json={"message": "bad model"})
            failed = await MemoryRetriever(reranker=reranker).retrieve(
                "do the tomatoes in the garden need water?", anchor=at, history=turns
            )
            plain = await MemoryRetriever().retrieve(
                "do the tomatoes in the garden need water?", anchor=at, history=turns
            )
            assert [h.id for h in failed.hits] == [h.id for h in plain.hits]
            assert len(failed.errors) == 1 and isinstance(failed.errors[0], RerankerError)
            assert "bad model" in str(failed.errors[0])
