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

The other way, :func:`from_openai_messages` and :func:`from_anthropic_messages` turn messages as
the SDKs produce them (plain dicts, the SDKs' own objects, or a mix) into :class:`NewMemoryEntry`
records for ``add_entry``: tool calls become :class:`ToolCall` records and tool results
``tool_result`` entries. Anything they cannot keep faithfully is refused with
:class:`InvalidArgumentError` naming the message and part (``messages[3].content[1]``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ..errors import InvalidArgumentError
from ..threads.records import (
    ImageBase64,
    ImageBase64Part,
    ImageURL,
    ImageURLPart,
    Message,
    NewMemoryEntry,
    TextPart,
    ToolCall,
)

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


# --- from SDK messages to entries ---------------------------------------------------------

#: OpenAI's newer name for instructions, stored as ``system``.
_OPENAI_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_OPENAI_TEXT_PARTS = ("text", "input_text", "output_text")


def _plain(value: Any) -> Any:
    """An SDK object (a pydantic model such as ``ChatCompletionMessage``) as a dict; anything else as it is."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _sequence(value: Any, argument: str) -> list[Any]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise InvalidArgumentError(argument, f"must be a list, got {type(value).__name__}")
    return list(value)


def _mapping(value: Any, argument: str) -> Mapping[str, Any]:
    value = _plain(value)
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(argument, f"must be an object, got {type(value).__name__}")
    return value


def _text(value: Any, argument: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be text, got {type(value).__name__}")
    return value


def _optional_text(value: Any, argument: str) -> str | None:
    return None if value is None else _text(value, argument)


def _thread_id(thread_id: Any) -> str:
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidArgumentError("thread_id", "must be a non-empty string")
    return thread_id


def _entry(where: str, thread_id: str, entry_type: str, fields: dict[str, Any], **extra: Any) -> NewMemoryEntry:
    try:
        return NewMemoryEntry(thread_id=thread_id, type=entry_type, message=Message.model_validate(fields), **extra)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first.get("loc", ()))
        problem = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise InvalidArgumentError(f"{where}.{path}" if path else where, problem) from None


def _openai_image(where: str, part: Mapping[str, Any]) -> ImageURLPart:
    image = part.get("image_url")
    image = {"url": image} if isinstance(image, str) else _plain(image)
    try:
        return ImageURLPart(image_url=ImageURL.model_validate(image))
    except ValidationError:
        raise InvalidArgumentError(f"{where}.image_url", 'must be {"url": ..., "detail": ...}') from None


def _openai_parts(where: str, value: Any) -> str | list[Any]:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts: list[Any] = []
    for number, raw in enumerate(_sequence(value, f"{where}.content")):
        at = f"{where}.content[{number}]"
        if isinstance(raw, str):
            parts.append(TextPart(text=raw))
            continue
        part = _mapping(raw, at)
        kind = part.get("type")
        if kind in _OPENAI_TEXT_PARTS:
            parts.append(TextPart(text=_text(part.get("text"), f"{at}.text")))
        elif kind == "refusal":
            parts.append(TextPart(text=_text(part.get("refusal"), f"{at}.refusal")))
        elif kind == "image_url":
            parts.append(_openai_image(at, part))
        elif kind == "image_base64":  # the package's own shape, as Message.model_dump() writes it
            try:
                parts.append(ImageBase64Part(image_base64=ImageBase64.model_validate(_plain(part.get("image_base64")))))
            except ValidationError:
                raise InvalidArgumentError(f"{at}.image_base64", 'must be {"data": ..., "media_type": ...}') from None
        else:
            raise InvalidArgumentError(at, f"has type {kind!r}; supported: text, image_url")
    return parts


def _arguments(where: str, call_id: str, raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool call arguments as an object, or ``({}, text)`` for text a model wrote that is not one."""
    raw = _plain(raw)
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    if not isinstance(raw, str):
        raise InvalidArgumentError(where, f"the arguments of tool call {call_id} must be JSON text or an object")
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed, None
    return {}, raw  # kept word for word, as the model wrote it


def _openai_call(where: str, raw: Any) -> ToolCall:
    call = _mapping(raw, where)
    kind = call.get("type", "function")
    if kind != "function":
        raise InvalidArgumentError(f"{where}.type", f"is {kind!r}; only 'function' tool calls are supported")
    function = call.get("function")
    if function is not None:  # OpenAI: {id, type: "function", function: {name, arguments: "<json>"}}
        function = _mapping(function, f"{where}.function")
        name, raw_args, name_at = function.get("name"), function.get("arguments"), f"{where}.function.name"
    else:  # the package's own shape: {id, name, arguments: {...}}
        name, raw_args, name_at = call.get("name"), call.get("arguments"), f"{where}.name"
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidArgumentError(f"{where}.id", "a tool call needs an id")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(name_at, f"tool call {call_id} needs a name")
    arguments, argument_error = _arguments(f"{where}.arguments", call_id, raw_args)
    return ToolCall(id=call_id, name=name, arguments=arguments, argument_error=argument_error)


def from_openai_messages(messages: Sequence[Any], *, thread_id: str) -> list[NewMemoryEntry]:
    """Entries for OpenAI chat messages, in order, ready for ``add_entry`` into ``thread_id``.

    ``messages`` are dicts (the SDK's ``ChatCompletionMessageParam``) or the SDK's objects
    (``completion.choices[0].message``), as a request or a response holds them:

    - ``system``, ``user``, ``assistant`` and ``tool`` keep their role; ``developer`` is stored
      as ``system``.
    - ``content`` may be text, ``None`` (an assistant message that only calls tools) or parts:
      ``text`` (also ``input_text`` / ``output_text``) and ``image_url``; an assistant's
      ``refusal`` (the field or a part) becomes its text when it has no other.
    - Assistant ``tool_calls`` (``{id, type: "function", function: {name, arguments}}``) become
      :class:`ToolCall` records with the arguments parsed from their JSON text; text that does not
      parse to an object is kept word for word in ``argument_error``.
    - A ``tool`` message becomes a ``tool_result`` entry, named after the call it answers.

    Refused with :class:`InvalidArgumentError` naming the message: other roles (the legacy
    ``function``), the legacy ``function_call``, ``custom`` tool calls, audio and file parts.
    Keys the record has no place for (``annotations``, ``audio`` ids...) are left out.
    """
    thread = _thread_id(thread_id)
    entries: list[NewMemoryEntry] = []
    call_names: dict[str, str] = {}
    for index, item in enumerate(_sequence(messages, "messages")):
        where = f"messages[{index}]"
        raw = _mapping(item, where)
        role = raw.get("role")
        stored = _OPENAI_ROLES.get(role) if isinstance(role, str) else None
        if stored is None:
            raise InvalidArgumentError(
                f"{where}.role", f"must be one of system, developer, user, assistant, tool; got {role!r}"
            )
        if raw.get("function_call") is not None:
            raise InvalidArgumentError(f"{where}.function_call", "the legacy function_call is not supported")
        content = _openai_parts(where, raw.get("content"))
        refusal = _optional_text(raw.get("refusal"), f"{where}.refusal")
        if refusal and not content:
            content = refusal
        fields: dict[str, Any] = {"role": stored, "content": content}
        sender = _optional_text(raw.get("name"), f"{where}.name")
        if sender is not None:
            fields["name"] = sender
        calls = raw.get("tool_calls")
        if calls:
            if stored != "assistant":
                raise InvalidArgumentError(f"{where}.tool_calls", "only assistant messages carry tool calls")
            parsed = [_openai_call(f"{where}.tool_calls[{i}]", c) for i, c in enumerate(_sequence(calls, where))]
            fields["tool_calls"] = parsed
            call_names.update({call.id: call.name for call in parsed})
        entry_type = "message"
        if stored == "tool":
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidArgumentError(
                    f"{where}.tool_call_id", "a tool message needs the id of the call it answers"
                )
            fields["tool_call_id"] = call_id
            if "name" not in fields and call_id in call_names:
                fields["name"] = call_names[call_id]
            entry_type = "tool_result"
        entries.append(_entry(where, thread, entry_type, fields))
    return entries


#: Anthropic blocks with no place in a message, left out: the model's reasoning.
_ANTHROPIC_SKIPPED = frozenset({"thinking", "redacted_thinking"})


def _anthropic_image(where: str, block: Mapping[str, Any]) -> ImageURLPart | ImageBase64Part:
    source = _mapping(block.get("source"), f"{where}.source")
    kind = source.get("type")
    if kind == "base64":
        return ImageBase64Part(
            image_base64=ImageBase64(
                data=_text(source.get("data"), f"{where}.source.data"),
                media_type=_text(source.get("media_type"), f"{where}.source.media_type"),
            )
        )
    if kind == "url":
        return ImageURLPart(image_url=ImageURL(url=_text(source.get("url"), f"{where}.source.url")))
    raise InvalidArgumentError(f"{where}.source.type", f"is {kind!r}; supported image sources: base64, url")


def _parts_content(parts: list[TextPart | ImageURLPart | ImageBase64Part]) -> str | list[Any]:
    """One text part as a string, anything else as the list of parts."""
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    return list(parts)


def _tool_result_content(where: str, value: Any) -> str | list[Any]:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts: list[TextPart | ImageURLPart | ImageBase64Part] = []
    for number, raw in enumerate(_sequence(value, where)):
        at = f"{where}[{number}]"
        block = _mapping(raw, at)
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(text=_text(block.get("text"), f"{at}.text")))
        elif kind == "image":
            parts.append(_anthropic_image(at, block))
        else:
            raise InvalidArgumentError(at, f"has type {kind!r}; supported in a tool result: text, image")
    return _parts_content(parts)


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    texts: list[str] = []
    for number, raw in enumerate(_sequence(system, "system")):
        block = _mapping(raw, f"system[{number}]")
        if block.get("type") != "text":
            raise InvalidArgumentError(f"system[{number}]", f"has type {block.get('type')!r}; only text blocks")
        texts.append(_text(block.get("text"), f"system[{number}].text"))
    return "\n".join(texts)


def _anthropic_turn(
    where: str, thread: str, role: str, blocks: list[Any], call_names: dict[str, str]
) -> list[NewMemoryEntry]:
    """The entries of one turn (``call_names`` learns the turn's tool calls, for the results after it)."""
    out: list[NewMemoryEntry] = []
    parts: list[TextPart | ImageURLPart | ImageBase64Part] = []
    calls: list[ToolCall] = []

    def flush_user() -> None:
        if parts:
            out.append(_entry(where, thread, "message", {"role": "user", "content": _parts_content(parts)}))
            parts.clear()

    for number, raw_block in enumerate(blocks):
        at = f"{where}.content[{number}]"
        block = _mapping(raw_block, at)
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(text=_text(block.get("text"), f"{at}.text")))
        elif kind == "image":
            parts.append(_anthropic_image(at, block))
        elif kind in _ANTHROPIC_SKIPPED:
            continue
        elif kind == "tool_use" and role == "assistant":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidArgumentError(f"{at}.id", "a tool_use block needs an id")
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"{at}.name", f"tool_use {call_id} needs a name")
            arguments = _plain(block.get("input", {}))
            if not isinstance(arguments, Mapping):
                raise InvalidArgumentError(f"{at}.input", f"must be an object, got {type(arguments).__name__}")
            calls.append(ToolCall(id=call_id, name=name, arguments=dict(arguments)))
            call_names[call_id] = name
        elif kind == "tool_result" and role == "user":
            flush_user()
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidArgumentError(f"{at}.tool_use_id", "a tool_result block needs the id of its tool_use")
            fields: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": call_id,
                "content": _tool_result_content(f"{at}.content", block.get("content")),
            }
            if call_id in call_names:
                fields["name"] = call_names[call_id]
            failed = block.get("is_error") is True
            out.append(_entry(at, thread, "tool_result", fields, metadata={"is_error": True} if failed else None))
        else:
            supported = "text, image, tool_use" if role == "assistant" else "text, image, tool_result"
            raise InvalidArgumentError(at, f"has type {kind!r}; supported in a {role} turn: {supported}")
    if role == "assistant":
        message: dict[str, Any] = {"role": "assistant", "content": _parts_content(parts)}
        if calls:
            message["tool_calls"] = calls
        out.append(_entry(where, thread, "message", message))
    else:
        flush_user()
    return out


