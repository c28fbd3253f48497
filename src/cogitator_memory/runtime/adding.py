"""Adding turns through :class:`~cogitator_memory.runtime.Memory` (a mixin of the facade):
:meth:`Adding.add` checks a conversation's messages, writes them all or none next to each other
on the thread (a retry with an idempotency key writes nothing twice), indexes them, then runs
what the config asks after a write (compaction, extraction), reporting a failure there instead
of raising it. See ``docs/runtime.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from .. import clock
from ..errors import ConflictError, InvalidArgumentError
from ..ids import thread_id as new_thread_id
from ..items.records import NewMemoryItem
from ..models.convert import from_anthropic_messages, from_openai_messages
from ..result import unwrap
from ..threads import tree
from ..threads.records import REDACTED_KEY, MemoryEntry, NewMemoryEntry

if TYPE_CHECKING:
    from .config import MemoryConfig

#: The facade's logger: what fails after a write is a warning of ``cogitator_memory.runtime.memory``.
logger = logging.getLogger("cogitator_memory.runtime.memory")


MessageFormat = Literal["openai", "anthropic"]
#: The Anthropic content blocks OpenAI's messages never hold.
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})


#: The steps :meth:`Memory.add` runs once the turns are stored.
AddStage = Literal["compaction", "extraction"]


@dataclass(frozen=True, slots=True)
class AddError:
    """A step :meth:`Memory.add` ran after storing the turns that failed: ``stage`` names it,
    ``message`` says what failed, ``error`` is the exception (the turns stay stored)."""

    stage: AddStage
    message: str
    error: Exception = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class AddResult:
    """What :meth:`Memory.add` wrote: the thread and the entries, in order.

    ``errors`` lists the steps run after the write that failed (compaction, extraction), each an
    :class:`AddError`; the entries are stored either way, so the call is not to be repeated for
    them. ``replayed`` is true when the ``idempotency_key`` named an add already stored: nothing
    was written and ``entries`` are that add's.
    """

    thread_id: str
    entries: list[MemoryEntry] = field(default_factory=list)
    errors: list[AddError] = field(default_factory=list)
    replayed: bool = False


def _keyed_ids(thread_id: str, key: str, count: int) -> list[str]:
    """The entry ids of an add with an idempotency key: the same for the same thread and key,
    so a retry finds what the first call wrote (and a store refuses a second write of an id)."""
    digest = hashlib.sha256(f"{thread_id}\x00{key}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    first = f"entry_k{digest}_0"
    return [_keyed_id(first, n) for n in range(count)]


def _keyed_id(first: str, n: int) -> str:
    """The ``n``-th keyed id of the add whose first keyed id is ``first``."""
    return f"{first.rsplit('_', 1)[0]}_{n}"


def message_format(messages: Sequence[Any], system: Any = None) -> MessageFormat:
    """Anthropic's shape when a ``system`` is given or a message holds a block only Anthropic
    has (``tool_use``, ``tool_result``, an image with a ``source``), else OpenAI's."""
    if system is not None:
        return "anthropic"
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, Mapping) else getattr(block, "type", None)
            has_source = (
                block.get("source") if isinstance(block, Mapping) else getattr(block, "source", None)
            ) is not None
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and has_source):
                return "anthropic"
    return "openai"


