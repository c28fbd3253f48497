"""The shared HTTP plumbing of the provider clients: Retry-After, redaction, the retry policy."""

from __future__ import annotations

import base64
import logging
import time
from email.utils import formatdate

import httpx
import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.http import (
    JsonHttpClient,
    RetryPolicy,
    error_text,
    header_secrets,
    parse_retry_after,
    redact,
    redact_url,
    url_secrets,
)
from cogitator_memory.testing.scripted_server import ScriptedServer


def test_parse_retry_after() -> None:
    now = time.time()
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("") is None
    assert parse_retry_after("soon") is None and parse_retry_after("nan") is None and parse_retry_after("inf") is None
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_redact_url_and_secrets() -> None:
    assert redact_url("https://user:secret@gateway.example:8443/v1?key=abc#frag") == "https://gateway.example:8443/v1"
    assert redact_url("http://[::1]:11434/v1") == "http://[::1]:11434/v1"
    assert redact_url("http://host:notaport/") == "http://host:notaport/"  # unreadable: left to redact()
    assert url_secrets("https://bob:hunter22@x/v1?alt=json&key=AIzaSecretValue") == [
        "hunter22",
        base64.b64encode(b"bob:hunter22").decode(),
        "AIzaSecretValue",
    ]
    assert url_secrets("https://x/v1?alt=json") == []
    assert header_secrets({"Authorization": "Bearer sk-abcdef", "x-goog-api-key": "AIza123", "accept": "json"}) == [
        "Bearer sk-abcdef",
        "sk-abcdef",
        "AIza123",
    ]
    text = "key sk-abcdef failed at https://u:p@h.example/x?token=t0ken&alt=json, see ?api_key=zzz"
    assert redact(text, ["sk-abcdef", "ab"]) == (
        "key *** failed at https://***@h.example/x?token=***&alt=json, see ?api_key=***"
    )


def test_error_text_redacts_before_it_shortens() -> None:
    secret = "sk-" + "s" * 40
    response = httpx.Response(401, json={"error": {"message": "x" * 280 + secret}})
    shown = error_text(response, [secret])
    assert shown == "x" * 280 + "***" and "sss" not in shown
    assert error_text(httpx.Response(502, text="")) == "Bad Gateway"
    assert error_text(httpx.Response(400, json={"error": "model 'x' not found"})) == "model 'x' not found"
    assert error_text(httpx.Response(400, json={"message": "bad field"})) == "bad field"
    assert error_text(httpx.Response(400, json=[1, 2])) == "[1, 2]"


def test_retry_policy_is_checked() -> None:
    for field, bad in [("max_retries", -1), ("max_retries", 1.5), ("backoff_base", -1), ("jitter", "x")]:
        with pytest.raises(InvalidArgumentError, match=f"'{field}'"):
            RetryPolicy(**{field: bad})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="'timeout'"):
        JsonHttpClient(error=lambda *a: RuntimeError(), timeout=float("inf"))


async def test_the_error_factory_makes_every_failure_and_a_passed_client_stays_open() -> None:
    made: list[tuple[int | None, str, bool, int]] = []

    def error(status: int | None, detail: str, retryable: bool, attempts: int) -> Exception:
        made.append((status, detail, retryable, attempts))
        return LookupError(detail)

    with ScriptedServer() as server:
        server.enqueue("/x", status=404, json={"error": {"message": "no such model"}})
        server.enqueue("/x", json={"ok": True})
        async with httpx.AsyncClient() as shared:
            client = JsonHttpClient(error=error, http_client=shared, retry=RetryPolicy(max_retries=0))
            with pytest.raises(LookupError, match="no such model"):
                await client.post_json(server.url + "/x", {"a": 1}, {"x-api-key": "k-123456"})
            await client.aclose()
            assert not shared.is_closed
            assert await client.post_json(server.url + "/x", {"a": 2}, {}) == (200, {"ok": True})
            assert client._client is shared  # still the shared one, no client of its own was made
    assert made == [(404, "no such model", False, 1)]
    assert [r.json() for r in server.requests] == [{"a": 1}, {"a": 2}]


def test_the_service_errors_share_one_base_and_keep_their_messages() -> None:
    from cogitator_memory.embeddings import EmbeddingServiceError
    from cogitator_memory.errors import MemoryStoreError
    from cogitator_memory.http import ProviderServiceError
    from cogitator_memory.models import ModelServiceError

    chat = ModelServiceError("openai", 503, "overloaded", retryable=True, attempts=3)
    embed = EmbeddingServiceError("ollama", None, "connection refused")
    assert str(chat) == "openai chat failed (HTTP 503): overloaded"
    assert str(embed) == "ollama embeddings failed (no HTTP status): connection refused"
    assert (chat.provider, chat.status, chat.detail, chat.retryable, chat.attempts) == (
        "openai",
        503,
        "overloaded",
        True,
        3,
    )
    assert (embed.status, embed.retryable, embed.attempts) == (None, False, 1)
    for error in (chat, embed):
        assert isinstance(error, ProviderServiceError) and isinstance(error, MemoryStoreError)
    assert not isinstance(chat, EmbeddingServiceError) and not isinstance(embed, ModelServiceError)


