"""``SummarizeFn`` made of each chat client, over HTTP against the scripted server, and its options."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.models import (
    DEFAULT_SUMMARY_PROMPT,
    FOLLOW_UP_MESSAGE,
    AnthropicChatClient,
    BaseChatClient,
    ChatCompletion,
    GeminiChatClient,
    OpenAIChatClient,
    SummarizeFn,
    SummarizeOptions,
    continuation_prompt,
    read_json_array,
    summarize_fn,
)
from cogitator_memory.testing.scripted_server import (
    Handler,
    ScriptedChatRequest,
    ScriptedServer,
    anthropic_messages_handler,
    gemini_generate_handler,
    openai_chat_handler,
)
from cogitator_memory.threads.records import Message

KEY = "key-0123456789"

CLIENTS: dict[str, tuple[str, Callable[[Any], Handler], Callable[[str], BaseChatClient]]] = {
    "openai": (
        "/v1/chat/completions",
        openai_chat_handler,
        lambda url: OpenAIChatClient(provider="ollama", base_url=url + "/v1", model="small", max_tokens=500),
    ),
    "anthropic": (
        "/v1/messages",
        anthropic_messages_handler,
        lambda url: AnthropicChatClient(base_url=url, api_key=KEY, model="small", max_tokens=500),
    ),
    "google": (
        "/v1beta/models/{model}:generateContent",
        gemini_generate_handler,
        lambda url: GeminiChatClient(base_url=url + "/v1beta", api_key=KEY, model="small", max_tokens=500),
    ),
}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture(params=list(CLIENTS))
def name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def serve(server: ScriptedServer, name: str, answer: Any, models: tuple[str, ...] = ("small",)) -> None:
    path, handler, _ = CLIENTS[name]
    for model in models:
        server.fallback(path.format(model=model), handler(answer))


CHAT = [
    Message(role="user", content="Book a table for two at Avenida on Friday."),
    Message(role="assistant", content="Done: Friday 20:00, two people."),
]


async def test_summarize_sends_the_prompt_the_messages_and_a_follow_up(server: ScriptedServer, name: str) -> None:
    seen: list[ScriptedChatRequest] = []

    def answer(chat: ScriptedChatRequest) -> str:
        seen.append(chat)
        return "A table for two at Avenida, Friday 20:00."

    serve(server, name, answer, models=("small", "big"))
    client = CLIENTS[name][2](server.url)
    completions: list[ChatCompletion] = []
    async with client:
        summarize: SummarizeFn = client.as_summarize_fn(on_completion=completions.append)
        text = await summarize(CHAT, SummarizeOptions())
        assert text == "A table for two at Avenida, Friday 20:00."
        await summarize(CHAT, SummarizeOptions(model="big", prompt="Keep names.", max_tokens=77))
        await summarize([*CHAT, Message(role="user", content="Thanks!")], {"prompt": "  "})  # type: ignore[arg-type]
    first, second, third = seen
    assert first.system == DEFAULT_SUMMARY_PROMPT and first.model == "small" and first.max_tokens == 500
    assert first.messages == [
        ("user", "Book a table for two at Avenida on Friday."),
        ("assistant", "Done: Friday 20:00, two people."),
        ("user", FOLLOW_UP_MESSAGE),
    ]
    assert (second.system, second.model, second.max_tokens) == ("Keep names.", "big", 77)
    assert third.system == DEFAULT_SUMMARY_PROMPT  # a blank prompt counts as none
    assert third.messages[-1] == ("user", "Thanks!") and len(third.messages) == 3
    assert [c.finish_reason for c in completions] == ["stop", "stop", "stop"]
    assert all(c.provider == client.provider for c in completions)


async def test_a_cut_answer_is_returned_and_reported(server: ScriptedServer, name: str) -> None:
    facts = [{"fact": f"the guest number {i} likes table {i}"} for i in range(40)]
    serve(server, name, json.dumps(facts))
    cut: list[ChatCompletion] = []

    def note(completion: ChatCompletion) -> None:
        if completion.truncated:
            cut.append(completion)

    async with CLIENTS[name][2](server.url) as client:
        summarize = summarize_fn(client, prompt="List the facts as a JSON array.", on_completion=note)
        text = await summarize(CHAT, SummarizeOptions(max_tokens=60))
    assert len(cut) == 1 and cut[0].text == text
    read = read_json_array(text, objects=True)
    assert read.found and not read.complete and 3 <= len(read.elements) < 40
    assert read.elements == facts[: len(read.elements)]
    prompt = continuation_prompt(read, noun="fact")
    assert f"after fact {len(read.elements)}" in prompt and json.dumps(facts[len(read.elements) - 1]) in prompt


async def test_summarize_checks_its_arguments(server: ScriptedServer) -> None:
    serve(server, "openai", "ok")
    async with CLIENTS["openai"][2](server.url) as client:
        summarize = summarize_fn(client)
        with pytest.raises(InvalidArgumentError, match="'messages'"):
            await summarize([], SummarizeOptions())
        with pytest.raises(InvalidArgumentError, match="'temperature'"):
            await summarize(CHAT, {"temperature": 1})  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="'options'"):
            await summarize(CHAT, "short")  # type: ignore[arg-type]
        assert await summarize(CHAT, None) == "ok"  # type: ignore[arg-type]
    assert len(server.requests) == 1
    with pytest.raises(InvalidArgumentError, match="'client'"):
        summarize_fn(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="'prompt'"):
        summarize_fn(client, prompt=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="'on_completion'"):
        summarize_fn(client, on_completion="log")  # type: ignore[arg-type]


def test_summarize_options() -> None:
    assert SummarizeOptions() == SummarizeOptions(model=None, prompt=None, max_tokens=None)
    options = SummarizeOptions(model="m", prompt="p", max_tokens=8000)
    assert SummarizeOptions.of(options) is options
    assert SummarizeOptions.of({"model": "m", "max_tokens": 5}) == SummarizeOptions(model="m", max_tokens=5)
    assert SummarizeOptions.of(None) == SummarizeOptions()
    with pytest.raises(AttributeError):
        options.model = "other"  # type: ignore[misc]
    bad: list[tuple[dict[str, Any], str]] = [
        ({"model": ""}, "'model'"),
        ({"model": 3}, "'model'"),
        ({"prompt": 3}, "'prompt'"),
        ({"max_tokens": 0}, "'max_tokens'"),
        ({"max_tokens": True}, "'max_tokens'"),
        ({"max_tokens": 2.5}, "'max_tokens'"),
    ]
    for kwargs, argument in bad:
        with pytest.raises(InvalidArgumentError, match=argument):
            SummarizeOptions(**kwargs)
    with pytest.raises(InvalidArgumentError, match="'maxTokens'"):
        SummarizeOptions.of({"maxTokens": 5})
