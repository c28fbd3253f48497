"""Token counting without tiktoken.

The estimate follows how BPE tokenizers of the cl100k/o200k family split text: the text is cut
into the same pre-token pieces (words with their leading space, runs of up to three digits,
punctuation runs, whitespace), and each piece is priced by its script and length. Common English
words are one token, long or rare words a token per few letters, CJK about one token per
character, other non-Latin scripts by their UTF-8 length. ``benchmarks/`` measures the error
against tiktoken's ``cl100k_base``; the figures are in ``docs/tokens.md``.

Messages add a few tokens of framing each (as chat formats do), tool calls their name and JSON
arguments, and images a fixed price by detail (85 tokens for ``low``, 765 otherwise, OpenAI's
price of a 1024x1024 image).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .types import (
    CompactionEvent,
    CustomEvent,
    EntryContent,
    ImageBase64Part,
    ImageURLPart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
)

#: Tokens of framing per message (role, separators).
MESSAGE_OVERHEAD = 4
#: Extra tokens when a message carries a ``name``.
NAME_OVERHEAD = 1
#: Tokens of framing per tool call (id, type, separators).
TOOL_CALL_OVERHEAD = 8
IMAGE_TOKENS_LOW = 85
IMAGE_TOKENS_HIGH = 765

_PIECE = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)"""  # contractions
    r"""|[^\r\n\w]?[^\W\d_]+"""  # a word with an optional leading space or mark
    r"""|\d{1,3}"""  # numbers in groups of up to three digits
    r"""| ?[^\s\w]+[\r\n]*"""  # punctuation runs
    r"""|\s*[\r\n]+"""  # newlines with the spaces before them
    r"""|\s+(?!\S)|\s+""",  # other whitespace
    re.UNICODE,
)


def _is_cjk(code: int) -> bool:
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF  # hangul
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FFFF
    )


def _word_tokens(word: str) -> int:
    """Price of one word piece (letters, maybe with a leading space or mark)."""
    if word.isascii():
        letters = len(word) - (1 if not word[0].isalpha() else 0)
        if letters <= 7:
            return 1
        return 1 + (letters - 4) // 5
    tokens = 0.0
    other_bytes = 0
    for ch in word:
        code = ord(ch)
        if code < 128:
            tokens += 0.25
        elif _is_cjk(code):
            tokens += 1.0
        elif code < 0x250:  # Latin with diacritics
            tokens += 0.4
        elif 0x400 <= code < 0x530:  # Cyrillic, Armenian
            tokens += 0.45
        else:
            other_bytes += len(ch.encode("utf-8"))
    tokens += other_bytes / 2.4
    return max(1, round(tokens))


def _piece_tokens(piece: str) -> int:
    first = piece[0]
    if first.isalpha() or (len(piece) > 1 and piece[1].isalpha()):
        return _word_tokens(piece)
    if first.isdigit():
        return 1
    if piece.isspace():
        if "\n" in piece or "\r" in piece:
            return max(1, piece.count("\n"))
        return 1 if len(piece) <= 16 else 1 + len(piece) // 16
    stripped = piece.strip()
    if not stripped:
        return 1
    if stripped.isascii():
        return max(1, (len(stripped) + 1) // 2)
    return max(1, len(stripped.encode("utf-8")) // 2)


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (0 for an empty string)."""
    if not text:
        return 0
    return sum(_piece_tokens(piece) for piece in _PIECE.findall(text))


def truncate_to_tokens(text: str, max_tokens: int, *, ellipsis: str = "") -> str:
    """The longest prefix of ``text`` (cut between pieces) whose estimate fits ``max_tokens``.

    ``ellipsis`` is appended when the text was cut, and counted in the budget.
    """
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    budget = max_tokens - count_tokens(ellipsis)
    if budget <= 0:
        return ""
    used = 0
    end = 0
    for match in _PIECE.finditer(text):
        cost = _piece_tokens(match.group())
        if used + cost > budget:
            break
        used += cost
        end = match.end()
    return text[:end].rstrip() + ellipsis


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def count_tool_calls_tokens(tool_calls: Iterable[ToolCall] | None) -> int:
    """Tokens of tool calls: name, JSON arguments and framing."""
    if not tool_calls:
        return 0
    total = 0
    for call in tool_calls:
        total += TOOL_CALL_OVERHEAD + count_tokens(call.name) + count_tokens(_json_text(call.arguments))
    return total


def count_tool_results_tokens(tool_results: Iterable[ToolResult] | None) -> int:
    """Tokens of tool results: the result (as JSON when not text), the error, and framing."""
    if not tool_results:
        return 0
    total = 0
    for result in tool_results:
        total += MESSAGE_OVERHEAD + count_tokens(_json_text(result.result))
        if result.error:
            total += count_tokens(result.error)
    return total


def count_content_tokens(message: Message) -> int:
    """Tokens of a message's content: its text parts and its images."""
    content = message.content
    if isinstance(content, str):
        return count_tokens(content)
    total = 0
    for part in content:
        if isinstance(part, TextPart):
            total += count_tokens(part.text)
        elif isinstance(part, ImageURLPart):
            total += IMAGE_TOKENS_LOW if part.image_url.detail == "low" else IMAGE_TOKENS_HIGH
        elif isinstance(part, ImageBase64Part):
            total += IMAGE_TOKENS_HIGH
    return total


def count_message_tokens(message: Message | dict[str, Any]) -> int:
    """Tokens a message costs in a prompt: content, images, tool calls, name and framing."""
    if not isinstance(message, Message):
        message = Message.model_validate(message)
    total = MESSAGE_OVERHEAD + count_content_tokens(message)
    if message.name:
        total += NAME_OVERHEAD + count_tokens(message.name)
    if message.tool_calls:
        total += count_tool_calls_tokens(message.tool_calls)
    if message.tool_call_id:
        total += 2
    return total


def count_messages_tokens(messages: Sequence[Message | dict[str, Any]]) -> int:
    """Tokens of a list of messages, with the 3 tokens that prime a reply."""
    if not messages:
        return 0
    return sum(count_message_tokens(m) for m in messages) + 3


def count_entry_tokens(entry: EntryContent) -> int:
    """Tokens of an entry as a prompt would carry it.

    The message (text, images, tool calls), the entry's own tool calls and tool results; for a
    compaction, its summary; for a custom event, its data; other events cost nothing.
    """
    total = 0
    if entry.message is not None:
        total += count_message_tokens(entry.message)
        if entry.tool_calls and not entry.message.tool_calls:
            total += count_tool_calls_tokens(entry.tool_calls)
    elif entry.tool_calls:
        total += count_tool_calls_tokens(entry.tool_calls)
    if entry.tool_results:
        total += count_tool_results_tokens(entry.tool_results)
    event = entry.event
    if isinstance(event, CompactionEvent):
        total += MESSAGE_OVERHEAD + count_tokens(event.summary)
    elif isinstance(event, CustomEvent) and event.data:
        total += count_tokens(_json_text(event.data))
    return total


__all__ = [
    "IMAGE_TOKENS_HIGH",
    "IMAGE_TOKENS_LOW",
    "MESSAGE_OVERHEAD",
    "count_content_tokens",
    "count_entry_tokens",
    "count_message_tokens",
    "count_messages_tokens",
    "count_tokens",
    "count_tool_calls_tokens",
    "count_tool_results_tokens",
    "truncate_to_tokens",
]
