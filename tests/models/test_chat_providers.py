"""What each provider does its own way: request shapes checked against the official SDKs, answer
details (refusals, thinking, tool calls, blocked prompts), presets, and the client factory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.http import RetryPolicy
from cogitator_memory.models import (
    ANTHROPIC_VERSION,
    CHAT_PROVIDERS,
    AnthropicChatClient,
    GeminiChatClient,
    ModelServiceError,
    OpenAIChatClient,
    create_chat_client,
    to_gemini_request,
)
from cogitator_memory.testing.scripted_server import (
    ScriptedServer,
    anthropic_messages_handler,
    gemini_generate_handler,
    openai_chat_handler,
)
from cogitator_memory.threads.records import Message

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


TOOL_CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Lisbon?", "cache_breakpoint": True},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [{"id": "call_1", "name": "weather", "arguments": {"city": "Lisbon"}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "22C, sunny"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this picture?"},
            {"type": "image_base64", "image_base64": {"data": "aGVsbG8=", "media_type": "image/png"}},
        ],
    },
]


async def test_openai_request_matches_the_openai_sdk(server: ScriptedServer) -> None:
    openai = pytest.importorskip("openai")
    from cogitator_memory.context import to_openai_messages

    server.fallback("/v1/chat/completions", openai_chat_handler("It is sunny.", api_key=KEY))
    sdk = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    try:
        answer = await sdk.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "system", "content": "Be brief."}, *to_openai_messages(TOOL_CONVERSATION)],
            max_completion_tokens=64,
            temperature=0.5,
            stop=["END"],
        )
    finally:
        await sdk.close()
    assert answer.choices[0].message.content == "It is sunny." and answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.completion_tokens > 0
    async with OpenAIChatClient(
        model="gpt-test", provider="openai", base_url=server.url + "/v1", api_key=KEY
    ) as client:
        ours = await client.complete(
            TOOL_CONVERSATION, system="Be brief.", max_tokens=64, temperature=0.5, stop=["END"]
        )
    assert ours.text == "It is sunny." and ours.usage is not None
    assert ours.usage.output_tokens == answer.usage.completion_tokens
    theirs_sent, ours_sent = server.requests
    assert ours_sent.json() == theirs_sent.json()
    assert ours_sent.header("authorization") == theirs_sent.header("authorization")
    assert ours_sent.path == theirs_sent.path


async def test_anthropic_request_matches_the_anthropic_sdk(server: ScriptedServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    from cogitator_memory.context import to_anthropic_request

    server.fallback("/v1/messages", anthropic_messages_handler("It is sunny.", api_key=KEY))
    request = to_anthropic_request(TOOL_CONVERSATION)
    assert "system" not in request
    sdk = anthropic.AsyncAnthropic(base_url=server.url, api_key=KEY, max_retries=0)
    try:
        answer = await sdk.messages.create(
            model="claude-test",
            max_tokens=64,
            system=[{"type": "text", "text": "Be brief."}],
            messages=request["messages"],
            stop_sequences=["END"],
        )
    finally:
        await sdk.close()
    assert answer.content[0].type == "text" and answer.content[0].text == "It is sunny."
    assert answer.stop_reason == "end_turn"
    async with AnthropicChatClient(model="claude-test", base_url=server.url, api_key=KEY) as client:
        ours = await client.complete(TOOL_CONVERSATION, system="Be brief.", max_tokens=64, stop=["END"])
    assert ours.text == "It is sunny." and ours.usage is not None
    assert ours.usage.output_tokens == answer.usage.output_tokens
    theirs_sent, ours_sent = server.requests
    assert ours_sent.json() == theirs_sent.json()
    assert ours_sent.header("content-type") == theirs_sent.header("content-type") == "application/json"
    # The SDK sends the key as a bearer token and its own newest API version; x-api-key and
    # 2023-06-01 are what every Anthropic model and gateway accepts.
    assert theirs_sent.header("authorization") == f"Bearer {KEY}" and ours_sent.header("x-api-key") == KEY
    assert ours_sent.header("anthropic-version") == ANTHROPIC_VERSION
    assert theirs_sent.header("anthropic-version") and ours_sent.header("authorization") is None
    body = ours_sent.json()
    assert body["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][-1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "weather",
        "input": {"city": "Lisbon"},
    }
    assert body["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": "22C, sunny",
    }


def test_gemini_request_shape() -> None:
    request = to_gemini_request(
        [{"role": "system", "content": "Dates are ISO."}, *TOOL_CONVERSATION, {"role": "user", "content": "  "}]
    )
    assert request["systemInstruction"] == {"parts": [{"text": "Dates are ISO."}]}
    assert request["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Lisbon?"}]},
        {
            "role": "model",
            "parts": [{"text": "Let me look."}, {"functionCall": {"name": "weather", "args": {"city": "Lisbon"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"content": "22C, sunny"}}},
                {"text": "And this picture?"},
                {"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}},
            ],
        },
    ]
    urls = to_gemini_request(
        [
            Message(
                role="user",
                content=[
                    {"type": "image_url", "image_url": {"url": "data:image/webp;base64,AAAA"}},
                    {"type": "image_url", "image_url": {"url": "https://x.example/cat.png?size=2"}},
                ],
            )
        ]
    )
    assert urls == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"inlineData": {"mimeType": "image/webp", "data": "AAAA"}},
                    {"fileData": {"fileUri": "https://x.example/cat.png?size=2", "mimeType": "image/png"}},
                ],
            }
        ]
    }
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]"):
        to_gemini_request([{"role": "user", "content": 5}])


async def test_a_conversation_of_blank_messages_is_refused_before_sending(server: ScriptedServer) -> None:
    blank = [{"role": "user", "content": "   "}]
    for client in (
        AnthropicChatClient(model="m", base_url=server.url, api_key=KEY),
        GeminiChatClient(model="m", base_url=server.url, api_key=KEY),
    ):
        async with client:
            with pytest.raises(InvalidArgumentError, match="'messages'"):
                await client.complete(blank)
    assert server.requests == []


async def test_openai_answer_details(server: ScriptedServer) -> None:
    path = "/v1/chat/completions"

    def choice(message: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {"model": "served-model", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    server.enqueue(path, json=choice({"role": "assistant", "content": None, "refusal": "I can't help."}, "stop"))
    server.enqueue(
        path,
        json=choice(
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}, "tool_calls"
        ),
    )
    server.enqueue(
        path,
        json=choice(
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, None
        ),
    )
    server.enqueue(path, json={"error": {"message": "upstream provider timed out", "code": 502}})
    server.enqueue(path, json={"choices": []})
    async with OpenAIChatClient(model="m", base_url=server.url + "/v1", api_key=KEY) as client:
        refused = await client.complete([{"role": "user", "content": "x"}])
        assert (refused.text, refused.finish_reason, refused.model) == ("", "content_filter", "served-model")
        tools = await client.complete([{"role": "user", "content": "x"}])
        assert (tools.text, tools.finish_reason, tools.raw_finish_reason) == ("", "tool_calls", "tool_calls")
        parts = await client.complete([{"role": "user", "content": "x"}])
        assert (parts.text, parts.finish_reason, parts.raw_finish_reason) == ("ab", "other", None)
        with pytest.raises(ModelServiceError, match="upstream provider timed out") as info:
            await client.complete([{"role": "user", "content": "x"}])
        assert info.value.status == 200
        with pytest.raises(ModelServiceError, match="no 'choices' list"):
            await client.complete([{"role": "user", "content": "x"}])


async def test_anthropic_answer_details(server: ScriptedServer) -> None:
    server.enqueue(
        "/v1/messages",
        json={
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "let me think", "signature": "sig"},
                {"type": "text", "text": "First. "},
                {"type": "tool_use", "id": "t", "name": "calc", "input": {}},
                {"type": "text", "text": "Second."},
            ],
            "stop_reason": "tool_use",
            "usage": {
                "input_tokens": 10,
                "output_tokens": 7,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 1000,
            },
        },
    )
    server.enqueue(
        "/v1/messages",
        json={"type": "message", "content": [], "stop_reason": "refusal", "usage": {"input_tokens": 3}},
    )
    async with AnthropicChatClient(model="m", base_url=server.url, api_key=KEY) as client:
        answer = await client.complete([{"role": "user", "content": "x"}])
        assert (answer.text, answer.finish_reason, answer.model) == ("First. Second.", "tool_calls", "claude-x")
        assert answer.usage is not None
        assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.total_tokens) == (1110, 7, 1117)
        refused = await client.complete([{"role": "user", "content": "x"}])
        assert (refused.text, refused.finish_reason, refused.raw_finish_reason) == ("", "content_filter", "refusal")
        assert refused.usage is not None and refused.usage.output_tokens is None and refused.usage.total_tokens is None


async def test_gemini_answer_details(server: ScriptedServer) -> None:
    path = "/v1beta/models/gemini-x:generateContent"
    server.enqueue(
        path,
        json={
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"text": "thinking...", "thought": True}, {"text": "Answer."}],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 2,
                "thoughtsTokenCount": 30,
                "totalTokenCount": 37,
            },
            "modelVersion": "gemini-x-001",
        },
    )
    server.enqueue(path, json={"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}})
    server.enqueue(path, json={"candidates": [{"finishReason": "MAX_TOKENS", "index": 0}]})
    server.enqueue(
        path,
        json={
            "candidates": [
                {"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}, "finishReason": "STOP"}
            ]
        },
    )
    server.enqueue(path, json={"candidates": [{"content": {"parts": [{"text": "so"}]}, "finishReason": "RECITATION"}]})
    server.enqueue(path, json={"candidates": [{"index": 0}]})
    async with GeminiChatClient(model="models/gemini-x", base_url=server.url + "/v1beta", api_key=KEY) as client:
        answer = await client.complete([{"role": "user", "content": "x"}])
        assert (answer.text, answer.finish_reason, answer.model) == ("Answer.", "stop", "gemini-x-001")
        assert answer.usage is not None and (answer.usage.output_tokens, answer.usage.total_tokens) == (32, 37)
        blocked = await client.complete([{"role": "user", "content": "x"}])
        assert (blocked.text, blocked.finish_reason, blocked.raw_finish_reason) == ("", "content_filter", "SAFETY")
        thought_out = await client.complete([{"role": "user", "content": "x"}])
        assert (thought_out.text, thought_out.truncated) == ("", True)
        call = await client.complete([{"role": "user", "content": "x"}])
        assert call.finish_reason == "tool_calls"
        recited = await client.complete([{"role": "user", "content": "x"}])
        assert (recited.text, recited.finish_reason) == ("so", "content_filter")
        with pytest.raises(ModelServiceError, match="neither 'content' nor 'finishReason'"):
            await client.complete([{"role": "user", "content": "x"}])
    assert {r.path for r in server.requests} == {path}


async def test_gemini_handler_cuts_at_max_output_tokens(server: ScriptedServer) -> None:
    path = "/v1beta/models/g:generateContent"
    server.fallback(path, gemini_generate_handler(" ".join(f"word{i}" for i in range(200)), api_key=KEY))
    async with GeminiChatClient(model="g", base_url=server.url + "/v1beta", api_key=KEY, max_tokens=20) as client:
        answer = await client.complete([{"role": "user", "content": "talk"}])
    assert answer.truncated and answer.raw_finish_reason == "MAX_TOKENS" and answer.text.startswith("word0 word1")
    assert answer.usage is not None and answer.usage.output_tokens is not None and answer.usage.output_tokens <= 20


def test_presets_and_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-openai")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-from-env-router")
    cases = {
        "openai": ("https://api.openai.com/v1", "max_completion_tokens"),
        "openrouter": ("https://openrouter.ai/api/v1", "max_tokens"),
        "ollama": ("http://localhost:11434/v1", "max_tokens"),
        "vllm": ("http://localhost:8000/v1", "max_tokens"),
        "llamacpp": ("http://localhost:8080/v1", "max_tokens"),
        "lmstudio": ("http://localhost:1234/v1", "max_tokens"),
    }
    for name, (url, field) in cases.items():
        client = OpenAIChatClient(model="m", provider=name)
        assert (client.provider, client.base_url, client.max_tokens_field) == (name, url, field)
    assert OpenAIChatClient(model="m")._api_key == "sk-from-env-openai"
    assert OpenAIChatClient(model="m", provider="openrouter")._api_key == "sk-from-env-router"
    # A key from the environment never goes to another server.
    for url, name in [
        ("http://localhost:11434/v1", "ollama"),
        ("http://127.0.0.1:1234/v1", "lmstudio"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("https://gpu-box.internal:8000/v1/", "compatible"),
        ("https://api.openai.com/v1", "openai"),
    ]:
        client = OpenAIChatClient(model="m", base_url=url)
        assert client.provider == name and client.base_url == url.rstrip("/")
        assert client._api_key == {"openai": "sk-from-env-openai", "openrouter": "sk-from-env-router"}.get(name)
    with pytest.raises(InvalidArgumentError, match="'base_url'"):
        OpenAIChatClient(model="m", provider="compatible")
    with pytest.raises(InvalidArgumentError, match="'provider'"):
        OpenAIChatClient(model="m", provider="anthropic")
    with pytest.raises(InvalidArgumentError, match="'max_tokens_field'"):
        OpenAIChatClient(model="m", provider="ollama", max_tokens_field="n_predict")


async def test_local_servers_send_no_authorization_and_their_length_field(server: ScriptedServer) -> None:
    server.fallback("/v1/chat/completions", openai_chat_handler("ok"))
    async with create_chat_client("vllm", model="qwen", base_url=server.url + "/v1") as client:
        assert (await client.complete([{"role": "user", "content": "hi"}], max_tokens=9)).text == "ok"
    sent = server.requests[0]
    assert sent.header("authorization") is None and sent.json()["max_tokens"] == 9
    assert "max_completion_tokens" not in sent.json()


async def test_extra_headers_and_organization_are_sent(server: ScriptedServer) -> None:
    server.fallback("/api/v1/chat/completions", openai_chat_handler("ok"))
    client = OpenAIChatClient(
        model="m",
        provider="openrouter",
        base_url=server.url + "/api/v1",
        api_key=KEY,
        organization="org-1",
        headers={"HTTP-Referer": "https://example.org", "X-Title": "tests"},
    )
    async with client:
        await client.complete([{"role": "user", "content": "hi"}])
    sent = server.requests[0]
    assert sent.header("http-referer") == "https://example.org" and sent.header("x-title") == "tests"
    assert sent.header("openai-organization") == "org-1" and sent.header("authorization") == f"Bearer {KEY}"


def test_factory_builds_every_provider_and_refuses_unknown_settings() -> None:
    assert set(CHAT_PROVIDERS) >= {
        "openai",
        "ollama",
        "vllm",
        "llamacpp",
        "lmstudio",
        "openrouter",
        "anthropic",
        "google",
    }
    client = create_chat_client("anthropic", model="claude-x", api_key=KEY, max_retries=5, backoff_max=2.0, timeout=9)
    assert isinstance(client, AnthropicChatClient) and client.timeout == 9.0
    assert (client.retry.max_retries, client.retry.backoff_max) == (5, 2.0)
    gemini = create_chat_client({"provider": "gemini", "model": "gemini-x", "api_key": KEY})
    assert isinstance(gemini, GeminiChatClient) and gemini.provider == "google"
    ollama = create_chat_client({"provider": "ollama"}, model="llama3.2")
    assert isinstance(ollama, OpenAIChatClient) and ollama.provider == "ollama"
    assert ollama.retry == RetryPolicy()
    with pytest.raises(InvalidArgumentError, match="'provider'"):
        create_chat_client("cohere", model="x")
    with pytest.raises(InvalidArgumentError, match="'organization'"):
        create_chat_client("anthropic", model="x", organization="o")
    with pytest.raises(InvalidArgumentError, match="'model'"):
        create_chat_client("ollama")
    with pytest.raises(InvalidArgumentError, match="'max_retries'"):
        create_chat_client("ollama", model="x", max_retries=-1)
    with pytest.raises(InvalidArgumentError, match="'provider'"):
        create_chat_client(42)
