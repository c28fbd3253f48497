"""What an entry or a message says, as one text for people to read: the CLI's trees and the
inspector show the same words for the same entry.

A message is its text (image parts as ``[image]``), then the tool calls it makes as
``→ name(key=value, ...)``; a tool message is prefixed by the tool's name, a named speaker's by
the name. An entry adds the results of the tool calls it holds as ``[name: result]``. An event
is its type and what it says (a label's label, a model change's model, a summary...).
"""

from __future__ import annotations

import json
from typing import Any

from .records import (
    ApprovalEvent,
    CompactionEvent,
    CustomEvent,
    ImageBase64Part,
    ImageURLPart,
    InterruptEvent,
    LabelEvent,
    MemoryEntry,
    Message,
    ModelChangeEvent,
    TextPart,
    ToolCall,
)

#: What the tool calls of a message are shown after.
ARROW = "→"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def format_call(call: ToolCall) -> str:
    """A tool call as ``name(key=value, ...)``."""
    if call.argument_error is not None:
        return f"{call.name}({call.argument_error})"
    args = ", ".join(f"{k}={_json(v)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def message_text(message: Message, calls: list[ToolCall] | None = None, *, arrow: str = ARROW) -> str:
    """What ``message`` says (see the module docs); ``calls`` are its tool calls when they are
    kept beside it (an entry's ``tool_calls``)."""
    if isinstance(message.content, str):
        text = message.content
    else:
        pieces: list[str] = []
        for part in message.content:
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ImageURLPart | ImageBase64Part):
                pieces.append("[image]")
        text = " ".join(pieces)
    made = list(message.tool_calls or calls or [])
    if made:
        shown = ", ".join(format_call(c) for c in made)
        text = f"{text} {arrow} {shown}" if text else f"{arrow} {shown}"
    if message.role == "tool":
        label = message.name or message.tool_call_id or "tool"
        return f"{label}: {text}"
    if message.name:
        return f"{message.name}: {text}"
    return text


def describe_entry(entry: MemoryEntry, *, arrow: str = ARROW) -> tuple[str, str]:
    """What an entry is and says: its kind (the message's role, or ``event``) and its text (see
    the module docs; it may hold several lines)."""
    event = entry.event
    if event is not None:
        detail = ""
        if isinstance(event, LabelEvent):
            detail = event.label
        elif isinstance(event, ModelChangeEvent):
            detail = event.model + (f" (was {event.previous_model})" if event.previous_model else "")
        elif isinstance(event, CompactionEvent):
            detail = event.summary
        elif isinstance(event, ApprovalEvent):
            verdict = "approved" if event.approved else "refused"
            detail = " ".join(
                p for p in (verdict, event.tool_name or event.tool_call_id or "", event.reason or "") if p
            )
        elif isinstance(event, InterruptEvent):
            detail = event.reason or ""
        elif isinstance(event, CustomEvent):
            detail = event.name + (f" {_json(event.data)}" if event.data else "")
        return "event", f"{entry.type}: {detail}" if detail else entry.type
    message = entry.message
    if message is None:  # not reachable for valid entries
        return entry.type, ""
    text = message_text(message, entry.tool_calls, arrow=arrow)
    for result in entry.tool_results or ():
        shown = (
            result.error
            if result.error
            else (result.result if isinstance(result.result, str) else _json(result.result))
        )
        text += f" [{result.name or result.call_id}: {' '.join(str(shown).split())}]"
    return message.role, text


__all__ = ["ARROW", "describe_entry", "format_call", "message_text"]
