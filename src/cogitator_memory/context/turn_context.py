"""The turn's memory context: what changes every turn, sent with the input in one user message.

The text is a ``<memory_context>`` block holding the brief, ``Known facts:``, ``Relevant
context:``, graph context and recall, blocks separated by blank lines. A caller that sends the
input itself puts the memory context in front of it, in the same user message::

    text = extend_turn_context(context.memory_context or "", "Reflection: be brief.")
    message = f"{text}\\n\\n{user_input}" if text else user_input
    without_turn_context(message) == user_input

A block holding the closing tag has it defused (``</ memory_context>``), so the block always ends
where it should.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import InvalidArgumentError

OPEN_TAG = "<memory_context>"
CLOSE_TAG = "</memory_context>"
_DEFUSED = "</ memory_context>"
_BLOCK = re.compile(re.escape(OPEN_TAG) + r".*?" + re.escape(CLOSE_TAG) + r"[ \t]*(?:\r?\n)*", re.S)


def _clean(block: str) -> str:
    return block.strip().replace(CLOSE_TAG, _DEFUSED)


def format_turn_context(blocks: Iterable[str | None]) -> str:
    """A ``<memory_context>`` block of the non-empty ``blocks``, or ``""`` when there are none."""
    if isinstance(blocks, str):
        raise InvalidArgumentError("blocks", "must be a list of texts, not one string")
    parts: list[str] = []
    for i, block in enumerate(blocks):
        if block is None:
            continue
        if not isinstance(block, str):
            raise InvalidArgumentError(f"blocks[{i}]", f"must be a string, got {type(block).__name__}")
        if block.strip():
            parts.append(_clean(block))
    if not parts:
        return ""
    return f"{OPEN_TAG}\n" + "\n\n".join(parts) + f"\n{CLOSE_TAG}"


def extend_turn_context(text: str, block: str) -> str:
    """``text`` with ``block`` added at the end of its memory context; a text without one gets a
    memory context in front. An empty block changes nothing."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    if not isinstance(block, str):
        raise InvalidArgumentError("block", f"must be a string, got {type(block).__name__}")
    if not block.strip():
        return text
    start = text.find(OPEN_TAG)
    end = text.find(CLOSE_TAG, start + len(OPEN_TAG)) if start >= 0 else -1
    if start >= 0 and end >= 0:
        head = text[:end].rstrip()
        joiner = "\n" if head.endswith(OPEN_TAG) else "\n\n"
        return f"{head}{joiner}{_clean(block)}\n{text[end:]}"
    fresh = format_turn_context([block])
    return f"{fresh}\n\n{text}" if text.strip() else fresh


def without_turn_context(text: str) -> str:
    """``text`` without its memory context block (and the blank lines after it): the input back."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    return _BLOCK.sub("", text, count=1)


__all__ = ["CLOSE_TAG", "OPEN_TAG", "extend_turn_context", "format_turn_context", "without_turn_context"]
