"""The compacted view of a branch, and reading only its newest part.

A compaction entry at the end of a branch names the first entry it keeps and holds a summary
of what came before. The compacted view of the branch is the summary, the kept entries and
everything after the compaction: :func:`compacted_history` makes it from a path read with
``types=HISTORY_ENTRY_TYPES``, :func:`read_compacted_history` reads it. When the newest
compaction names no first kept entry, or one that is no longer on the branch, its summary stands
in for everything before it. Older compactions are superseded by the newest; events are never
part of the view.

A store without branches (no ``get_path``, or one whose ``capabilities`` leave out
``"branches"``: see :func:`has_paths`) keeps its history in time order: a compaction there is a
summary message (metadata ``compaction_summary`` holding the compaction's payload) dated just
before the first entry it keeps, the entries it covers deleted. :func:`dated_history` makes the
view of such a store from its entries, and :func:`read_compacted_history` and
:class:`HistoryReader` read it that way.

:class:`HistoryReader` reads the newest part of the view that a budget can hold, paging back
with ``get_path(before=<entry id>)``, so a build costs the same on a long thread as on a short
one. It remembers per thread the compaction in effect below the newest entry it saw, so it
looks the compaction up again only when the branch moved under it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import InvalidArgumentError, NotFoundError
from ..result import MemoryResult, err, ok, unwrap
from ..threads.base import BaseMemoryAdapter, MemoryAdapter
from ..threads.records import (
    COMPACTION_SUMMARY_KEY,
    HISTORY_ENTRY_TYPES,
    CompactionEvent,
    MemoryEntry,
    Message,
    ToolResult,
    copy_message,
)
from ..tokens import count_entry_tokens, count_tokens, truncate_to_tokens

#: How the compaction summary is introduced in the messages.
SUMMARY_HEADING = "Summary of the earlier conversation:"


def compaction_of(entry: MemoryEntry) -> CompactionEvent | None:
    """The compaction payload of a compaction entry, or of a summary message written on a store
    without branches (metadata ``compaction_summary``), else ``None``."""
    if entry.type == "compaction":
        return entry.event if isinstance(entry.event, CompactionEvent) else None
    metadata = entry.metadata
    if metadata and entry.type == "message":
        raw = metadata.get(COMPACTION_SUMMARY_KEY)
        if isinstance(raw, dict):
            try:
                return CompactionEvent.model_validate(raw)
            except ValidationError:
                return None
    return None


def has_paths(memory: object) -> bool:
    """Whether ``memory`` keeps branches read with ``get_path`` (every built-in store does); a
    store without ``get_path``, or whose ``capabilities`` leave out ``"branches"``, keeps its
    history in time order (see :func:`dated_history`)."""
    if not callable(getattr(memory, "get_path", None)):
        return False
    capabilities = getattr(memory, "capabilities", None)
    return not isinstance(capabilities, set | frozenset) or "branches" in capabilities


def dated_order(entry: MemoryEntry) -> tuple[Any, int, int]:
    """The sort key of a store without branches: time, a summary before the entries of its
    microsecond, then ``seq``."""
    return entry.created_at, 0 if compaction_of(entry) is not None else 1, entry.seq


def dated_history(entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """The compacted view of a store without branches, from its entries in any order (read
    with ``types=HISTORY_ENTRY_TYPES``): in time order, the newest summary message (see the
    module docs) and the conversation entries dated after it, from its first kept entry on;
    without one, every conversation entry. Entries dated before the summary are left out."""
    ordered = sorted(entries, key=dated_order)
    last = -1
    for i in range(len(ordered) - 1, -1, -1):
        if compaction_of(ordered[i]) is not None:
            last = i
            break
    if last < 0:
        return [e for e in ordered if not e.is_event]
    summary = ordered[last]
    event = compaction_of(summary)
    assert event is not None
    after = [e for e in ordered[last + 1 :] if not e.is_event]
    if event.first_kept_entry_id is not None:
        for i, entry in enumerate(after):
            if entry.id == event.first_kept_entry_id:
                after = after[i:]
                break
    return [summary, *after]


def compacted_history(path: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """The compacted view of a branch read oldest first with ``types=HISTORY_ENTRY_TYPES``.

    Without a compaction: the conversation entries as they are. With one: the newest compaction
    entry (its summary stands in for what it covers), then the entries from its first kept
    entry on, then everything after it; events are left out.
    """
    last = -1
    for i in range(len(path) - 1, -1, -1):
        if compaction_of(path[i]) is not None:
            last = i
            break
    if last < 0:
        return [e for e in path if not e.is_event]
    compaction = path[last]
    event = compaction_of(compaction)
    assert event is not None
    start = last
    if event.first_kept_entry_id is not None:
        for i in range(last - 1, -1, -1):
            if path[i].id == event.first_kept_entry_id:
                start = i
                break
    kept = [e for e in path[start:last] if not e.is_event]
    after = [e for e in path[last + 1 :] if not e.is_event]
    return [compaction, *kept, *after]


async def read_compacted_history(
    memory: MemoryAdapter, *, thread_id: str, leaf_id: str | None = None
) -> MemoryResult[list[MemoryEntry]]:
    """The whole compacted view of the active branch (or of ``leaf_id``), tool calls included.

    On a store without branches (see :func:`has_paths`) the view of its entries in time order
    (:func:`dated_history`); ``leaf_id`` must be ``None`` there.
    """
    if not has_paths(memory):
        if leaf_id is not None:
            return err(InvalidArgumentError("leaf_id", "must be None: the store keeps no branches"))
        found = await memory.get_entries(thread_id, types=HISTORY_ENTRY_TYPES, include_tool_calls=True)
        if not found.success:
            return found
        return ok(dated_history(found.data or []))
    result = await memory.get_path(
        thread_id=thread_id, leaf_id=leaf_id, types=HISTORY_ENTRY_TYPES, include_tool_calls=True
    )
    if not result.success:
        return result
    return ok(compacted_history(result.data or []))


def summary_message(compaction: MemoryEntry) -> Message:
    """The message a compaction's summary is sent as (a user message, after the system message)."""
    event = compaction_of(compaction)
    summary = event.summary if event is not None else ""
    return Message(role="user", content=f"{SUMMARY_HEADING}\n{summary}")


