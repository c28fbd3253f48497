"""The turn context helpers and the message converters (validated against the SDKs' request types)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from cogitator_memory import Message
from cogitator_memory.context import (
    extend_turn_context,
    format_turn_context,
    to_anthropic_request,
    to_openai_messages,
    without_turn_context,
)
from cogitator_memory.errors import InvalidArgumentError


def test_format_extend_and_strip_the_turn_context() -> None:
    assert format_turn_context([]) == ""
    assert format_turn_context([None, "  "]) == ""
    text = format_turn_context(["Today is Monday.", "Known facts:\n- likes tea"])
    assert text == "<memory_context>\nToday is Monday.\n\nKnown facts:\n- likes tea\n</memory_context>"
    more = extend_turn_context(text, "Reflection: be brief.")
    assert more.endswith("- likes tea\n\nReflection: be brief.\n</memory_context>")
    message = f"{more}\n\nWhat is new?"
    assert without_turn_context(message) == "What is new?"
    assert without_turn_context("no context here") == "no context here"
    fresh = extend_turn_context("Hello", "Brief.")
    assert fresh == "<memory_context>\nBrief.\n</memory_context>\n\nHello"
    assert without_turn_context(fresh) == "Hello"
    assert extend_turn_context("Hello", "  ") == "Hello"
    # A block cannot close the context early.
    sneaky = format_turn_context(["a </memory_context> b"])
    assert without_turn_context(sneaky + "\n\nInput") == "Input"
    with pytest.raises(InvalidArgumentError, match="blocks"):
        format_turn_context("one string")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"blocks\[0\]"):
        format_turn_context([3])  # type: ignore[list-item]


def _materialize(value: Any) -> Any:
    """A validated value with pydantic's lazy iterators read out."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_materialize(v) for v in value]
    if hasattr(value, "__next__") or type(value).__name__ == "ValidatorIterator":
        return [_materialize(v) for v in value]
    return value


CONVERSATION = [
    Message(role="system", content="You are helpful."),
    Message(role="user", content="Summary of the earlier conversation:\nThey met."),
    Message(role="user", content="What's the weather in Lisbon?", name="ana"),
    Message(
        role="assistant",
        content="",
        tool_calls=[{"id": "call_1", "name": "weather", "arguments": {"city": "Lisbon"}}],  # type: ignore[list-item]
    ),
    Message(role="tool", content='{"temp": 21}', tool_call_id="call_1", name="weather"),
    Message(role="assistant", content="It is 21 degrees.", cache_breakpoint=True),
    Message(
        role="user",
        content=[
            {"type": "text", "text": "And this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
            {"type": "image_base64", "image_base64": {"data": "aGk=", "media_type": "image/png"}},
        ],  # type: ignore[list-item]
    ),
    Message(role="assistant", content="A cat.", cache_breakpoint=True),
    Message(role="user", content="<memory_context>\nToday is Monday.\n</memory_context>"),
]


def test_openai_shape_validates_against_the_sdk() -> None:
    from openai.types.chat import ChatCompletionMessageParam

    out = to_openai_messages(CONVERSATION)
    adapter = TypeAdapter(list[ChatCompletionMessageParam])
    assert _materialize(adapter.validate_python(out)) == out
    assert out[3]["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city": "Lisbon"}'}
    assert out[4] == {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'}
    assert out[6]["content"][2]["image_url"]["url"] == "data:image/png;base64,aGk="
    assert all("cache_breakpoint" not in m for m in out)
    # Dicts are accepted too.
    assert to_openai_messages([{"role": "user", "content": "hi"}]) == [{"role": "user", "content": "hi"}]


def test_anthropic_shape_validates_against_the_sdk() -> None:
    from anthropic.types import MessageParam, TextBlockParam

    out = to_anthropic_request(CONVERSATION)
    assert _materialize(TypeAdapter(list[TextBlockParam]).validate_python(out["system"])) == out["system"]
    assert _materialize(TypeAdapter(list[MessageParam]).validate_python(out["messages"])) == out["messages"]
    turns = out["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    # Two user messages in a row became one turn; the tool result is a user turn.
    assert len(turns[0]["content"]) == 2
    assert turns[1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Lisbon"}}]
    assert turns[2]["content"][0] == {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 21}'}
    # Breakpoints became cache_control on the last block of their message.
    assert turns[3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert turns[5]["content"][-1] == {"type": "text", "text": "A cat.", "cache_control": {"type": "ephemeral"}}
    assert turns[4]["content"][1]["source"] == {"type": "url", "url": "https://example.com/a.png"}
    assert turns[4]["content"][2]["source"]["type"] == "base64"
    assert "system" not in to_anthropic_request([Message(role="user", content="hi")])


def test_converters_name_bad_input() -> None:
    with pytest.raises(InvalidArgumentError, match="messages"):
        to_openai_messages("hi")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]"):
        to_anthropic_request([{"role": "robot", "content": "x"}])
    with pytest.raises(InvalidArgumentError, match="tool_call_id"):
        to_openai_messages([Message(role="tool", content="x")])
