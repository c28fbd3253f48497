"""How an extraction cuts and shows the conversation: the windows of messages each model call
reads.

:func:`plan_windows` cuts the entries into windows of about ``window_tokens`` tokens (an entry
longer than a window in parts); each window's user turn (:func:`render_window`) is a line on what
follows, numbered ``<message>`` blocks, each with who wrote it and when in the time zone of the
extraction (:func:`message_header`), and a line asking for the JSON array. Events, redacted
entries and entries without text are not shown (:data:`SHOWN_TYPES`). Both readers of
:mod:`cogitator_memory.extraction` (items, graph) read the same windows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo

from pydantic import ValidationError

from ..errors import InvalidArgumentError
from ..lineage import entry_text
from ..threads import tree
from ..threads.records import REDACTED_KEY, MemoryEntry
from ..tokens import MESSAGE_OVERHEAD, count_tokens, truncate_to_tokens

#: The entry types shown to the model (events are not).
SHOWN_TYPES = frozenset({"message", "tool_result"})
#: Where a long entry's part may end: after a line, or after a sentence and the space behind it.
_BREAK = re.compile(r"\n+|(?<=[.!?])\s+")
#: Tokens a window spends besides its messages (the lines before and after them).
WINDOW_FRAME_TOKENS = 40
#: The smallest window: room for a message header and some text.
MIN_WINDOW_TOKENS = 100


@dataclass(frozen=True)
class WindowMessage:
    """One message block of a window: its number, its entry, and the text shown (a part of the
    entry's text when the entry was too long for one window: ``part`` of ``parts``)."""

    number: int
    entry: MemoryEntry
    text: str
    part: int = 1
    parts: int = 1


def speaker(entry: MemoryEntry) -> str:
    """Who wrote an entry, as the prompt shows it: the role, or ``tool`` for a tool result and
    ``summary`` for a compaction."""
    if entry.message is not None:
        return entry.message.role
    if entry.type == "tool_result":
        return "tool"
    return "summary" if entry.type == "compaction" else entry.type


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def message_header(message: WindowMessage, zone: tzinfo) -> str:
    """The opening tag of a message block: number, author, local time and, for a part, which."""
    entry = message.entry
    local = entry.created_at.astimezone(zone)
    attrs = [f'number="{message.number}"', f'from="{speaker(entry)}"']
    name = entry.message.name if entry.message is not None else None
    user = (entry.metadata or {}).get("user_id")
    if isinstance(user, str) and user and speaker(entry) == "user":
        attrs.append(f'user="{_attribute(user)}"')
    if name:
        attrs.append(f'name="{_attribute(name)}"')
    attrs.append(f'time="{local:%Y-%m-%d %H:%M} ({local:%a})"')
    if message.parts > 1:
        attrs.append(f'part="{message.part} of {message.parts}"')
    return f"<message {' '.join(attrs)}>"


def render_message(message: WindowMessage, zone: tzinfo) -> str:
    """One message block: the header, the text, the closing tag."""
    return f"{message_header(message, zone)}\n{message.text}\n</message>"


def render_window(messages: Sequence[WindowMessage], zone: tzinfo, zone_name: str, answer: str = "items") -> str:
    """The user turn of one extraction call: a line on what follows, every message block, and a
    line asking for the JSON array of ``answer`` (what the reader reads: ``items``, ``entities and
    relations``)."""
    first, last = messages[0].number, messages[-1].number
    span = f"message {first}" if first == last else f"messages {first} to {last}"
    intro = f"The conversation, {span}. Times are local to {zone_name}."
    outro = f"End of the conversation. Answer with the JSON array of {answer} only, as the system prompt says."
    return "\n\n".join([intro, *(render_message(m, zone) for m in messages), outro])


@dataclass(frozen=True)
class Window:
    """One extraction call's worth of messages: its number (from 1), the message blocks, the user
    turn they make and its estimated tokens."""

    number: int
    messages: list[WindowMessage]
    text: str
    tokens: int

    @property
    def entry_ids(self) -> list[str]:
        """The entries shown, in order, each once."""
        return list(dict.fromkeys(m.entry.id for m in self.messages))

    @property
    def entries_by_ref(self) -> dict[int, MemoryEntry]:
        """Message number -> entry, what :func:`~cogitator_memory.items.extract.parse_extraction` reads against."""
        return {m.number: m.entry for m in self.messages}


def _shown_text(entry: MemoryEntry) -> str:
    """What of an entry the model sees: nothing for events and redacted entries."""
    if entry.type not in SHOWN_TYPES or REDACTED_KEY in (entry.metadata or {}):
        return ""
    text = entry_text(entry)
    return text if text.strip() else ""


def _tokens_of(entry: MemoryEntry, text: str) -> int:
    """The tokens of an entry's text: the count the thread store kept (the package's estimate of
    the message, less its framing) when it is plausible for the text's length, else counted here."""
    kept = entry.token_count - (MESSAGE_OVERHEAD if entry.message is not None else 0)
    if kept > 0 and len(text) <= 8 * kept + 64:
        return kept
    return count_tokens(text)


def _part(text: str, tokens: int) -> str:
    """The first part of a text too long for a window: at most ``tokens``, ending at the last line
    or sentence end of its second half when there is one."""
    chunk = truncate_to_tokens(text, tokens)
    if not chunk:  # a single character wider than the budget
        return text[:1]
    if len(chunk) == len(text):
        return chunk
    ends = [m.end() for m in _BREAK.finditer(chunk, len(chunk) // 2)]
    return chunk[: ends[-1]] if ends else chunk


def check_window_tokens(value: object) -> int:
    """``window_tokens`` checked: an integer of at least :data:`MIN_WINDOW_TOKENS`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_WINDOW_TOKENS:
        raise InvalidArgumentError(
            "window_tokens", f"must be an integer of at least {MIN_WINDOW_TOKENS}, got {value!r}"
        )
    return value


def check_entries(entries: object) -> list[MemoryEntry]:
    """``entries`` as a list of :class:`~cogitator_memory.threads.MemoryEntry` (dicts validated);
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``entries[i]`` otherwise."""
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):
        raise InvalidArgumentError("entries", "must be a list of entries")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, MemoryEntry):
            out.append(entry)
        elif isinstance(entry, Mapping):
            try:
                out.append(MemoryEntry.model_validate(entry))
            except ValidationError as exc:
                raise tree.validation_error(f"entries[{i}]", exc) from None
        else:
            raise InvalidArgumentError(f"entries[{i}]", f"must be a MemoryEntry or a dict, got {type(entry).__name__}")
    return out


def plan_windows(
    entries: Sequence[MemoryEntry], window_tokens: int, zone: tzinfo, zone_name: str, *, answer: str = "items"
) -> list[Window]:
    """Consecutive windows of at most ``window_tokens``, filled in order, each with the user turn
    that shows it (:func:`render_window`; ``answer`` names what the model answers). An entry
    longer than a window is shown in parts of about a window each, cut at a line or sentence end
    where one is in the part's second half (quotes of a part are checked against the whole entry)."""
    budget = window_tokens - WINDOW_FRAME_TOKENS
    pieces: list[tuple[MemoryEntry, str, int, int, int]] = []  # entry, text, part, parts, tokens
    for entry in entries:
        text = _shown_text(entry)
        if not text:
            continue
        header = count_tokens(message_header(WindowMessage(999, entry, "", 9, 9), zone)) + 4
        size = _tokens_of(entry, text) + header
        if size <= budget:
            pieces.append((entry, text, 1, 1, size))
            continue
        parts: list[str] = []
        rest = text
        while rest.strip():
            chunk = _part(rest, max(budget - header, 1))
            parts.append(chunk)
            rest = rest[len(chunk) :]
        for i, chunk in enumerate(parts, 1):
            pieces.append((entry, chunk.strip(), i, len(parts), count_tokens(chunk) + header))
    windows: list[list[tuple[MemoryEntry, str, int, int, int]]] = []
    used = 0
    for piece in pieces:
        if windows and used + piece[4] <= budget:
            windows[-1].append(piece)
            used += piece[4]
        else:
            windows.append([piece])
            used = piece[4]
    out = []
    for number, group in enumerate(windows, 1):
        messages = [
            WindowMessage(i, entry, text, part, parts) for i, (entry, text, part, parts, _) in enumerate(group, 1)
        ]
        tokens = sum(p[4] for p in group) + WINDOW_FRAME_TOKENS
        out.append(Window(number, messages, render_window(messages, zone, zone_name, answer), tokens))
    return out


__all__ = [
    "MIN_WINDOW_TOKENS",
    "SHOWN_TYPES",
    "WINDOW_FRAME_TOKENS",
    "Window",
    "WindowMessage",
    "check_entries",
    "check_window_tokens",
    "message_header",
    "plan_windows",
    "render_message",
    "render_window",
    "speaker",
]