def _result_text(result: ToolResult) -> str:
    if result.error:
        return f"Error: {result.error}"
    value = result.result
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def entry_messages(entry: MemoryEntry, *, copy: bool = True) -> list[Message]:
    """The messages an entry is sent as.

    The entry's message with the tool calls it carries (on the message or on the entry); an
    assistant entry that also holds the results of its calls is followed by one tool message per
    result. Events give nothing (a compaction is sent through :func:`summary_message`). The
    messages share nothing with the entry, unless ``copy=False``: then the entry's own message
    object is returned when it needs no change (for an entry just read, which nobody else holds).
    """
    message = entry.message
    if message is None:
        return []
    first = message
    if not message.tool_calls and entry.tool_calls:
        calls = [c.model_copy(deep=copy) for c in entry.tool_calls]
        first = message.model_copy(update={"tool_calls": calls}, deep=copy)
    elif copy:
        first = copy_message(message)
    out = [first]
    if entry.tool_results and message.role == "assistant":
        for result in entry.tool_results:
            out.append(
                Message(role="tool", content=_result_text(result), tool_call_id=result.call_id, name=result.name)
            )
    return out


def is_tool_result(entry: MemoryEntry) -> bool:
    """Whether the entry answers a tool call (a ``tool_result`` entry or a ``tool`` message)."""
    if entry.type == "tool_result":
        return True
    message = entry.message
    return message is not None and message.role == "tool"


