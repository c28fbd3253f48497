"""What a store can keep: the checks every value a caller writes goes through first.

Stores keep JSON, and each engine reads it back with its own limits: pydantic's JSON reader
stops at about 200 levels of nesting, MongoDB stores documents at most 100 levels deep, Redis's
``cjson`` reads 1000, Python's ``json`` about the recursion limit. A value accepted by one
engine and unreadable by its reader would poison the thread it is written to, and values one
engine takes and another refuses (an integer of 2**64, a lone surrogate) would make stores
differ. So every free-form value is checked once, here, before any store sees it:

* JSON only: dicts with string keys, lists (and tuples), strings, integers, finite floats,
  booleans and ``None``. Sets, bytes, datetimes and other objects are refused, as are NaN and
  infinity, rather than turned into something else on the way.
* Integers within 64 bits (``-2**63`` to ``2**63 - 1``), what every engine stores exactly.
* Text without lone surrogates (``"\\ud800"``), which UTF-8 cannot encode.
* At most :data:`MAX_JSON_DEPTH` levels of dicts and lists inside one another, counting the
  value itself, well below every reader's limit.

A refused value fails the call with :class:`~cogitator_memory.errors.InvalidArgumentError`
naming the argument (``entry.tool_results.0.result``) and where in it the problem is.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import InvalidArgumentError
from .records import EntryContent, EventPayload, Message, TextPart, ToolCall, ToolResult

#: How many levels of dicts and lists a free-form value may nest, counting itself: ``{"a": [1]}``
#: is two levels deep. Far below the lowest reader's limit (MongoDB's 100 levels per document,
#: with room for the levels a store wraps a value in).
MAX_JSON_DEPTH = 64
#: The integers a store keeps exactly: signed 64 bits.
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1

_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused(Exception):
    """A value refused somewhere inside; ``path`` grows as the walk unwinds."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str | int] = []


def _where(path: list[str | int]) -> str:
    """`` at ['key'][0]...``: the first steps of the way to the refused value (the walk appended
    them innermost first)."""
    if not path:
        return ""
    steps = [f"[{p}]" if isinstance(p, int) else f"[{p!r}]" for p in reversed(path[-6:])]
    return f" at {''.join(steps)}{'...' if len(path) > 6 else ''}"


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (which UTF-8 cannot encode)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def check_text(name: str, value: object) -> str:
    """A string without lone surrogates."""
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    if has_surrogate(value):
        raise InvalidArgumentError(name, "holds a lone surrogate (invalid Unicode that UTF-8 cannot encode)")
    return value


def check_optional_text(name: str, value: object) -> str | None:
    """Like :func:`check_text`, but ``None`` passes."""
    return None if value is None else check_text(name, value)


