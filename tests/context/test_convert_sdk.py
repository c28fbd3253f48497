"""Messages as the OpenAI and Anthropic SDKs produce them go into ``add_entry`` through the public converters.

Inputs are the SDKs' own objects (responses validated by the SDK's pydantic types), their
``model_dump()`` and request dicts checked against the SDK's param types; the entries are written
to real stores and read back.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from cogitator_memory import InvalidArgumentError, Message, ToolCall, unwrap
from cogitator_memory.context import (
    from_anthropic_messages,
    from_openai_messages,
    to_anthropic_request,
    to_openai_messages,
)
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.threads.records import ImageBase64Part, ImageURLPart, MemoryEntry, NewMemoryEntry, TextPart


async def _write(memory: BaseMemoryAdapter, entries: list[NewMemoryEntry]) -> list[MemoryEntry]:
    for entry in entries:
        unwrap(await memory.add_entry(entry))
    return unwrap(await memory.get_path(thread_id=entries[0].thread_id, types="all", include_tool_calls=True))


def _messages(path: list[MemoryEntry]) -> list[Message]:
    return [e.message for e in path if e.message is not None]


# --- OpenAI --------------------------------------------------------------------------------


def _completion(message: dict[str, Any]) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
    )


OPENAI_REQUEST: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "system", "content": [{"type": "text", "text": "Use metric units."}]},
    {
        "role": "user",
        "name": "ada",
        "content": [
            {"type": "text", "text": "What is this, and the weather in Paris?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
        ],
    },
]


async def test_openai_sdk_messages_go_into_add_entry(memory: BaseMemoryAdapter) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(OPENAI_REQUEST)  # real SDK request shapes
    reply = _completion(
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": "{not json"}},
            ],
        }
    ).choices[0]
    tool_answers: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "call_1", "content": "rain, 12 °C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "failed"}]},
    ]
    refused = _completion({"role": "assistant", "content": None, "refusal": "I can't identify people."})
    thread = unwrap(await memory.create_thread("agent"))
    entries = from_openai_messages(
        [*OPENAI_REQUEST, reply.message, *tool_answers, refused.choices[0].message.model_dump()], thread_id=thread.id
    )
    path = await _write(memory, entries)
    messages = _messages(path)
    assert [m.role for m in messages] == ["system", "system", "user", "assistant", "tool", "tool", "assistant"]
    assert [e.type for e in path] == ["message"] * 4 + ["tool_result"] * 2 + ["message"]
    assert messages[0].text == "Answer briefly." and messages[1].text == "Use metric units."
    user = messages[2]
    assert user.name == "ada" and isinstance(user.content, list)
    assert isinstance(user.content[1], ImageURLPart) and user.content[1].image_url.detail == "low"
    assert messages[3].content == "" and messages[3].tool_calls == [
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="lookup", arguments={}, argument_error="{not json"),
    ]
    assert (messages[4].tool_call_id, messages[4].name, messages[4].text) == ("call_1", "get_weather", "rain, 12 °C")
    assert (messages[5].name, messages[5].text) == ("lookup", "failed")
    assert messages[6].text == "I can't identify people.", "a refusal is the assistant's text"


async def test_openai_round_trip_through_the_request_shape(memory: BaseMemoryAdapter) -> None:
    original = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Lisbon?"),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="weather", arguments={"q": [1, 2]})]),
        Message(role="tool", content='{"temp": 21}', tool_call_id="c1", name="weather"),
        Message(role="assistant", content="21 degrees."),
    ]
    thread = unwrap(await memory.create_thread("agent"))
    path = await _write(memory, from_openai_messages(to_openai_messages(original), thread_id=thread.id))
    assert _messages(path) == original


@pytest.mark.parametrize(
    ("messages", "argument", "needle"),
    [
        ([{"role": "function", "name": "f", "content": "x"}], "messages[0].role", "developer"),
        ([{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}], "messages[0].function_call", ""),
        ([{"role": "user", "content": "x"}, {"role": "tool", "content": "x"}], "messages[1].tool_call_id", "needs"),
        (
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}],
            "messages[0].content[0]",
            "input_audio",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "f", "input": ""}}],
                }
            ],
            "messages[0].tool_calls[0].type",
            "custom",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}]}],
            "tool_calls[0].id",
            "",
        ),
        ([{"role": "user", "tool_calls": [{"id": "c", "name": "f"}]}], "messages[0].tool_calls", "assistant"),
        ([{"role": "user", "content": 5}], "messages[0].content", "list"),
        (["hello"], "messages[0]", "object"),
        ("hello", "messages", "list"),
    ],
)
def test_openai_converter_names_what_it_cannot_keep(messages: Any, argument: str, needle: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        from_openai_messages(messages, thread_id="t")
    assert argument in caught.value.argument and needle in str(caught.value)


def test_converters_need_a_thread_id() -> None:
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        from_openai_messages([], thread_id="")
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        from_anthropic_messages([], thread_id=None)  # type: ignore[arg-type]


# --- Anthropic -----------------------------------------------------------------------------


def _anthropic_reply() -> Any:
    from anthropic.types import Message as AnthropicMessage

    return AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 20},
        }
    )


async def test_anthropic_sdk_messages_go_into_add_entry(memory: BaseMemoryAdapter) -> None:
    from anthropic.types import MessageParam, TextBlockParam

    system: list[dict[str, Any]] = [{"type": "text", "text": "Answer briefly.", "cache_control": {"type": "ephemeral"}}]
    first: dict[str, Any] = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Paris? And this:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        ],
    }
    answers: dict[str, Any] = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "rain"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "clock broken", "is_error": True},
            {"type": "text", "text": "Thanks. Umbrella?"},
        ],
    }
    TypeAdapter(list[TextBlockParam]).validate_python(system)
    TypeAdapter(list[MessageParam]).validate_python([first, answers])
    reply = _anthropic_reply()
    thread = unwrap(await memory.create_thread("agent"))
    entries = from_anthropic_messages(
        [first, reply, answers, {"role": "assistant", "content": "Yes."}], thread_id=thread.id, system=system
    )
    path = await _write(memory, entries)
    messages = _messages(path)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assert [e.type for e in path] == ["message"] * 3 + ["tool_result"] * 2 + ["message"] * 2
    assert messages[0].text == "Answer briefly."
    user = messages[1].content
    assert isinstance(user, list) and isinstance(user[0], TextPart)
    assert isinstance(user[1], ImageBase64Part) and user[1].image_base64.media_type == "image/png"
    assert isinstance(user[2], ImageURLPart) and user[2].image_url.url == "https://example.com/cat.png"
    assistant = messages[2]
    assert assistant.content == "Let me check.", "the thinking block is left out"
    assert assistant.tool_calls == [
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_2", name="get_time", arguments={}),
    ]
    assert (messages[3].tool_call_id, messages[3].name, messages[3].content) == ("toolu_1", "get_weather", "rain")
    assert path[4].metadata == {"is_error": True} and path[3].metadata is None
    assert messages[4].text == "clock broken" and messages[5].text == "Thanks. Umbrella?"
    # the SDK object's own dump is read the same way
    again = from_anthropic_messages([reply.model_dump()], thread_id=thread.id)
    assert again[0].message == assistant


async def test_anthropic_round_trip_through_the_request_shape(memory: BaseMemoryAdapter) -> None:
    original = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Lisbon?"),
        Message(role="assistant", content="Checking.", tool_calls=[ToolCall(id="c1", name="weather", arguments={})]),
        Message(role="tool", content='{"temp": 21}', tool_call_id="c1", name="weather"),
        Message(role="assistant", content="21 degrees."),
    ]
    request = to_anthropic_request(original)
    thread = unwrap(await memory.create_thread("agent"))
    entries = from_anthropic_messages(request["messages"], thread_id=thread.id, system=request["system"])
    assert _messages(await _write(memory, entries)) == original


@pytest.mark.parametrize(
    ("messages", "argument", "needle"),
    [
        ([{"role": "system", "content": "x"}], "messages[0].role", "'user' or 'assistant'"),
        (
            [{"role": "user", "content": [{"type": "document", "source": {"type": "text", "data": "x"}}]}],
            "messages[0].content[0]",
            "'document'",
        ),
        (
            [{"role": "assistant", "content": [{"type": "server_tool_use", "id": "s", "name": "web_search"}]}],
            "messages[0].content[0]",
            "server_tool_use",
        ),
        (
            [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}],
            "messages[0].content[0].source.type",
            "file",
        ),
        ([{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}], "content[0]", ""),
        ([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}], "input", ""),
        ([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}], "tool_use_id", ""),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "doc"}]}]}],
            "messages[0].content[0].content[0]",
            "'doc'",
        ),
    ],
)
def test_anthropic_converter_names_what_it_cannot_keep(messages: Any, argument: str, needle: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        from_anthropic_messages(messages, thread_id="t")
    assert argument in caught.value.argument and needle in str(caught.value)


def test_anthropic_system_blocks_must_be_text() -> None:
    with pytest.raises(InvalidArgumentError, match=r"system\[0\]"):
        from_anthropic_messages([], thread_id="t", system=[{"type": "image"}])


def test_the_convert_page_example_runs(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import re
    import runpy
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "convert.md").read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert blocks
    for number, block in enumerate(blocks):
        script = tmp_path / f"example_{number}.py"
        script.write_text(block, "utf-8")
        runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "('tool_result', 'tool')" in out and "weather {'city': 'Paris'}" in out
    assert "Answer briefly. ['user', 'assistant', 'user', 'assistant']" in out