def tool_note(entry: MemoryEntry, tokens: int) -> MemoryEntry | None:
    """The entry with its tool output replaced by a short note, or ``None`` when it holds none.

    Used for a tool result too large for the room left: the note keeps the call id, so the
    call it answers stays answered.
    """
    note = f"[tool result omitted: {tokens} tokens, too large for the context]"
    message = entry.message
    if is_tool_result(entry) and message is not None:
        results = None
        if entry.tool_results:
            results = [ToolResult(call_id=r.call_id, name=r.name, result=note) for r in entry.tool_results]
        return entry.model_copy(
            update={"message": message.model_copy(update={"content": note}), "tool_results": results}
        )
    if entry.tool_results and message is not None and message.role == "assistant":
        results = [ToolResult(call_id=r.call_id, name=r.name, result=note) for r in entry.tool_results]
        return entry.model_copy(update={"tool_results": results})
    return None


def reads_shared(memory: MemoryAdapter) -> bool:
    """Whether the history a :class:`HistoryReader` reads from ``memory`` holds the store's own
    entry objects (``get_path(copy=False)`` on a store that shares them, such as the in-memory
    one): nothing may change them, and what is handed on is copied."""
    return isinstance(memory, BaseMemoryAdapter) and memory.shares_entries


async def _history_page(
    memory: MemoryAdapter, thread_id: str, leaf_id: str | None, limit: int, before: str | None
) -> MemoryResult[list[MemoryEntry]]:
    """One page of the branch for a :class:`HistoryReader` (which changes nothing it reads)."""
    where: dict[str, Any] = {
        "thread_id": thread_id,
        "leaf_id": leaf_id,
        "limit": limit,
        "before": before,
        "types": HISTORY_ENTRY_TYPES,
        "include_tool_calls": True,
    }
    if isinstance(memory, BaseMemoryAdapter):  # only the built-in stores take copy=False
        return await memory.get_path(**where, copy=False)
    return await memory.get_path(**where)


class TokenCache:
    """Tokens of entries as a prompt carries them (text, tool-call arguments, tool results,
    images), counted once per entry and content.

    The saved ``token_count`` is not trusted: writers may save 0 or a count of other text, and a
    redaction leaves it as it was. Keys hold the entry id and its text, so a redacted entry is
    counted again. Bounded: cleared when it holds ``max_items``.
    """

    def __init__(self, max_items: int = 50_000) -> None:
        self.max_items = max_items
        self._counts: dict[tuple[str, str, int], int] = {}
        self._texts: dict[str, int] = {}
        self._cuts: dict[tuple[str, int, str], tuple[str, int]] = {}

    def text_tokens(self, text: str) -> int:
        """The tokens of a text that comes back turn after turn (a system prompt, pinned texts,
        facts, headings), counted once while it is among the last 1,024 counted."""
        found = self._texts.get(text)
        if found is None:
            found = count_tokens(text)
            if len(self._texts) >= 1024:
                self._texts.clear()
            self._texts[text] = found
        return found

    def cut(self, text: str, limit: int, ellipsis: str = "") -> tuple[str, int]:
        """``truncate_to_tokens(text, limit, ellipsis=ellipsis)`` and its tokens, for a text cut
        again and again (a turn sent as a neighbour at every build that recalls it): cut once
        while it is among the last ``max_items`` cut."""
        key = (text, limit, ellipsis)
        found = self._cuts.get(key)
        if found is None:
            short = truncate_to_tokens(text, limit, ellipsis=ellipsis)
            found = (short, count_tokens(short))
            if len(self._cuts) >= self.max_items:
                self._cuts.clear()
            self._cuts[key] = found
        return found

    def tokens(self, entry: MemoryEntry) -> int:
        """The entry's tokens."""
        message = entry.message
        text = message.text if message is not None else ""
        key = (entry.id, text, len(entry.tool_results or ()) + len(entry.tool_calls or ()))
        found = self._counts.get(key)
        if found is None:
            found = count_entry_tokens(entry)
            if len(self._counts) >= self.max_items:
                self._counts.clear()
            self._counts[key] = found
        return found


