"""CompactionService: replace the older part of a thread's branch by a summary, deleting nothing.

A compaction reads the compacted view of the active branch (:func:`read_compacted_history`
without the events), decides whether it is due (``threshold`` tokens or ``message_threshold``
entries), picks the entries to cover (all but the newest ``keep_recent``, never splitting a tool
call from its result) and asks the summarizer about them (after the earlier summary, so only what
is new is summarized again). It then reads the branch again and writes one compaction entry at
its end naming the first entry it keeps. The thread is left as it was when the summarizer fails,
times out or answers no usable summary (:func:`check_summary`: blank, holding text no store can
keep, fewer than :data:`MIN_SUMMARY_WORDS` words, shorter than :data:`MIN_SUMMARY_SHARE` of what
it replaces up to :data:`MIN_SUMMARY_TOKENS` tokens, or longer than what it replaces), and when an
entry it summarized was deleted, redacted or left the branch meanwhile. Entries added while the
model was writing are kept after the summary.
"""

from __future__ import annotations

import asyncio
import math
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import clock
from ..context.history import (
    SUMMARY_HEADING,
    TokenCache,
    compacted_history,
    compaction_of,
    dated_history,
    dated_order,
    entry_messages,
    has_paths,
    is_tool_result,
    summary_message,
)
from ..errors import InvalidArgumentError
from ..models.records import SummarizeFn, SummarizeOptions
from ..result import unwrap
from ..threads.base import BaseMemoryAdapter, MemoryAdapter
from ..threads.records import COMPACTION_SUMMARY_KEY, HISTORY_ENTRY_TYPES, CompactionEvent, MemoryEntry, Message
from ..threads.values import has_surrogate
from ..tokens import count_tokens
from .hierarchical import (
    DEFAULT_ARCS_PER_SAGA,
    DEFAULT_CHAPTER_CONCURRENCY,
    DEFAULT_CHAPTER_TOKENS,
    DEFAULT_CHAPTERS_PER_ARC,
    HierarchicalConfig,
    hierarchical_summary,
    kept_tail,
)
from .records import (
    COMPACTION_STRATEGIES,
    DEFAULT_KEEP_RECENT,
    DEFAULT_SUMMARY_TIMEOUT,
    HYBRID_WINDOW_LIMIT,
    CompactionError,
    CompactionResult,
)

#: The instruction sent to the summarizer when ``summary_prompt`` is not given.
COMPACTION_PROMPT = (
    "Summarize the conversation above so that it can continue without it. Keep names, numbers, "
    "dates, decisions, open questions and tasks. When it opens with a summary of an earlier part, "
    "fold that summary into yours. Answer with the summary only."
)

#: How many times the entry is written again when entries raced in between the last read and it.
_WRITE_TRIES = 3

#: A summary holds at least this many words (runs of letters or digits): "OK", "Done." or "..."
#: summarize nothing.
MIN_SUMMARY_WORDS = 3

#: A summary is at least this share of the tokens it replaces, up to :data:`MIN_SUMMARY_TOKENS`.
MIN_SUMMARY_SHARE = 0.02

#: The most tokens the share rule asks of a summary: a summary of 32 tokens or more is long
#: enough for a history of any length.
MIN_SUMMARY_TOKENS = 32

_WORD = re.compile(r"[^\W_]+")


def check_summary(summary: str, replaced: int) -> None:
    """Refuse an answer that is not a summary of ``replaced`` tokens (see the module docs):
    fewer than :data:`MIN_SUMMARY_WORDS` words, fewer tokens than :data:`MIN_SUMMARY_SHARE` of
    ``replaced`` (up to :data:`MIN_SUMMARY_TOKENS`), or more tokens than ``replaced``."""
    words = len(_WORD.findall(summary))
    if words < MIN_SUMMARY_WORDS:
        raise CompactionError(
            f"the summarizer's answer is no summary: {words} word(s), at least {MIN_SUMMARY_WORDS} are needed"
            f" ({summary!r:.80})"
        )
    tokens = count_tokens(summary)
    least = min(MIN_SUMMARY_TOKENS, math.ceil(replaced * MIN_SUMMARY_SHARE))
    if tokens < least:
        raise CompactionError(
            f"the summary ({tokens} tokens) is too short for what it replaces ({replaced} tokens):"
            f" at least {least} tokens are needed ({summary!r:.80})"
        )
    if tokens > replaced:
        raise CompactionError(f"the summary ({tokens} tokens) is longer than what it replaces ({replaced} tokens)")