def _check(value: Any, depth: int) -> None:
    """Walk ``value`` (``depth`` levels already above it), raising :class:`_Refused`."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if has_surrogate(value):
            raise _Refused("holds text with a lone surrogate (invalid Unicode that UTF-8 cannot encode)")
        return
    if isinstance(value, int):
        if not MIN_INT <= value <= MAX_INT:
            raise _Refused(f"holds the integer {value}, outside the 64-bit range stores keep (-2**63 to 2**63 - 1)")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused(f"holds {value}, which JSON cannot hold (no NaN or infinity)")
        return
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_JSON_DEPTH:
            raise _Refused(f"nests dicts and lists more than {MAX_JSON_DEPTH} levels deep (at most {MAX_JSON_DEPTH})")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _Refused(f"has the key {key!r}: keys must be strings")
                try:
                    if has_surrogate(key):
                        raise _Refused("has a key with a lone surrogate (invalid Unicode that UTF-8 cannot encode)")
                    _check(item, depth + 1)
                except _Refused as refused:
                    refused.path.append(key)
                    raise
        else:
            for index, item in enumerate(value):
                try:
                    _check(item, depth + 1)
                except _Refused as refused:
                    refused.path.append(index)
                    raise
        return
    raise _Refused(
        f"holds a value of type {type(value).__name__}, which is not JSON"
        " (dicts, lists, strings, numbers, booleans and None are)"
    )


def check_json(name: str, value: object) -> None:
    """Check that ``value`` is a JSON value a store can keep (see the module docstring)."""
    try:
        _check(value, 0)
    except _Refused as refused:
        raise InvalidArgumentError(name, refused.problem + _where(refused.path)) from None


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(item) for item in value]
    return value


def json_copy(name: str, value: object) -> Any:
    """``value`` checked by :func:`check_json`, copied (dicts and lists new; tuples become lists)."""
    check_json(name, value)
    return _copy(value)


# --- entries ------------------------------------------------------------------------------


def _check_calls(name: str, calls: list[ToolCall] | None) -> None:
    if not calls:
        return
    for i, call in enumerate(calls):
        where = f"{name}.{i}"
        check_text(f"{where}.id", call.id)
        check_text(f"{where}.name", call.name)
        check_json(f"{where}.arguments", call.arguments)
        check_optional_text(f"{where}.argument_error", call.argument_error)
        if call.replay is not None:
            check_json(f"{where}.replay", call.replay)


def _check_results(name: str, results: list[ToolResult] | None) -> None:
    if not results:
        return
    for i, result in enumerate(results):
        where = f"{name}.{i}"
        check_text(f"{where}.call_id", result.call_id)
        check_optional_text(f"{where}.name", result.name)
        check_optional_text(f"{where}.error", result.error)
        check_json(f"{where}.result", result.result)


def check_message(name: str, message: Message) -> None:
    """Check the text and tool data of a message (see the module docstring)."""
    fields = message.__dict__
    content = fields["content"]
    if isinstance(content, str):
        if not content.isascii() and has_surrogate(content):
            check_text(f"{name}.content", content)
    else:
        for i, part in enumerate(content):
            where = f"{name}.content.{i}"
            if isinstance(part, TextPart):
                check_text(f"{where}.text", part.text)
            else:
                check_json(where, part.model_dump(exclude_none=True))
    # Only the fields given are checked (most messages have neither a name nor tool data).
    if fields["name"] is not None:
        check_text(f"{name}.name", fields["name"])
    if fields["tool_call_id"] is not None:
        check_text(f"{name}.tool_call_id", fields["tool_call_id"])
    if fields["tool_calls"]:
        _check_calls(f"{name}.tool_calls", fields["tool_calls"])


def check_event(name: str, event: EventPayload) -> None:
    """Check every field of an event payload, extra keys included."""
    for key, value in event:
        check_json(f"{name}.{key}", value)


def check_entry_content(name: str, entry: EntryContent) -> None:
    """Check every value an entry carries: its message, event, tool calls, tool results and
    metadata (text, numbers, JSON and depth, see the module docstring)."""
    fields = entry.__dict__
    message = fields["message"]
    if message is not None:
        m = message.__dict__
        content = m["content"]
        # A message of ASCII text alone (most are) holds nothing to check.
        if not (
            type(content) is str
            and content.isascii()
            and m["name"] is None
            and m["tool_call_id"] is None
            and not m["tool_calls"]
        ):
            check_message(f"{name}.message", message)
    if fields["event"] is not None:
        check_event(f"{name}.event", fields["event"])
    if fields["tool_calls"]:
        _check_calls(f"{name}.tool_calls", fields["tool_calls"])
    if fields["tool_results"]:
        _check_results(f"{name}.tool_results", fields["tool_results"])
    if fields["metadata"] is not None:
        check_json(f"{name}.metadata", fields["metadata"])


__all__ = [
    "MAX_INT",
    "MAX_JSON_DEPTH",
    "MIN_INT",
    "check_entry_content",
    "check_event",
    "check_json",
    "check_message",
    "check_optional_text",
    "check_text",
    "has_surrogate",
    "json_copy",
]