def from_anthropic_messages(
    messages: Sequence[Any], *, thread_id: str, system: str | Sequence[Any] | None = None
) -> list[NewMemoryEntry]:
    """Entries for Anthropic Messages API turns, in order, ready for ``add_entry`` into ``thread_id``.

    ``messages`` are dicts (the SDK's ``MessageParam``) or the SDK's objects (the ``Message`` a
    call returns); ``system`` is the request's system prompt (text or text blocks) and becomes a
    first ``system`` entry.

    - ``text`` and ``image`` blocks (base64 or URL sources) become the message's content (one
      text block as plain text).
    - ``tool_use`` blocks of an assistant turn become :class:`ToolCall` records of its message.
    - Each ``tool_result`` block of a user turn becomes a ``tool_result`` entry of its own (a
      ``tool`` message with ``tool_call_id``, named after the call); ``is_error: true`` is kept
      as ``{"is_error": true}`` in the entry's metadata. Other blocks of the same turn become a
      user message after them, in the order the turn holds them.
    - ``thinking`` and ``redacted_thinking`` blocks are left out.

    Refused with :class:`InvalidArgumentError` naming the block: roles other than ``user`` and
    ``assistant``, documents, search results, server tool blocks and file sources.
    """
    thread = _thread_id(thread_id)
    entries: list[NewMemoryEntry] = []
    if system is not None:
        text = _system_text(system)
        if text:
            entries.append(_entry("system", thread, "message", {"role": "system", "content": text}))
    call_names: dict[str, str] = {}
    for index, item in enumerate(_sequence(messages, "messages")):
        where = f"messages[{index}]"
        raw = _mapping(item, where)
        role = raw.get("role")
        if role not in ("user", "assistant"):
            raise InvalidArgumentError(f"{where}.role", f"must be 'user' or 'assistant', got {role!r}")
        content = raw.get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else _sequence(content, f"{where}.content")
        )
        entries.extend(_anthropic_turn(where, thread, role, blocks, call_names))
    return entries


__all__ = ["from_anthropic_messages", "from_openai_messages", "to_anthropic_request", "to_openai_messages"]