def _positive(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(name, f"must be a positive integer or None, got {value!r}")
    return value


def _optional_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(name, f"must be a non-empty string or None, got {value!r}")
    return value


def _fingerprint(entry: MemoryEntry) -> tuple[str, bool]:
    """What must not change under a summary: the entry's text and whether it was redacted."""
    text = entry.message.text if entry.message is not None else ""
    return text, bool(entry.metadata and entry.metadata.get("redacted"))


@dataclass(slots=True)
class _Plan:
    previous: MemoryEntry | None
    entries: list[MemoryEntry]  # the conversation entries of the view, oldest first
    cut: int  # entries[:cut] are covered
    strategy: str


def _written(
    thread_id: str,
    original: int,
    view: Sequence[MemoryEntry],
    summary: str,
    entry: MemoryEntry,
    written_by: str,
    covered: Sequence[MemoryEntry],
) -> CompactionResult:
    """What a compaction written as ``entry`` returns, ``view`` being the history it leaves."""
    return CompactionResult(
        session_id=thread_id,
        original_messages=original,
        compacted_messages=len(view),
        summary_tokens=count_tokens(summary),
        entry_id=entry.id,
        strategy=written_by,
        covered=len(covered),
    )


def _kept_changing(thread_id: str) -> CompactionError:
    """The error of a compaction whose thread changed on every try to write it."""
    return CompactionError(f"thread {thread_id} kept changing while its compaction was written; try again")


class CompactionService:
    """Compacts threads of ``adapter`` (any store with branches: every built-in one), asking
    ``summarize`` (a :data:`~cogitator_memory.models.SummarizeFn`) for the summaries.

    ``timeout`` bounds each summarizer call in seconds. Compactions of one thread by one service
    run one after another. See ``docs/compaction.md``.
    """

    def __init__(
        self, adapter: MemoryAdapter, summarize: SummarizeFn, *, timeout: float = DEFAULT_SUMMARY_TIMEOUT
    ) -> None:
        dated = not has_paths(adapter)
        needs = ("add_entry", "get_entries", "delete_entry") if dated else ("add_entry", "get_path", "delete_entry")
        if not all(callable(getattr(adapter, name, None)) for name in needs):
            raise InvalidArgumentError("adapter", f"must be a thread store with {'(), '.join(needs)}()")
        if not callable(summarize):
            raise InvalidArgumentError("summarize", "must be an async function (messages, options) -> str")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidArgumentError("timeout", f"must be a positive number of seconds, got {timeout!r}")
        self.adapter = adapter
        #: Whether the store keeps no branches, so its history is in time order and a compaction
        #: is a summary message dated before the first kept entry, the covered entries deleted.
        self.dated = dated
        self.summarize = summarize
        self.timeout = float(timeout)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._tokens = TokenCache()
        # The tokens of the entries of each thread being compacted, by entry id: each counted once
        # per compaction, however long the thread (the cache above forgets when it is full).
        self._counted: dict[str, dict[str, int]] = {}

    def tokens_of(self, entry: MemoryEntry) -> int:
        """The entry's tokens, counted once per compaction (and per entry and text while the
        service's cache holds them)."""
        counted = self._counted.get(entry.thread_id)
        if counted is None:
            return self._tokens.tokens(entry)
        found = counted.get(entry.id)
        if found is None:
            found = counted[entry.id] = self._tokens.tokens(entry)
        return found

    async def compact(
        self,
        thread_id: str,
        *,
        strategy: str = "summary",
        threshold: int | None = None,
        message_threshold: int | None = None,
        keep_recent: int = DEFAULT_KEEP_RECENT,
        summary_model: str | None = None,
        summary_prompt: str | None = None,
        keep_recent_tokens: int | None = None,
        chapter_tokens: int = DEFAULT_CHAPTER_TOKENS,
        chapter_concurrency: int = DEFAULT_CHAPTER_CONCURRENCY,
        chapters_per_arc: int = DEFAULT_CHAPTERS_PER_ARC,
        arcs_per_saga: int = DEFAULT_ARCS_PER_SAGA,
    ) -> CompactionResult:
        """Compact the thread's active branch once it holds ``threshold`` tokens or
        ``message_threshold`` conversation entries (set at least one), keeping the newest
        ``keep_recent`` entries as they are.

        ``strategy="hierarchical"`` keeps a tree of checked atoms instead (see
        :mod:`cogitator_memory.compaction.hierarchical`): ``keep_recent_tokens`` (whole turns
        kept, in place of ``keep_recent``), ``chapter_tokens``, ``chapter_concurrency``,
        ``chapters_per_arc`` and ``arcs_per_saga`` apply to it only.

        Raises :class:`InvalidArgumentError` naming a bad argument, ``NotFoundError`` for a
        missing thread, :class:`CompactionError` when the compaction is refused (nothing is
        written then), and the store's error when it fails.
        """
        if not isinstance(thread_id, str) or not thread_id:
            raise InvalidArgumentError("thread_id", "must be a non-empty string")
        if strategy not in COMPACTION_STRATEGIES:
            raise InvalidArgumentError(
                "strategy", f"must be one of {', '.join(COMPACTION_STRATEGIES)}, got {strategy!r}"
            )
        threshold = _positive("threshold", threshold)
        message_threshold = _positive("message_threshold", message_threshold)
        if threshold is None and message_threshold is None:
            raise InvalidArgumentError("threshold", "set threshold or message_threshold (or both)")
        if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
            raise InvalidArgumentError("keep_recent", f"must be an integer >= 0, got {keep_recent!r}")
        options = SummarizeOptions(
            model=_optional_text("summary_model", summary_model),
            prompt=_optional_text("summary_prompt", summary_prompt) or COMPACTION_PROMPT,
        )
        config = HierarchicalConfig(
            keep_recent_tokens=keep_recent_tokens,
            chapter_tokens=chapter_tokens,
            chapter_concurrency=chapter_concurrency,
            chapters_per_arc=chapters_per_arc,
            arcs_per_saga=arcs_per_saga,
        )
        if strategy != "hierarchical" and config != HierarchicalConfig():
            raise InvalidArgumentError(
                "keep_recent_tokens", "and the chapter options apply to strategy='hierarchical' only"
            )
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = asyncio.Lock()
        async with lock:
            self._counted[thread_id] = {}
            try:
                if strategy == "hierarchical":
                    return await self._compact_hierarchical(
                        thread_id,
                        threshold=threshold,
                        message_threshold=message_threshold,
                        keep_recent=keep_recent,
                        config=config,
                        options=options,
                        summary_prompt=summary_prompt,
                    )
                return await self._compact(thread_id, strategy, threshold, message_threshold, keep_recent, options)
            finally:
                self._counted.pop(thread_id, None)

    async def _compact_hierarchical(
        self,
        thread_id: str,
        *,
        threshold: int | None,
        message_threshold: int | None,
        keep_recent: int,
        config: HierarchicalConfig,
        options: SummarizeOptions,
        summary_prompt: str | None,
    ) -> CompactionResult:
        """``compact(strategy="hierarchical")`` (under the thread's lock): what is due read as
        for a summary, its chapters summed up by :func:`~.hierarchical.hierarchical_summary`."""
        path = await self._read(thread_id)
        plan = self._plan(
            path, "summary", threshold, message_threshold, 0 if config.keep_recent_tokens is not None else keep_recent
        )
        view = self._view(path)
        if plan is None:
            return CompactionResult(thread_id, len(view), len(view), 0)
        cut = plan.cut
        if config.keep_recent_tokens is not None:
            cut = kept_tail(plan.entries, config.keep_recent_tokens, self.tokens_of)
        if cut == 0:
            return CompactionResult(thread_id, len(view), len(view), 0)
        covered = plan.entries[:cut]
        summary, levels = await hierarchical_summary(
            covered,
            plan.previous,
            config,
            self.summarize,
            self.tokens_of,
            options=options,
            summary_prompt=summary_prompt,
            timeout=self.timeout,
        )
        original = len(plan.entries) + (1 if plan.previous is not None else 0)
        return await self._write(thread_id, covered, original, summary, "hierarchical", {"levels": levels.dump()})

    async def _read(self, thread_id: str) -> list[MemoryEntry]:
        """The active branch (on a store without branches: every entry, in time order)."""
        if self.dated:
            found = unwrap(
                await self.adapter.get_entries(thread_id, types=HISTORY_ENTRY_TYPES, include_tool_calls=True)
            )
            return sorted(found, key=dated_order)
        return await self._path(thread_id, None)

    async def _path(self, thread_id: str, leaf_id: str | None) -> list[MemoryEntry]:
        """The branch to ``leaf_id`` (the active one with ``None``); from a built-in store as its
        own entry objects where it shares them (nothing here changes an entry it reads)."""
        where: dict[str, Any] = {
            "thread_id": thread_id,
            "leaf_id": leaf_id,
            "types": HISTORY_ENTRY_TYPES,
            "include_tool_calls": True,
        }
        if isinstance(self.adapter, BaseMemoryAdapter):
            return unwrap(await self.adapter.get_path(**where, copy=False))
        return unwrap(await self.adapter.get_path(**where))

    def _view(self, path: Sequence[MemoryEntry]) -> list[MemoryEntry]:
        """The compacted view of what :meth:`_read` read."""
        return dated_history(path) if self.dated else compacted_history(path)

    def _plan(
        self,
        path: Sequence[MemoryEntry],
        strategy: str,
        threshold: int | None,
        message_threshold: int | None,
        keep_recent: int,
    ) -> _Plan | None:
        view = self._view(path)
        previous = view[0] if view and compaction_of(view[0]) is not None else None
        entries = view[1:] if previous is not None else view
        tokens = sum(self.tokens_of(e) for e in entries)
        if previous is not None:
            tokens += count_tokens(summary_message(previous).text)
        due = (threshold is not None and tokens >= threshold) or (
            message_threshold is not None and len(entries) >= message_threshold
        )
        cut = max(0, len(entries) - keep_recent)
        while 0 < cut < len(entries) and is_tool_result(entries[cut]):
            cut -= 1  # a tool result stays with the call it answers
        if not due or cut == 0:
            return None
        if strategy == "hybrid":
            strategy = "sliding-window" if cut <= HYBRID_WINDOW_LIMIT else "summary"
        return _Plan(previous, entries, cut, strategy)

    async def _compact(
        self,
        thread_id: str,
        strategy: str,
        threshold: int | None,
        message_threshold: int | None,
        keep_recent: int,
        options: SummarizeOptions,
    ) -> CompactionResult:
        path = await self._read(thread_id)
        plan = self._plan(path, strategy, threshold, message_threshold, keep_recent)
        if plan is None:
            view = self._view(path)
            return CompactionResult(thread_id, len(view), len(view), 0)
        covered = plan.entries[: plan.cut]
        original = len(plan.entries) + (1 if plan.previous is not None else 0)
        previous_event = compaction_of(plan.previous) if plan.previous is not None else None
        if plan.strategy == "summary":
            summary = await self._summary(plan.previous, covered, options)
            written_by = "summary"
        else:
            left_out = f"[{len(covered)} earlier messages are left out.]"
            summary = f"{previous_event.summary}\n{left_out}" if previous_event is not None else left_out
            written_by = "sliding-window"
        return await self._write(thread_id, covered, original, summary, written_by)

    async def _write(
        self,
        thread_id: str,
        covered: Sequence[MemoryEntry],
        original: int,
        summary: str,
        written_by: str,
        extra: dict[str, Any] | None = None,
    ) -> CompactionResult:
        """Write the compaction entry at the end of the branch, after checking ``covered`` is on
        it as it was read; ``extra`` goes into the event as it is (hierarchical ``levels``)."""
        if self.dated:
            return await self._write_dated(thread_id, covered, original, summary, written_by, extra)
        expected = {e.id: _fingerprint(e) for e in covered}
        for _ in range(_WRITE_TRIES):
            first_kept = self._check(await self._read(thread_id), expected, covered[-1].id)
            entry = unwrap(
                await self.adapter.add_entry(
                    {
                        "thread_id": thread_id,
                        "type": "compaction",
                        "event": CompactionEvent(
                            summary=summary,
                            first_kept_entry_id=first_kept,
                            tokens_before=sum(self.tokens_of(e) for e in covered),
                            strategy=written_by,
                            **(extra or {}),
                        ),
                    }
                )
            )
            after = await self._path(thread_id, entry.id)
            try:
                now_first = self._check(after[:-1], expected, covered[-1].id)
            except CompactionError:
                await self.adapter.delete_entry(entry.id)
                raise
            if now_first == first_kept:
                return _written(thread_id, original, compacted_history(after), summary, entry, written_by, covered)
            unwrap(await self.adapter.delete_entry(entry.id))  # an entry raced in: write it again
        raise _kept_changing(thread_id)

    async def _write_dated(
        self,
        thread_id: str,
        covered: Sequence[MemoryEntry],
        original: int,
        summary: str,
        written_by: str,
        extra: dict[str, Any] | None,
    ) -> CompactionResult:
        """:meth:`_write` on a store without branches: a summary message dated just before the
        first kept entry, then the covered entries (and whatever the view no longer shows, such as
        the summary before) deleted. Readers go by the newest summary, so the view is the
        compacted one from the moment the summary is written, even before the deletions."""
        expected = {e.id: _fingerprint(e) for e in covered}
        last = covered[-1]
        tokens_before = sum(self.tokens_of(e) for e in covered)
        for _ in range(_WRITE_TRIES):
            entries = await self._read(thread_id)
            first_kept = self._check(entries, expected, last.id)
            kept = next((e for e in entries if e.id == first_kept), None) if first_kept is not None else None
            at = kept.created_at - timedelta(microseconds=1) if kept is not None else clock.now()
            at = max(at, last.created_at)  # ties sort the summary first (see dated_order)
            event = CompactionEvent(
                summary=summary,
                first_kept_entry_id=first_kept,
                tokens_before=tokens_before,
                strategy=written_by,
                **(extra or {}),
            )
            with clock.frozen_clock(at):
                entry = unwrap(
                    await self.adapter.add_entry(
                        {
                            "thread_id": thread_id,
                            "message": Message(role="user", content=f"{SUMMARY_HEADING}\n{summary}"),
                            "metadata": {COMPACTION_SUMMARY_KEY: event.model_dump(mode="json", exclude_none=True)},
                        }
                    )
                )
            after = await self._read(thread_id)
            try:
                now_first = self._check([e for e in after if e.id != entry.id], expected, last.id)
            except CompactionError:
                unwrap(await self.adapter.delete_entry(entry.id))
                raise
            view = dated_history(after)
            if now_first == first_kept and view and view[0].id == entry.id:
                shown = {e.id for e in view}
                for gone in after:
                    if gone.id not in shown and not gone.is_event:
                        unwrap(await self.adapter.delete_entry(gone.id))
                return _written(thread_id, original, view, summary, entry, written_by, covered)
            unwrap(await self.adapter.delete_entry(entry.id))  # an entry raced in: write it again
        raise _kept_changing(thread_id)

    @staticmethod
    def _check(path: Sequence[MemoryEntry], expected: dict[str, tuple[str, bool]], last_covered: str) -> str | None:
        """The first entry to keep (the one after the last covered entry on the branch), after
        checking that every covered entry is still on it as it was summarized."""
        seen = 0
        first_kept: str | None = None
        passed = False
        for entry in path:
            if entry.is_event or (entry.metadata and compaction_of(entry) is not None):
                continue
            if passed:
                first_kept = entry.id
                break
            want = expected.get(entry.id)
            if want is not None:
                if _fingerprint(entry) != want:
                    raise CompactionError(f"entry {entry.id} was redacted or changed while it was summarized")
                seen += 1
            if entry.id == last_covered:
                passed = True
        if seen != len(expected):
            raise CompactionError("entries being summarized were deleted or left the active branch meanwhile")
        return first_kept

    async def _summary(
        self, previous: MemoryEntry | None, covered: Sequence[MemoryEntry], options: SummarizeOptions
    ) -> str:
        messages: list[Message] = [summary_message(previous)] if previous is not None else []
        for entry in covered:
            messages.extend(entry_messages(entry))
        if not any(m.role != "system" for m in messages):
            messages.append(Message(role="user", content="(no messages)"))
        try:
            answer = await asyncio.wait_for(self.summarize(messages, options), self.timeout)
        except TimeoutError:
            raise CompactionError(f"the summarizer gave no answer within {self.timeout:g} s") from None
        except Exception as exc:  # the summarizer's own failure: nothing is written
            raise CompactionError(f"the summarizer failed: {exc}") from exc
        if not isinstance(answer, str) or not answer.strip() or has_surrogate(answer) or "\x00" in answer:
            raise CompactionError(f"the summarizer answered no usable summary: {answer!r:.200}")
        summary = answer.strip()
        replaced = sum(self.tokens_of(e) for e in covered)
        if previous is not None:
            replaced += count_tokens(summary_message(previous).text)
        check_summary(summary, replaced)
        return summary


__all__ = [
    "COMPACTION_PROMPT",
    "MIN_SUMMARY_SHARE",
    "MIN_SUMMARY_TOKENS",
    "MIN_SUMMARY_WORDS",
    "CompactionService",
    "check_summary",
]