class Adding:
    """The facade's :meth:`add` and what a writer of its own shares with it
    (:meth:`thread_lock`, :meth:`after_write`)."""

    if TYPE_CHECKING:  # the facade's (see :class:`~cogitator_memory.runtime.Memory`)
        config: MemoryConfig
        enabled: bool
        adapter: Any
        indexer: Any
        compaction: Any
        extractor: Any
        _add_locks: MutableMapping[str, asyncio.Lock]

        def _require(self) -> None: ...
        def _agent(self, agent_id: str | None) -> str: ...

    async def add(
        self,
        messages: Sequence[Any],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        system: Any = None,
        format: MessageFormat | None = None,
        idempotency_key: str | None = None,
        created_at: datetime | None = None,
    ) -> AddResult:
        """Add a conversation's messages (OpenAI's or Anthropic's shape, told apart by
        :func:`message_format` unless ``format`` says) to ``thread_id``, created when missing for
        ``agent_id`` (default the config's) with ``user_id`` in its metadata. Without
        ``thread_id`` a new thread is made. ``system`` is an Anthropic request's system prompt.

        ``created_at`` dates the messages when they were said, for a conversation imported after
        the fact (a session of last May): recall then finds them for a question about that time
        and reads their time words ("tomorrow") from it. Every message of the call gets it (add
        a conversation session by session, or message by message, to date each); default now.
        A naive datetime is taken as UTC; a time in the future raises
        :class:`InvalidArgumentError`.

        Every message is checked before any is written (bad input raises
        :class:`InvalidArgumentError`, writing nothing), and the messages are written all or
        none, next to each other on the thread's active branch even when other adds to the
        thread run at the same time in this process. Then the thread is compacted when the
        config asks and its messages are read for memory items when extraction is on; a failure
        there is logged and reported in :attr:`AddResult.errors`, never raised: the turns stay.

        ``idempotency_key`` (with a ``thread_id``) makes a retry safe: an add whose key and
        thread match an add already stored writes nothing and returns that add's entries
        (``replayed``); the same key with other messages raises :class:`InvalidArgumentError`.
        """
        self._require()
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        key = tree.check_optional_id("idempotency_key", idempotency_key)
        if key is not None and thread_id is None:
            raise InvalidArgumentError("idempotency_key", "needs a thread_id: a retry must name the thread it adds to")
        tid = new_thread_id() if thread_id is None else tree.check_id("thread_id", thread_id)
        said = tree.check_said_at("created_at", created_at, clock.now())
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise InvalidArgumentError("messages", "must be a list of chat messages")
        if format not in (None, "openai", "anthropic"):
            raise InvalidArgumentError("format", f"must be 'openai' or 'anthropic', got {format!r}")
        shape = format or message_format(messages, system)
        if shape == "anthropic":
            new = from_anthropic_messages(messages, thread_id=tid, system=system)
        else:
            if system is not None:
                raise InvalidArgumentError("system", "is Anthropic's; OpenAI messages carry it as a system message")
            new = from_openai_messages(messages, thread_id=tid)
        if said is not None:
            new = [e.model_copy(update={"created_at": said}) for e in new]
        if not self.enabled:
            return AddResult(thread_id=tid)
        async with self.thread_lock(tid):
            existing = unwrap(await self.adapter.get_thread(tid))
            if existing is not None:
                owner = (existing.metadata or {}).get("user_id")
                if user is not None and owner is not None and owner != user:
                    raise InvalidArgumentError("thread_id", f"{tid} is another user's thread")
            stored: list[MemoryEntry] = []
            if key is not None:
                new = [e.model_copy(update={"id": i}) for e, i in zip(new, _keyed_ids(tid, key, len(new)), strict=True)]
                if existing is not None:
                    stored = await self._stored_add(new)
                    if stored and len(stored) == len(new):
                        await self._indexed(tid, stored)  # a first add cut short may not have been
                        return AddResult(thread_id=tid, entries=stored, replayed=True)
            if existing is None:
                metadata = {"user_id": user} if user is not None else None
                unwrap(await self.adapter.create_thread(agent, metadata=metadata, thread_id=tid))
            try:
                written = await self._write(new, stored)
            except BaseException as exc:
                if key is not None and isinstance(exc, ConflictError):
                    # Another process wrote this key's entries meanwhile: that add is this one.
                    stored = await self._stored_add(new)
                    if stored and len(stored) == len(new):
                        await self._indexed(tid, stored)
                        return AddResult(thread_id=tid, entries=stored, replayed=True)
                # The thread made here goes too, unless another process wrote to it meanwhile.
                if existing is None and not unwrap(await self.adapter.get_entries(tid, limit=1, types="all")):
                    await self.adapter.delete_thread(tid)
                raise
        if self.indexer is not None:  # the turns are in the recall index before add returns
            await self.indexer.flush()
        errors = await self.after_write(tid, written, agent_id=agent, user_id=user)
        return AddResult(thread_id=tid, entries=written, errors=errors)

    async def _indexed(self, tid: str, entries: list[MemoryEntry]) -> None:
        """Write the recall records of ``entries`` of ``tid`` now (what a replayed add returns)."""
        if self.indexer is not None:
            thread = unwrap(await self.adapter.get_thread(tid))
            if thread is not None:
                await self.indexer.index_entries(thread, entries)

    async def _stored_add(self, keyed: list[NewMemoryEntry]) -> list[MemoryEntry]:
        """The entries of an earlier add of these keyed entries still in the store, in order
        (fewer than asked when that add was cut short; none when there was no such add).

        Raises :class:`InvalidArgumentError` for ``idempotency_key`` when the key was used for
        other messages (their number, kind or text differ; a redacted entry is taken as it
        was)."""
        stored: list[MemoryEntry] = []
        for entry in keyed:
            found = unwrap(await self.adapter.get_entry(cast(str, entry.id)))
            if found is None:
                break
            if found.thread_id != entry.thread_id or (
                not (found.metadata or {}).get(REDACTED_KEY)
                and (found.type != entry.type or found.message != entry.message)
            ):
                raise InvalidArgumentError("idempotency_key", "was used for other messages of this thread")
            stored.append(found)
        if stored and len(stored) == len(keyed):
            beyond = _keyed_id(cast(str, keyed[0].id), len(keyed))
            if unwrap(await self.adapter.get_entry(beyond)) is not None:
                raise InvalidArgumentError("idempotency_key", "was used for other messages of this thread")
        return stored

    async def _write(self, new: list[NewMemoryEntry], stored: list[MemoryEntry]) -> list[MemoryEntry]:
        """Write ``new``, less the first ones already ``stored`` (by an add cut short), after the
        active leaf; on a failure take out what this call wrote.

        Each entry goes after the active leaf, not after an explicit parent: a message added
        to the thread in between (by another process, or since an add was cut short) then
        stays on the active path instead of on a branch that hides it or these from
        :meth:`history`. Adds of this :class:`Memory` do not come in between (:meth:`add`'s lock)."""
        written = list(stored)
        try:
            for entry in new[len(stored) :]:
                written.append(unwrap(await self.adapter.add_entry(entry)))
        except BaseException:
            for entry_written in reversed(written[len(stored) :]):
                await self.adapter.delete_entry(entry_written.id)
            raise
        return written

    def thread_lock(self, thread_id: str) -> asyncio.Lock:
        """The lock :meth:`add` holds while it writes to ``thread_id``: a writer of its own (an
        integration's session) takes it too, so its turns and an add's do not interleave."""
        lock = self._add_locks.get(thread_id)
        if lock is None:
            lock = self._add_locks[thread_id] = asyncio.Lock()
        return lock

    async def after_write(
        self, thread_id: str, written: list[MemoryEntry], *, agent_id: str, user_id: str | None
    ) -> list[AddError]:
        """What :meth:`add` does once its turns are stored, for a writer of its own: compact the
        thread and extract memory items from ``written``, as the config asks. A step that fails
        is logged and returned, never raised (the turns are stored)."""
        tid, agent, user = thread_id, agent_id, user_id
        cfg = self.config
        errors: list[AddError] = []
        if self.compaction is not None and cfg.compaction is not None:
            try:
                await self.compaction.compact(
                    tid,
                    strategy=cfg.compaction.strategy,
                    message_threshold=cfg.compaction.threshold,
                    threshold=cfg.compaction.tokens,
                    keep_recent=cfg.compaction.keep_recent,
                )
            except Exception as exc:
                errors.append(AddError("compaction", str(exc) or type(exc).__name__, exc))
        if self.extractor is not None and written:
            try:
                await self.extractor.extract(
                    written, scope={"agent_id": agent, "user_id": user}, user_id=user, before_write=self._entries_left
                )
            except Exception as exc:
                errors.append(AddError("extraction", str(exc) or type(exc).__name__, exc))
        for error in errors:
            logger.warning("add to thread %s: %s failed, the turns are stored: %s", tid, error.stage, error.message)
        return errors

    async def _entries_left(self, items: list[NewMemoryItem]) -> list[NewMemoryItem]:
        """The items extraction is about to write, less what stood on entries deleted or redacted
        while the model answered: an item keeps the quotes of the entries still there and is
        dropped when none is left (quotes of no entry, such as a file's, are kept)."""
        named = {e.entry_id for item in items for e in item.evidence if e.entry_id}
        gone: set[str] = set()
        for entry_id in named:
            entry = unwrap(await self.adapter.get_entry(entry_id))
            if entry is None or (entry.metadata or {}).get(REDACTED_KEY):
                gone.add(entry_id)
        if not gone:
            return items
        kept: list[NewMemoryItem] = []
        for item in items:
            evidence = [e for e in item.evidence if e.entry_id not in gone]
            if len(evidence) == len(item.evidence):
                kept.append(item)
            elif evidence:
                kept.append(item.model_copy(update={"evidence": evidence}))
        return kept


__all__ = ["AddError", "AddResult", "AddStage", "Adding", "MessageFormat", "message_format"]
