"""The OpenAI-compatible, Anthropic and Gemini chat clients over real HTTP against a scripted server.

Every test runs for the three providers with their real request and answer shapes: what is sent
(path, headers, body), what is read back (text, finish reason, usage), and every failure the
plumbing handles (429 with Retry-After, 5xx, timeouts, refused and dropped connections, malformed
answers, cut answers), with no credential in any message.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.http import RetryPolicy
from cogitator_memory.models import (
    AnthropicChatClient,
    BaseChatClient,
    ChatCompletion,
    GeminiChatClient,
    ModelServiceError,
    OpenAIChatClient,
)
from cogitator_memory.testing.scripted_server import (
    ChatAnswer,
    Handler,
    RecordedRequest,
    ScriptedChatRequest,
    ScriptedResponse,
    ScriptedServer,
    anthropic_messages_handler,
    gemini_generate_handler,
    openai_chat_handler,
)

KEY = "sk-test-0123456789abcdef"
MODEL = "test-model"


@dataclass
class Provider:
    """How to reach one provider on the scripted server and how its answers look."""

    name: str
    path: str
    handler: Callable[[ChatAnswer | str, str | None], Handler]
    make: Callable[..., BaseChatClient]
    cut_reason: str
    answer: Callable[[str, str], Any]  # (text, raw finish reason) -> a good answer body
    wrong_shape: Any  # a 200 body missing the expected fields


def _openai(url: str, **kw: Any) -> BaseChatClient:
    kw.setdefault("api_key", KEY)
    return OpenAIChatClient(provider="openai", base_url=url + "/v1", model=MODEL, **kw)


def _anthropic(url: str, **kw: Any) -> BaseChatClient:
    kw.setdefault("api_key", KEY)
    return AnthropicChatClient(base_url=url, model=MODEL, **kw)


def _gemini(url: str, **kw: Any) -> BaseChatClient:
    kw.setdefault("api_key", KEY)
    return GeminiChatClient(base_url=url + "/v1beta", model=MODEL, **kw)


PROVIDERS = [
    Provider(
        "openai",
        "/v1/chat/completions",
        lambda answer, key: openai_chat_handler(answer, api_key=key),
        _openai,
        "length",
        lambda text, why: {
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": why}],
        },
        {"id": "x", "object": "chat.completion", "model": MODEL},
    ),
    Provider(
        "anthropic",
        "/v1/messages",
        lambda answer, key: anthropic_messages_handler(answer, api_key=key),
        _anthropic,
        "max_tokens",
        lambda text, why: {
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": why,
        },
        {"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "end_turn"},
    ),
    Provider(
        "google",
        f"/v1beta/models/{MODEL}:generateContent",
        lambda answer, key: gemini_generate_handler(answer, api_key=key),
        _gemini,
        "MAX_TOKENS",
        lambda text, why: {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": why}]
        },
        {"usageMetadata": {"promptTokenCount": 3}},
    ),
]
STOP = {"openai": "stop", "anthropic": "end_turn", "google": "STOP"}


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
async def make_client(server: ScriptedServer, provider: Provider) -> AsyncIterator[Callable[..., BaseChatClient]]:
    made: list[BaseChatClient] = []

    def make(**kw: Any) -> BaseChatClient:
        client = provider.make(server.url, **kw)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Dates are ISO."},
    {"role": "user", "content": "I moved to Lisbon in May."},
    {"role": "assistant", "content": "Noted: Lisbon since May."},
    {"role": "user", "content": "What did I say?"},
]


def echo(chat: ScriptedChatRequest) -> str:
    return f"You said: {chat.last_user_text}"


async def test_success_sends_the_provider_shape_and_reads_the_answer(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    seen: list[ScriptedChatRequest] = []

    def answer(chat: ScriptedChatRequest) -> str:
        seen.append(chat)
        return echo(chat)

    server.fallback(provider.path, provider.handler(answer, KEY))
    client = make_client()
    completion = await client.complete(CONVERSATION, system="Be brief.", max_tokens=300)
    assert isinstance(completion, ChatCompletion)
    assert completion.text == "You said: What did I say?"
    assert (completion.finish_reason, completion.raw_finish_reason) == ("stop", STOP[provider.name])
    assert not completion.truncated and completion.provider == provider.name
    assert completion.usage is not None and completion.usage.output_tokens == 8
    assert completion.usage.input_tokens and completion.usage.total_tokens == (
        completion.usage.input_tokens + completion.usage.output_tokens
    )
    (chat,) = seen
    assert chat.system == "Be brief.\n\nDates are ISO."
    assert chat.messages == [
        ("user", "I moved to Lisbon in May."),
        ("assistant", "Noted: Lisbon since May."),
        ("user", "What did I say?"),
    ]
    assert chat.max_tokens == 300 and chat.model == MODEL
    (sent,) = server.requests_to(provider.path)
    body = sent.json()
    assert sent.method == "POST" and sent.header("content-type") == "application/json"
    if provider.name == "openai":
        assert sent.header("authorization") == f"Bearer {KEY}"
        assert body["model"] == MODEL and body["max_completion_tokens"] == 300 and "max_tokens" not in body
        assert body["messages"][:2] == [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Dates are ISO."},
        ]
        assert "temperature" not in body and "stop" not in body
    elif provider.name == "anthropic":
        assert sent.header("x-api-key") == KEY and sent.header("anthropic-version") == "2023-06-01"
        assert sent.header("authorization") is None
        assert body["system"] == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Dates are ISO."}]
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["messages"][0]["content"] == [{"type": "text", "text": "I moved to Lisbon in May."}]
        assert body["max_tokens"] == 300 and body["model"] == MODEL and "temperature" not in body
    else:
        assert sent.header("x-goog-api-key") == KEY and KEY not in sent.query and sent.query == ""
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}, {"text": "Dates are ISO."}]}
        assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
        assert body["contents"][1]["parts"] == [{"text": "Noted: Lisbon since May."}]
        assert body["generationConfig"] == {"maxOutputTokens": 300}


async def test_temperature_stop_and_model_go_in_the_provider_fields(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.fallback(provider.path.replace(MODEL, "other-model"), provider.handler("one. END two", KEY))
    server.fallback(provider.path, provider.handler("one. END two", KEY))
    client = make_client(temperature=0.2)
    completion = await client.complete([{"role": "user", "content": "count"}], stop=["END"], model="other-model")
    assert completion.text == "one. " and completion.finish_reason == "stop"
    body = server.requests[-1].json()
    if provider.name == "openai":
        assert (body["temperature"], body["stop"], body["model"]) == (0.2, ["END"], "other-model")
    elif provider.name == "anthropic":
        assert (body["temperature"], body["stop_sequences"], body["model"]) == (0.2, ["END"], "other-model")
        assert completion.raw_finish_reason == "stop_sequence"
    else:
        assert body["generationConfig"] == {"maxOutputTokens": 4096, "temperature": 0.2, "stopSequences": ["END"]}
        assert server.requests[-1].path == "/v1beta/models/other-model:generateContent"


async def test_an_answer_cut_at_its_length_limit_is_reported(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    long_answer = '[{"fact": "one"}, {"fact": "two"}, {"fact": "three"}, {"fact": "four"}]'
    server.fallback(provider.path, provider.handler(long_answer, KEY))
    client = make_client(max_tokens=12)
    completion = await client.complete([{"role": "user", "content": "list the facts"}])
    assert completion.truncated and completion.finish_reason == "length"
    assert completion.raw_finish_reason == provider.cut_reason
    assert long_answer.startswith(completion.text) and len(completion.text) < len(long_answer)
    whole = await client.complete([{"role": "user", "content": "list the facts"}], max_tokens=100)
    assert whole.text == long_answer and not whole.truncated


async def test_429_with_retry_after_seconds_is_waited_then_succeeds(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
    server.fallback(provider.path, provider.handler(echo, KEY))
    retries = Retries()
    client = make_client(retry=retries.policy)
    started = time.monotonic()
    completion = await client.complete([{"role": "user", "content": "hi"}])
    assert completion.text == "You said: hi"
    assert time.monotonic() - started >= 0.95
    assert len(server.requests_to(provider.path)) == 2
    ((attempt, delay, reason),) = retries.calls
    assert (attempt, delay) == (1, 1.0) and "429" in reason and "slow down" in reason


async def test_429_with_retry_after_http_date(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, status=429, headers={"Retry-After": formatdate(time.time() + 2, usegmt=True)})
    server.fallback(provider.path, provider.handler(echo, KEY))
    retries = Retries()
    client = make_client(retry=retries.policy)
    assert (await client.complete([{"role": "user", "content": "hi"}])).text == "You said: hi"
    assert len(retries.calls) == 1 and 0.0 < retries.calls[0][1] <= 2.0


async def test_5xx_then_success_backs_off_exponentially(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, status=500, body="internal error")
    server.enqueue(
        provider.path,
        status=529,
        json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    server.fallback(provider.path, provider.handler(echo, KEY))
    retries = Retries()
    client = make_client(retry=retries.policy)
    assert (await client.complete([{"role": "user", "content": "hi"}])).text == "You said: hi"
    assert len(server.requests_to(provider.path)) == 3
    assert [c[1] for c in retries.calls] == [0.01, 0.02]
    assert "Overloaded" in retries.calls[1][2] and "529" in retries.calls[1][2]


async def test_backoff_is_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=3.0, jitter=0)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 3.0, 3.0, 3.0]
    jittered = RetryPolicy(backoff_base=1.0, backoff_max=3.0, jitter=0.5)
    assert all(3.0 <= jittered.backoff(9) <= 4.5 for _ in range(50))


async def test_exhausted_retries_raise_with_provider_and_status(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    for _ in range(3):
        server.enqueue(provider.path, status=503, json={"error": {"message": "overloaded"}})
    server.fallback(provider.path, provider.handler(echo, KEY))
    client = make_client(retry=Retries(max_retries=2).policy)
    with pytest.raises(ModelServiceError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    error = info.value
    assert (error.provider, error.status, error.attempts, error.retryable) == (provider.name, 503, 3, True)
    assert str(error).startswith(f"{provider.name} chat failed (HTTP 503): overloaded (gave up after 3 attempts)")
    assert isinstance(error, MemoryStoreError)
    assert len(server.requests_to(provider.path)) == 3


async def test_4xx_is_not_retried_and_names_the_status(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.fallback(provider.path, provider.handler(echo, KEY))
    retries = Retries()
    client = make_client(api_key="wrong-key-value", retry=retries.policy)
    with pytest.raises(ModelServiceError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    status = 400 if provider.name == "google" else 401
    assert info.value.status == status and not info.value.retryable and info.value.attempts == 1
    assert f"HTTP {status}" in str(info.value) and provider.name in str(info.value)
    assert "wrong-key-value" not in str(info.value)
    assert len(server.requests_to(provider.path)) == 1 and retries.calls == []


@pytest.mark.parametrize("kind", ["not-json", "wrong-shape", "json-list", "text-not-string"])
async def test_malformed_answers_fail_clearly_without_retry(
    kind: str, server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    if kind == "not-json":
        server.enqueue(provider.path, body="<html>gateway</html>")
    elif kind == "wrong-shape":
        server.enqueue(provider.path, json=provider.wrong_shape)
    elif kind == "json-list":
        server.enqueue(provider.path, json=[provider.answer("hi", STOP[provider.name])])
    else:
        body = provider.answer("hi", STOP[provider.name])
        if provider.name == "openai":
            body["choices"][0]["message"]["content"] = 42
        elif provider.name == "anthropic":
            body["content"][0]["text"] = None
        else:
            body["candidates"][0]["content"]["parts"] = "hi"
        server.enqueue(provider.path, json=body)
    retries = Retries()
    client = make_client(retry=retries.policy)
    with pytest.raises(ModelServiceError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert info.value.provider == provider.name and info.value.status == 200 and not info.value.retryable
    assert message.startswith(f"{provider.name} chat failed (HTTP 200): malformed answer")
    assert len(server.requests_to(provider.path)) == 1 and retries.calls == []


async def test_a_good_answer_written_by_hand_is_read(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, json=provider.answer("cut her", provider.cut_reason))
    server.enqueue(provider.path, json=provider.answer("done", "SOMETHING_NEW"))
    client = make_client()
    cut = await client.complete([{"role": "user", "content": "hi"}])
    assert (cut.text, cut.finish_reason, cut.truncated, cut.usage) == ("cut her", "length", True, None)
    odd = await client.complete([{"role": "user", "content": "hi"}])
    assert (odd.finish_reason, odd.raw_finish_reason) == ("other", "SOMETHING_NEW")


async def test_timeout_is_retried_then_reported(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    for _ in range(2):
        server.enqueue(provider.path, json=provider.answer("late", STOP[provider.name]), delay=2.0)
    retries = Retries(max_retries=1)
    client = make_client(retry=retries.policy, timeout=0.2)
    with pytest.raises(ModelServiceError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    assert info.value.status is None and info.value.attempts == 2 and info.value.retryable
    assert "timed out after 0.2s" in str(info.value) and provider.name in str(info.value)
    assert len(retries.calls) == 1


async def test_timeout_then_success(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, json=provider.answer("late", STOP[provider.name]), delay=2.0)
    server.fallback(provider.path, provider.handler(echo, KEY))
    client = make_client(retry=Retries().policy, timeout=0.3)
    assert (await client.complete([{"role": "user", "content": "now"}])).text == "You said: now"


async def test_dropped_connection_is_retried(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, drop=True)
    server.fallback(provider.path, provider.handler(echo, KEY))
    retries = Retries()
    client = make_client(retry=retries.policy)
    assert (await client.complete([{"role": "user", "content": "hi"}])).text == "You said: hi"
    assert len(retries.calls) == 1 and "cannot reach" in retries.calls[0][2]


async def test_connection_refused_reports_no_status(provider: Provider) -> None:
    with ScriptedServer() as closed:
        url = closed.url
    retries = Retries(max_retries=1)
    async with provider.make(url, retry=retries.policy, timeout=2) as client:
        with pytest.raises(ModelServiceError) as info:
            await client.complete([{"role": "user", "content": "hi"}])
    assert info.value.status is None and info.value.attempts == 2 and info.value.retryable
    assert "cannot reach http://127.0.0.1:" in str(info.value) and "ConnectError" in str(info.value)


async def test_retry_after_longer_than_allowed_fails_at_once(
    server: ScriptedServer, provider: Provider, make_client: Callable[..., BaseChatClient]
) -> None:
    server.enqueue(provider.path, status=429, headers={"Retry-After": "3600"}, json={"error": {"message": "quota"}})
    client = make_client(retry=RetryPolicy(max_retries=3, max_retry_after=10))
    with pytest.raises(ModelServiceError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    assert info.value.status == 429 and "3600" in str(info.value) and info.value.attempts == 1
    assert len(server.requests_to(provider.path)) == 1


async def test_no_secret_reaches_a_message_or_a_repr(server: ScriptedServer, provider: Provider) -> None:
    secret = "sk-live-SECRET-9f8e7d6c5b4a"
    basic = base64.b64encode(b"proxyuser:pr0xy-pass").decode()

    def leaky(request: RecordedRequest) -> ScriptedResponse:
        echoed = {k: v for k, v in request.headers.items() if k in ("authorization", "x-api-key", "x-goog-api-key")}
        link = f"https://u:{secret}@relay.example/v1?key={secret}&api_key=other-secret-77"
        return ScriptedResponse(503, {"error": {"message": f"refused {echoed}; see {link}"}})

    server.fallback(provider.path, leaky)
    retries = Retries(max_retries=1)
    base = server.url.replace("http://", "http://proxyuser:pr0xy-pass@")
    async with provider.make(base, api_key=secret, retry=retries.policy) as client:
        with pytest.raises(ModelServiceError) as info:
            await client.complete([{"role": "user", "content": "hi"}])
        shown = [str(info.value), info.value.detail, repr(client), *(reason for _, _, reason in retries.calls)]
    received = str(server.requests_to(provider.path)[0].headers)
    assert secret in received or basic in received  # the server saw credentials and echoed them back
    assert len(shown) == 4 and "refused" in shown[0] and "relay.example" in shown[0]
    for text in shown:
        for credential in (secret, "pr0xy-pass", basic, "other-secret-77"):
            assert credential not in text, (credential, text)
    assert "***" in str(info.value) and "proxyuser" not in repr(client)


async def test_a_missing_key_fails_before_sending(
    server: ScriptedServer, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with provider.make(server.url, api_key=None) as client:
        with pytest.raises(ModelServiceError, match="no API key") as info:
            await client.complete([{"role": "user", "content": "hi"}])
    assert info.value.attempts == 0 and info.value.status is None
    assert server.requests == []


async def test_bad_arguments_name_the_argument(provider: Provider, server: ScriptedServer) -> None:
    async with provider.make(server.url) as client:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"messages": []}, "'messages'"),
            ({"messages": [{"role": "system", "content": "only a prompt"}]}, "'messages'"),
            ({"messages": "hello"}, "'messages'"),
            ({"messages": [{"role": "robot", "content": "x"}]}, r"'messages\[0\]'"),
            ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "'max_tokens'"),
            ({"messages": [{"role": "user", "content": "x"}], "temperature": -1}, "'temperature'"),
            ({"messages": [{"role": "user", "content": "x"}], "stop": "END"}, "'stop'"),
            ({"messages": [{"role": "user", "content": "x"}], "stop": [""]}, r"'stop\[0\]'"),
            ({"messages": [{"role": "user", "content": "x"}], "model": ""}, "'model'"),
            ({"messages": [{"role": "user", "content": "x"}], "system": 3}, "'system'"),
        ]
        for kwargs, argument in cases:
            with pytest.raises(InvalidArgumentError, match=argument):
                await client.complete(**kwargs)
    assert server.requests == []
    settings: list[tuple[dict[str, Any], str]] = [
        ({"timeout": 0}, "'timeout'"),
        ({"max_tokens": -5}, "'max_tokens'"),
        ({"temperature": float("nan")}, "'temperature'"),
        ({"headers": {"x": 1}}, "'headers'"),
        ({"retry": {"max_retries": 1}}, "'retry'"),
    ]
    for kwargs, argument in settings:
        with pytest.raises(InvalidArgumentError, match=argument):
            provider.make(server.url, **kwargs)
    with pytest.raises(InvalidArgumentError, match="'base_url'"):
        OpenAIChatClient(model="m", base_url="localhost:11434")
    with pytest.raises(InvalidArgumentError, match="'model'"):
        AnthropicChatClient(model="  ", api_key="k")


async def test_an_environment_key_is_not_sent_to_a_foreign_host(
    server: ScriptedServer, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in the environment belong to the provider's own API: a client pointed at another
    server (a gateway, a test server) sends only a key it was given."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(name, f"secret-{name}")
    async with provider.make(server.url, api_key=None) as client:
        with pytest.raises(ModelServiceError, match="no API key"):
            await client.complete([{"role": "user", "content": "hi"}])
    assert server.requests == []
