"""Messages to the request shapes of OpenAI chat completions and Anthropic Messages.

Plain dicts, so neither SDK is needed: :func:`to_openai_messages` gives the ``messages`` of
``client.chat.completions.create``; :func:`to_anthropic_request` gives ``{"system": ...,
"messages": ...}`` for ``client.messages.create(model=..., max_tokens=..., **request)``. The
package's tests validate both against the SDKs' own request types.

- Tool calls become OpenAI ``tool_calls`` (arguments as JSON text) and Anthropic ``tool_use``
  blocks; tool messages become OpenAI ``tool`` messages and Anthropic ``tool_result`` blocks in
  a user turn.
- Images given by URL stay URLs; base64 images become ``data:`` URLs (OpenAI) or base64
  sources (Anthropic).
- ``cache_breakpoint`` becomes Anthropic's ``cache_control: {"type": "ephemeral"}`` on the last
  block of the message (OpenAI caches prefixes by itself, so it has no field for it).
- Anthropic: every system message goes into ``system``; consecutive turns of the same role are
  merged into one (the API wants turns to alternate); empty text blocks are left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..threads.records import ImageBase64Part, ImageURLPart, Message, TextPart

_EPHEMERAL = {"type": "ephemeral"}


def _messages(messages: Sequence[Message | dict[str, Any]]) -> list[Message]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidArgumentError("messages", "must be a list of messages")
    out: list[Message] = []
    for i, message in enumerate(messages):
        if isinstance(message, Message):
            out.append(message)
        elif isinstance(message, dict):
            try:
                out.append(Message.model_validate(message))
            except ValueError as exc:
                raise InvalidArgumentError(f"messages[{i}]", str(exc).splitlines()[0]) from None
        else:
            raise InvalidArgumentError(f"messages[{i}]", f"must be a Message or a dict, got {type(message).__name__}")
    return out


def _openai_content(message: Message) -> str | list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return content
    if all(isinstance(p, TextPart) for p in content):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            image: dict[str, Any] = {"url": part.image_url.url}
            if part.image_url.detail is not None:
                image["detail"] = part.image_url.detail
            parts.append({"type": "image_url", "image_url": image})
        elif isinstance(part, ImageBase64Part):
            data = part.image_base64
            parts.append({"type": "image_url", "image_url": {"url": f"data:{data.media_type};base64,{data.data}"}})
    return parts


def to_openai_messages(messages: Sequence[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as OpenAI chat completion message params."""
    out: list[dict[str, Any]] = []
    for message in _messages(messages):
        role = message.role
        if role == "system":
            out.append({"role": "system", "content": message.text})
        elif role == "user":
            item: dict[str, Any] = {"role": "user", "content": _openai_content(message)}
            if message.name:
                item["name"] = message.name
            out.append(item)
        elif role == "assistant":
            item = {"role": "assistant", "content": message.text or None}
            if message.name:
                item["name"] = message.name
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.arguments, ensure_ascii=False, default=str),
                        },
                    }
                    for call in message.tool_calls
                ]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        else:
            if not message.tool_call_id:
                raise InvalidArgumentError("messages", "a tool message needs a tool_call_id")
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text})
    return out


def _anthropic_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.role == "tool":
        if not message.tool_call_id:
            raise InvalidArgumentError("messages", "a tool message needs a tool_call_id")
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.text:
            block["content"] = message.text
        return [block]
    content = message.content
    parts = [TextPart(text=content)] if isinstance(content, str) else content
    for part in parts:
        if isinstance(part, TextPart):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            blocks.append({"type": "image", "source": {"type": "url", "url": part.image_url.url}})
        elif isinstance(part, ImageBase64Part):
            data = part.image_base64
            blocks.append(
                {"type": "image", "source": {"type": "base64", "media_type": data.media_type, "data": data.data}}
            )
    if message.role == "assistant":
        for call in message.tool_calls or []:
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)})
    return blocks


def to_anthropic_request(messages: Sequence[Message | dict[str, Any]]) -> dict[str, Any]:
    """``{"system": [...text blocks], "messages": [...]}`` for Anthropic's Messages API
    (``system`` left out when there is none)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in _messages(messages):
        if message.role == "system":
            if message.text.strip():
                block: dict[str, Any] = {"type": "text", "text": message.text}
                if message.cache_breakpoint:
                    block["cache_control"] = dict(_EPHEMERAL)
                system.append(block)
            continue
        blocks = _anthropic_blocks(message)
        if not blocks:
            continue
        if message.cache_breakpoint:
            blocks[-1]["cache_control"] = dict(_EPHEMERAL)
        role = "assistant" if message.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    request: dict[str, Any] = {"messages": turns}
    if system:
        request["system"] = system
    return request


__all__ = ["to_anthropic_request", "to_openai_messages"]