@dataclass(slots=True)
class HistoryWindow:
    """The newest part of a branch's compacted view.

    ``summary`` is the compaction in effect (``None`` without one); ``entries`` the conversation
    entries read, oldest first; ``complete`` whether they reach the start of the view (nothing
    older is left out); ``older`` the entries read past the limit (see :meth:`HistoryReader.read`)
    and ``listed_complete`` whether those reach the start; ``read`` how many entries the store returned; ``shared`` whether the
    entries are the store's own objects (read with ``get_path(copy=False)`` from a store that
    shares them): nothing may change them, and what is handed on is copied.
    """

    summary: MemoryEntry | None = None
    entries: list[MemoryEntry] = field(default_factory=list)
    complete: bool = True
    #: Entries of the view the store returned past the limit (the rest of the last page read),
    #: oldest first: history the budget leaves out, listed at no extra read.
    older: list[MemoryEntry] = field(default_factory=list)
    #: Whether ``older`` and ``entries`` together reach the start of the view.
    listed_complete: bool = True
    read: int = 0
    shared: bool = False
    #: The tokens of each entry read, by entry id.
    tokens: dict[str, int] = field(default_factory=dict)


class HistoryReader:
    """Reads the newest part of the compacted view that a budget can hold (see the module docs).

    Remembers, for up to ``max_threads`` threads, the compaction in effect below the newest
    entry it saw.
    """

    def __init__(self, max_threads: int = 1024) -> None:
        self.max_threads = max_threads
        #: The mean cost of the entries read lately, to size the first page of a read.
        self.mean_cost = 40.0
        self._known: OrderedDict[str, tuple[str, MemoryEntry | None]] = OrderedDict()

    def forget(self, thread_id: str | None = None) -> None:
        """Forget what is known of a thread (of every thread with ``None``)."""
        if thread_id is None:
            self._known.clear()
        else:
            self._known.pop(thread_id, None)

    async def read(
        self,
        memory: MemoryAdapter,
        thread_id: str,
        leaf_id: str | None = None,
        *,
        tokens: Callable[[MemoryEntry], int],
        token_limit: int | None = None,
        count_limit: int | None = None,
        tool_cap: int | None = None,
    ) -> HistoryWindow:
        """The newest entries of the view, until they hold more than ``token_limit`` tokens (one
        entry past it is read, so a caller knows there is more) or ``count_limit`` entries. The
        rest of the last page the store returned goes to ``older`` (listed as left out, not read
        for), and no further page is read.
        ``tool_cap`` caps what a tool result counts toward the limit (one larger is sent as a
        short note, so reading goes on past it).

        Raises the store's error (``NotFoundError`` for a missing thread or leaf).
        """
        if not has_paths(memory):
            return await self._read_dated(
                memory,
                thread_id,
                leaf_id,
                tokens=tokens,
                token_limit=token_limit,
                count_limit=count_limit,
                tool_cap=tool_cap,
            )
        if count_limit is not None:
            page_size = count_limit + 4
        elif token_limit is not None:
            page_size = max(8, int(token_limit / self.mean_cost * 1.1) + 4)
        else:
            page_size = 500
        page_size = min(page_size, 1000)
        window = HistoryWindow(complete=False, listed_complete=False, shared=reads_shared(memory))
        costs = window.tokens
        newest: list[MemoryEntry] = []  # newest first
        older: list[MemoryEntry] = []  # past the limit, newest first
        pages: list[list[MemoryEntry]] = []
        used = 0
        compaction: MemoryEntry | None = None
        stop_at: str | None = None
        before: str | None = None
        done = False
        full = False  # the limit is reached: the rest of this page is listed in ``older``
        while not done:
            page = unwrap(
                await _history_page(memory, thread_id, leaf_id if before is None else None, page_size, before)
            )
            pages.append(page)
            window.read += len(page)
            for entry in reversed(page):
                kind = entry.type
                if kind != "message" and kind != "tool_result":  # a compaction or another event
                    event = compaction_of(entry)
                    if event is not None and compaction is None:
                        compaction = entry
                        stop_at = event.first_kept_entry_id
                        if stop_at is not None:
                            # A first kept entry that is gone, or that is no older entry of this
                            # thread (so not on the branch): the summary covers everything before it.
                            kept = await memory.get_entry(stop_at)
                            found = kept.data
                            if kept.success and (
                                found is None or found.thread_id != entry.thread_id or found.seq >= entry.seq
                            ):
                                stop_at = None
                        if stop_at is None:
                            window.listed_complete = True
                            window.complete = not full
                            done = True
                            break
                    continue
                if full:
                    older.append(entry)
                    if stop_at is not None and entry.id == stop_at:
                        window.listed_complete = True
                        break
                    continue
                newest.append(entry)
                cost = costs[entry.id] = tokens(entry)
                if tool_cap is not None and cost > tool_cap and is_tool_result(entry):
                    cost = tool_cap  # sent as a short note when it does not fit
                used += cost
                if stop_at is not None and entry.id == stop_at:
                    window.complete = window.listed_complete = True
                    done = True
                    break
                if (token_limit is not None and used > token_limit) or (
                    count_limit is not None and len(newest) >= count_limit
                ):
                    full = True  # no further page is read; what this one holds is listed
            if done:
                break
            if len(page) < page_size and not window.listed_complete:
                window.listed_complete = True
                window.complete = not full
            if full or window.listed_complete:
                break
            before = page[0].id
            page_size = min(page_size * 2, 2000)
        if compaction is None and not window.listed_complete:
            compaction = await self._compaction_below(memory, thread_id, leaf_id, pages)
        if pages and pages[0]:
            self._known[thread_id] = (pages[0][-1].id, compaction)
            self._known.move_to_end(thread_id)
            while len(self._known) > self.max_threads:
                self._known.popitem(last=False)
        if newest and token_limit is not None:
            self.mean_cost = 0.7 * self.mean_cost + 0.3 * max(1.0, used / len(newest))
        newest.reverse()
        older.reverse()
        window.entries = newest
        window.older = older
        window.summary = compaction
        return window

    async def _read_dated(
        self,
        memory: MemoryAdapter,
        thread_id: str,
        leaf_id: str | None,
        *,
        tokens: Callable[[MemoryEntry], int],
        token_limit: int | None,
        count_limit: int | None,
        tool_cap: int | None,
    ) -> HistoryWindow:
        """:meth:`read` on a store without branches: its whole view, read at once (the entries a
        compaction covers are deleted there, so it holds the summary and what came after)."""
        view = unwrap(await read_compacted_history(memory, thread_id=thread_id, leaf_id=leaf_id))
        summary = view[0] if view and compaction_of(view[0]) is not None else None
        entries = view[1:] if summary is not None else view
        window = HistoryWindow(summary=summary, complete=False, read=len(view))
        newest: list[MemoryEntry] = []
        used = 0
        for entry in reversed(entries):
            newest.append(entry)
            cost = window.tokens[entry.id] = tokens(entry)
            if tool_cap is not None and cost > tool_cap and is_tool_result(entry):
                cost = tool_cap
            used += cost
            if (token_limit is not None and used > token_limit) or (
                count_limit is not None and len(newest) >= count_limit
            ):
                break
        window.complete = len(newest) == len(entries)
        newest.reverse()
        window.entries = newest
        window.older = list(entries[: len(entries) - len(newest)])
        return window

    async def _compaction_below(
        self, memory: MemoryAdapter, thread_id: str, leaf_id: str | None, pages: list[list[MemoryEntry]]
    ) -> MemoryEntry | None:
        """The newest compaction of the branch, older than everything read (``pages``)."""
        known = self._known.get(thread_id)
        if known is not None and any(e.id == known[0] for page in pages for e in reversed(page)):
            cached = known[1]
            if cached is None:
                return None
            still = await memory.get_entry(cached.id)
            if still.success and still.data is not None:
                return cached
        found = await memory.get_path(thread_id=thread_id, leaf_id=leaf_id, limit=1, types=["compaction"])
        if not found.success:
            if found.error_type is NotFoundError:
                return None
            unwrap(found)
        return found.data[0] if found.data else None


__all__ = [
    "SUMMARY_HEADING",
    "HistoryReader",
    "HistoryWindow",
    "TokenCache",
    "compacted_history",
    "compaction_of",
    "dated_history",
    "dated_order",
    "entry_messages",
    "has_paths",
    "is_tool_result",
    "read_compacted_history",
    "reads_shared",
    "summary_message",
    "tool_note",
]