async def test_httpx_info_log_shows_no_credentials_of_model_and_embedding_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """httpx logs each request's full URL at INFO; the filter the clients put on its logger masks
    the user info of ``base_url`` and credential query values in those lines."""
    from cogitator_memory.embeddings import OpenAIEmbeddingService
    from cogitator_memory.models.openai import OpenAIChatClient

    secrets = ["hunter2-password", "sk-query-123456", "gk-key-98765", "tok-abcdef12"]
    with ScriptedServer() as server:
        server.enqueue("/v1/embeddings", json={"data": [{"index": 0, "embedding": [0.1, 0.2]}]})
        server.enqueue(
            "/v1/chat/completions",
            json={
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
            },
        )
        server.enqueue("/x", json={"ok": True})
        base = server.url.replace("http://", "http://alice:hunter2-password@") + "/v1"
        caplog.set_level(logging.INFO, logger="httpx")
        async with OpenAIEmbeddingService(base_url=base, api_key="sk-test", model="m", dimensions=2) as embeddings:
            await embeddings.embed("hello")
        async with OpenAIChatClient(provider="openai", base_url=base, model="m", api_key="sk-test") as chat:
            await chat.complete([{"role": "user", "content": "hello"}])
        client = JsonHttpClient(error=lambda *a: RuntimeError("failed"))
        query = "?api_key=sk-query-123456&key=gk-key-98765&token=tok-abcdef12&page=2"
        await client.post_json(server.url.replace("http://", "http://bob:hunter2-password@") + "/x" + query, {}, {})
        await client.aclose()
    lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert len(lines) == 3, lines  # the log is kept, only masked
    assert all("HTTP Request: POST http://***@127.0.0.1:" in line for line in lines), lines
    assert "api_key=***&key=***&token=***&page=2" in lines[2]
    for record in caplog.records:
        text = record.getMessage() + str(record.__dict__)
        assert not [s for s in secrets if s in text], text


async def test_a_base_url_with_a_query_string_gets_the_path_before_the_query() -> None:
    """A gateway's ``base_url`` may carry a query (``?api-version=...``): every client joins its
    endpoint to the base's path and sends the query as it was given."""
    from cogitator_memory.embeddings import GoogleEmbeddingService, OllamaEmbeddingService, OpenAIEmbeddingService
    from cogitator_memory.http import endpoint
    from cogitator_memory.models.anthropic import AnthropicChatClient
    from cogitator_memory.models.gemini import GeminiChatClient
    from cogitator_memory.models.openai import OpenAIChatClient
    from cogitator_memory.recall.rerank import CohereReranker, JinaReranker, VoyageReranker
    from cogitator_memory.testing.scripted_server import (
        anthropic_messages_handler,
        cohere_rerank_handler,
        gemini_generate_handler,
        google_batch_embed_handler,
        jina_rerank_handler,
        ollama_embed_handler,
        openai_chat_handler,
        openai_embeddings_handler,
        voyage_rerank_handler,
    )

    assert endpoint("https://h.example/v1/?a=1&b=2#frag", "/x") == "https://h.example/v1/x?a=1&b=2"
    assert endpoint("https://h.example", "v1/messages") == "https://h.example/v1/messages"
    message = [{"role": "user", "content": "hello"}]
    with ScriptedServer() as server:
        for path, handler in (
            ("/gw/chat/completions", openai_chat_handler("hi")),
            ("/gw/v1/messages", anthropic_messages_handler("hi")),
            ("/gw/models/m:generateContent", gemini_generate_handler("hi")),
            ("/gw/embeddings", openai_embeddings_handler(2)),
            ("/gw/models/m:batchEmbedContents", google_batch_embed_handler(2)),
            ("/gw/api/embed", ollama_embed_handler(2)),
            ("/gw/v2/rerank", cohere_rerank_handler()),
            ("/gw/v1/rerank", jina_rerank_handler()),
        ):
            server.fallback(path, handler)
        base = f"{server.url}/gw/?api-version=7&tenant=t1"
        async with OpenAIChatClient(provider="compatible", base_url=base, model="m", api_key="k") as chat:
            await chat.complete(message)
        async with AnthropicChatClient(base_url=base, model="m", api_key="k") as anthropic:
            await anthropic.complete(message)
        async with GeminiChatClient(base_url=base, model="m", api_key="k") as gemini:
            await gemini.complete(message)
        for service in (
            OpenAIEmbeddingService(base_url=base, api_key="k", model="m", dimensions=2),
            GoogleEmbeddingService(base_url=base, api_key="k", model="m", dimensions=2),
            OllamaEmbeddingService(base_url=base, model="m", dimensions=2),
        ):
            async with service:
                assert len(await service.embed("hello")) == 2
        for reranker in (CohereReranker(base_url=base, api_key="k"), JinaReranker(base_url=base, api_key="k")):
            async with reranker:
                assert await reranker.rerank("tea", ["green tea", "coffee"])
        server.fallback("/gw/v1/rerank", voyage_rerank_handler())
        async with VoyageReranker(base_url=base, api_key="k") as voyage:
            assert await voyage.rerank("tea", ["green tea", "coffee"])
        sent = server.requests
    assert [r.path for r in sent] == [
        "/gw/chat/completions",
        "/gw/v1/messages",
        "/gw/models/m:generateContent",
        "/gw/embeddings",
        "/gw/models/m:batchEmbedContents",
        "/gw/api/embed",
        "/gw/v2/rerank",
        "/gw/v1/rerank",
        "/gw/v1/rerank",
    ]
    assert all(r.query.startswith("api-version=7&tenant=t1") for r in sent), [r.query for r in sent]
