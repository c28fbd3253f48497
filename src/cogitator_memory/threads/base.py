"""The thread-store contract: :class:`MemoryAdapter` for users, :class:`BaseMemoryAdapter` for store authors.

Users type against the :class:`MemoryAdapter` protocol. A store subclasses
:class:`BaseMemoryAdapter`, in which every public method is written once (argument checks,
defaults, copies, change events, result wrapping), and implements the underscore primitives
for its engine. Each primitive receives checked arguments, runs as one atomic operation on the
engine, and raises :class:`~cogitator_memory.errors.MemoryStoreError` subclasses for expected
failures; any other exception is mapped by :meth:`BaseMemoryAdapter._map_error`.

A store written from scratch (not on the base class) reports its changes by extending
:class:`ChangeReportingMemoryAdapter` and passing each write's result through ``reported()``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from abc import abstractmethod
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import ValidationError

from .. import clock
from ..errors import (
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
)
from ..ids import entry_id as make_entry_id
from ..ids import thread_id as make_thread_id
from ..lifecycle import Capability, StoreLifecycle
from ..result import MemoryResult, ok, ok_none
from . import tree, values
from .records import (
    ChangeEvent,
    EntryRedaction,
    MemoryEntry,
    NewMemoryEntry,
    Thread,
    ThreadPage,
)

logger = logging.getLogger("cogitator_memory")

T = TypeVar("T")

ChangeListener = Callable[[ChangeEvent], object]
"""A listener of :meth:`on_change`: called with each change; may return an awaitable, which is scheduled."""

TypesArg = str | Iterable[str] | None


@runtime_checkable
class MemoryAdapter(Protocol):
    """What every thread store offers. All calls return a :class:`~cogitator_memory.MemoryResult`.

    See ``docs/threads.md`` for the contract of each call; :mod:`cogitator_memory.testing` checks it.
    """

    @property
    def provider(self) -> str:
        """The engine's name: ``memory``, ``sqlite``, ``postgres``, ``redis``, ``mongodb`` or your own."""
        ...

    async def connect(self) -> MemoryResult[None]: ...
    async def disconnect(self) -> MemoryResult[None]: ...
    async def health_check(self) -> MemoryResult[None]: ...

    async def create_thread(
        self, agent_id: str, metadata: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> MemoryResult[Thread]: ...
    async def get_thread(self, thread_id: str) -> MemoryResult[Thread | None]: ...
    async def update_thread(
        self, thread_id: str, metadata: dict[str, Any], *, replace: bool = False
    ) -> MemoryResult[Thread]: ...
    async def delete_thread(self, thread_id: str) -> MemoryResult[None]: ...
    async def list_threads(
        self,
        *,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> MemoryResult[ThreadPage]: ...

    async def add_entry(self, entry: NewMemoryEntry | dict[str, Any]) -> MemoryResult[MemoryEntry]: ...
    async def get_entries(
        self,
        thread_id: str,
        *,
        limit: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        types: TypesArg = None,
        include_tool_calls: bool = False,
    ) -> MemoryResult[list[MemoryEntry]]: ...
    async def get_entry(self, entry_id: str) -> MemoryResult[MemoryEntry | None]: ...
    async def delete_entry(self, entry_id: str) -> MemoryResult[None]: ...
    async def clear_thread(self, thread_id: str) -> MemoryResult[None]: ...

    async def get_path(
        self,
        thread_id: str,
        *,
        leaf_id: str | None = None,
        limit: int = 0,
        before: datetime | str | None = None,
        types: TypesArg = None,
        include_tool_calls: bool = False,
    ) -> MemoryResult[list[MemoryEntry]]: ...
    async def rewind(self, thread_id: str, to_entry_id: str) -> MemoryResult[Thread]: ...
    async def checkout(self, thread_id: str, entry_id: str) -> MemoryResult[Thread]: ...
    async def fork_thread(
        self, thread_id: str, at_entry_id: str, new_thread_id: str | None = None
    ) -> MemoryResult[Thread]: ...
    async def redact_entry(
        self, entry_id: str, redaction: EntryRedaction | dict[str, Any]
    ) -> MemoryResult[MemoryEntry | None]: ...

    def on_change(self, listener: ChangeListener) -> Callable[[], None]: ...


class ChangeReportingMemoryAdapter:
    """Change listeners for a store: :meth:`on_change`, and :meth:`reported` for its writes.

    Listeners run in the order they subscribed, after the write committed. A listener that
    raises is logged and does not fail the write; one that returns an awaitable has it
    scheduled as a task on the running loop.
    """

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[ChangeListener] = []
        self._listener_tasks: set[asyncio.Task[Any]] = set()

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` with every change; returns the function that unsubscribes it."""
        if not callable(listener):
            raise InvalidArgumentError("listener", "must be callable")
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    @property
    def has_listeners(self) -> bool:
        """Whether anyone listens (stores skip building events otherwise)."""
        return bool(self._listeners)

    def emit(self, event: ChangeEvent) -> None:
        """Tell every listener about ``event``."""
        for listener in list(self._listeners):
            try:
                outcome = listener(event)
            except Exception:
                logger.exception("change listener failed on %s", event.type)
                continue
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(outcome)
                self._listener_tasks.add(task)
                task.add_done_callback(self._listener_done)

    def _listener_done(self, task: asyncio.Task[Any]) -> None:
        self._listener_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("change listener failed", exc_info=task.exception())

    def reported(
        self, result: MemoryResult[T], event: ChangeEvent | Callable[[T], ChangeEvent | None] | None
    ) -> MemoryResult[T]:
        """Pass a write's result through: on success, emit ``event`` (or what it builds from the data)."""
        if result.success and self._listeners and event is not None:
            built = event if isinstance(event, ChangeEvent) else event(result.data)  # type: ignore[arg-type]
            if built is not None:
                self.emit(built)
        return result


class BaseMemoryAdapter(ChangeReportingMemoryAdapter, StoreLifecycle):
    """Base class of every built-in thread store; subclass it for a store of your own.

    It checks arguments, fills defaults, wraps results, reports changes and keeps the tree rules;
    a subclass implements the underscore primitives for its engine (see the module docstring).
    """

    provider: ClassVar[str] = "custom"
    #: What the store supports beyond the thread contract.
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"branches", "redaction", "health"})
    #: Whether ``get_path(copy=False)`` may return the store's own entry objects (see
    #: :meth:`_get_path_shared`); readers that hand entries on copy them when it does.
    shares_entries: ClassVar[bool] = False

    # ----- engine primitives ---------------------------------------------------------------

    async def _recall_forget(self, *, entry_id: str | None = None, thread_id: str | None = None) -> None:
        """Take an entry's (or a whole thread's) records out of the store's recall index before
        the entry is deleted or redacted: nothing here; a store keeping a recall index
        (:class:`~cogitator_memory.index.RecallIndexMixin`) deletes them."""
        return None

    @abstractmethod
    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        """Create the thread, or merge ``metadata`` into the one that exists (keeping its agent,
        entries and ``created_at``; ``updated_at`` becomes ``now``)."""

    @abstractmethod
    async def _get_thread(self, thread_id: str) -> Thread | None: ...

    @abstractmethod
    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        """Atomically merge (or replace) the metadata; ``None`` when the thread is missing."""

    @abstractmethod
    async def _delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and its entries; whether it existed."""

    @abstractmethod
    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        """Up to ``limit`` threads in (updated_at desc, id desc) order, strictly after ``after``
        (updated_at in microseconds, id), filtered by agent and update time (after < t < before)."""

    @abstractmethod
    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        """Atomically: append the entry after ``entry.parent_id`` (or the active leaf; with
        ``entry.root`` as a root, without a parent), with the thread's next ``seq``, and move the
        active leaf to it unless ``entry.activate`` is false. Raise ``NotFoundError`` for a missing
        thread or parent, ``ConflictError`` for a parent of another thread or an ``entry_id``
        already taken (by an entry of any thread). ``token_count`` is the count the entry came
        with, or ``None``: a store that writes the count down takes
        ``tree.counted(entry, token_count)``; ``tree.build_entry`` given ``None`` makes an entry
        that counts its tokens when first read (see :class:`MemoryEntry`)."""

    @abstractmethod
    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        """Entries of every branch in ``seq`` order (the newest ``limit`` when > 0), created
        after ``after`` and before ``before``, of ``types`` (``None``: all); ``None`` when the
        thread is missing."""

    @abstractmethod
    async def _get_entry(self, entry_id: str) -> MemoryEntry | None: ...

    @abstractmethod
    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        """Splice the entry out (children to its parent, the active leaf to its parent when it
        was the leaf); the deleted entry, or ``None`` when it did not exist."""

    @abstractmethod
    async def _clear_thread(self, thread_id: str) -> bool:
        """Delete every entry of the thread and unset its active leaf; whether the thread exists."""

    @abstractmethod
    async def _get_path(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        """The branch from the root to ``leaf_id`` (the active leaf when ``None``), oldest first,
        the newest ``limit`` matching entries when > 0, reading no other branch. ``None`` when
        the thread is missing; ``NotFoundError`` when the leaf is not an entry of the thread."""

    async def _get_path_shared(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        """:meth:`_get_path` for a reader that changes nothing: a store that keeps entries as
        objects may return its own instead of copies. By default, :meth:`_get_path`."""
        return await self._get_path(thread_id, leaf_id, limit=limit, before=before, types=types)

    @abstractmethod
    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        """Make ``entry_id`` the active leaf. With ``on_active_path`` it must be on the active
        branch (``ConflictError`` otherwise). ``NotFoundError`` for a missing thread or entry."""

    @abstractmethod
    async def _replace_entry(self, entry: MemoryEntry) -> None:
        """Store new content (message, tool data, metadata) for an existing entry, in place."""

    @abstractmethod
    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        """Atomically: create ``fork`` with ``entries`` (``ConflictError`` when its id is taken)
        and list it in the origin's ``memory_forks``. Returns the fork."""

    # ----- threads -------------------------------------------------------------------------

    async def create_thread(
        self, agent_id: str, metadata: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> MemoryResult[Thread]:
        """Create a thread of ``agent_id``. With the id of an existing thread it is an upsert: the
        entries, agent and ``created_at`` stay and ``metadata`` is merged into the thread's. The
        keys the package reads itself are checked (:func:`~.tree.check_thread_metadata`:
        ``user_id`` an id; ``memory_user_ids``, ``memory_agent_ids``, ``memory_forks`` lists of ids)."""
        try:
            self._require_connected()
            agent = tree.check_id("agent_id", agent_id)
            meta = tree.check_thread_metadata("metadata", metadata)
            tid = tree.check_optional_id("thread_id", thread_id) or make_thread_id()
            return ok(await self._upsert_thread(tid, agent, meta, clock.now()))
        except Exception as exc:
            return self._fail("create_thread", exc)

    async def get_thread(self, thread_id: str) -> MemoryResult[Thread | None]:
        """The thread, or ``None`` when there is none with that id."""
        try:
            self._require_connected()
            return ok(await self._get_thread(tree.check_id("thread_id", thread_id)))
        except Exception as exc:
            return self._fail("get_thread", exc)

    async def update_thread(
        self, thread_id: str, metadata: dict[str, Any], *, replace: bool = False
    ) -> MemoryResult[Thread]:
        """Merge ``metadata`` into the thread's (top-level keys replaced), atomically; with
        ``replace=True`` the thread's metadata becomes exactly ``metadata``. Fails for a missing thread."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            if metadata is None:
                raise InvalidArgumentError("metadata", "must be a dict")
            meta = tree.check_thread_metadata("metadata", metadata)
            thread = await self._update_thread(tid, meta, bool(replace), clock.now())
            if thread is None:
                raise NotFoundError(f"thread not found: {tid}")
            return ok(thread)
        except Exception as exc:
            return self._fail("update_thread", exc)

    async def delete_thread(self, thread_id: str) -> MemoryResult[None]:
        """Delete the thread and its entries. Deleting a missing thread succeeds and reports nothing."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            await self._recall_forget(thread_id=tid)
            existed = await self._delete_thread(tid)
            await self._recall_forget(thread_id=tid)  # and what an indexer wrote meanwhile
        except Exception as exc:
            return self._fail("delete_thread", exc)
        if existed and self._listeners:
            self.emit(ChangeEvent(type="thread-deleted", thread_id=tid))
        return ok_none()

    async def list_threads(
        self,
        *,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> MemoryResult[ThreadPage]:
        """A page of threads, the most recently updated first.

        Filtered by agent, by metadata values (equal and of the same JSON type) and by update
        time (strictly after ``updated_after``, strictly before ``updated_before``). Pass the
        page's ``next_cursor`` back as ``cursor`` for the next page; it is ``None`` on the last.
        """
        try:
            self._require_connected()
            agent = tree.check_optional_id("agent_id", agent_id)
            wanted = tree.check_metadata("metadata", metadata)
            after_t = tree.check_datetime("updated_after", updated_after)
            before_t = tree.check_datetime("updated_before", updated_before)
            size = tree.check_limit("limit", limit, allow_zero=False)
            if size > 1000:
                raise InvalidArgumentError("limit", f"must be at most 1000, got {size}")
            position = tree.decode_cursor(cursor) if cursor is not None else None
            found: list[Thread] = []
            batch = size + 1 if not wanted else max(64, size * 4)
            while len(found) <= size:
                scanned = await self._scan_threads(
                    agent_id=agent,
                    updated_after=after_t,
                    updated_before=before_t,
                    after=position,
                    limit=batch,
                )
                for thread in scanned:
                    if not wanted or tree.metadata_matches(thread.metadata, wanted):
                        found.append(thread)
                if len(scanned) < batch:
                    break
                last = scanned[-1]
                position = (clock.to_micros(last.updated_at), last.id)
            next_cursor = None
            if len(found) > size:
                found = found[:size]
                next_cursor = tree.encode_cursor(found[-1].updated_at, found[-1].id)
            return ok(ThreadPage(threads=found, next_cursor=next_cursor))
        except Exception as exc:
            return self._fail("list_threads", exc)

    # ----- entries -------------------------------------------------------------------------

    async def add_entry(self, entry: NewMemoryEntry | dict[str, Any]) -> MemoryResult[MemoryEntry]:
        """Add an entry after the active leaf (or ``parent_id``, or as a new root with
        ``root=True``) and move the leaf to it (unless ``activate=False``).

        Fails, writing nothing, for a missing thread, a parent that is not an entry of the
        thread, an ``id`` already taken (``ConflictError``), or an invalid entry (the message
        names the field; values are checked as :mod:`~cogitator_memory.threads.values` says).
        ``token_count`` defaults to the counted tokens of the entry (counted when first read on
        the in-memory store, at the write on the others). ``created_at`` dates the entry when it
        was said (default now); a time in the future is refused (``InvalidArgumentError``).
        """
        try:
            self._require_connected()
            new = self._parse_entry(entry)
            fields = new.__dict__
            now = clock.now()
            said = tree.check_said_at("entry.created_at", fields["created_at"], now)
            entry_id = fields["id"]
            if entry_id is None:
                entry_id = make_entry_id()
            elif await self._get_entry(entry_id) is not None:
                raise ConflictError(f"entry id {entry_id} is taken")
            created = await self._add_entry(new, entry_id, fields["token_count"], now if said is None else said)
        except Exception as exc:
            return self._fail("add_entry", exc)
        if self._listeners:
            self.emit(ChangeEvent(type="entry-added", thread_id=created.thread_id, entry_id=created.id, entry=created))
        return MemoryResult(True, created)

    def _parse_entry(self, entry: NewMemoryEntry | dict[str, Any]) -> NewMemoryEntry:
        # A plain dict first: pydantic's isinstance check of a model class is Python code.
        if type(entry) is not dict and isinstance(entry, NewMemoryEntry):
            new = entry
        elif isinstance(entry, dict):
            try:
                # What NewMemoryEntry.model_validate(entry) does, without its wrapper's cost.
                new = NewMemoryEntry.__pydantic_validator__.validate_python(entry)
            except ValidationError as exc:
                raise tree.validation_error("entry", exc) from None
        else:
            raise InvalidArgumentError("entry", f"must be a NewMemoryEntry or a dict, got {type(entry).__name__}")
        fields = new.__dict__
        tree.check_id("entry.thread_id", fields["thread_id"])
        parent_id = fields["parent_id"]
        if parent_id is not None:
            tree.check_id("entry.parent_id", parent_id)
        if fields["id"] is not None:
            tree.check_id("entry.id", fields["id"])
        token_count = fields["token_count"]
        if token_count is not None and not 0 <= token_count <= values.MAX_INT:
            raise InvalidArgumentError("entry.token_count", f"must be from 0 to 2**63 - 1, got {token_count}")
        if fields["root"] and parent_id is not None:
            raise InvalidArgumentError("entry.root", "a new root has no parent: give root=True or parent_id, not both")
        values.check_entry_content("entry", new)
        return new

    async def get_entries(
        self,
        thread_id: str,
        *,
        limit: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        types: TypesArg = None,
        include_tool_calls: bool = False,
    ) -> MemoryResult[list[MemoryEntry]]:
        """Entries of every branch, oldest first: the newest ``limit`` (0 for all), created
        strictly after ``after`` and before ``before``. Only message and tool_result entries
        unless ``types`` asks for more (``"all"`` or a list); tool calls and tool results are
        stripped unless ``include_tool_calls``. Fails for a missing thread."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            size = tree.check_read_limit("limit", limit)
            before_t = tree.check_datetime("before", before)
            after_t = tree.check_datetime("after", after)
            chosen = tree.check_types(types)
            entries = await self._get_entries(tid, limit=size, before=before_t, after=after_t, types=chosen)
            if entries is None:
                raise NotFoundError(f"thread not found: {tid}")
            if not include_tool_calls:
                entries = [tree.strip_tool_calls(e) for e in entries]
            return ok(entries)
        except Exception as exc:
            return self._fail("get_entries", exc)

    async def get_entry(self, entry_id: str) -> MemoryResult[MemoryEntry | None]:
        """The entry, with its tool calls, or ``None`` when there is none with that id."""
        try:
            self._require_connected()
            return ok(await self._get_entry(tree.check_id("entry_id", entry_id)))
        except Exception as exc:
            return self._fail("get_entry", exc)

    async def delete_entry(self, entry_id: str) -> MemoryResult[None]:
        """Splice the entry out of its branch: its children go after its parent, and an active
        leaf on it moves to its parent. Deleting a missing entry succeeds and reports nothing."""
        try:
            self._require_connected()
            eid = tree.check_id("entry_id", entry_id)
            await self._recall_forget(entry_id=eid)
            deleted = await self._delete_entry(eid)
            if deleted is not None:
                await self._recall_forget(entry_id=eid)  # and what an indexer wrote meanwhile
        except Exception as exc:
            return self._fail("delete_entry", exc)
        if deleted is not None and self._listeners:
            self.emit(ChangeEvent(type="entry-deleted", thread_id=deleted.thread_id, entry_id=eid, entry=deleted))
        return ok_none()

    async def clear_thread(self, thread_id: str) -> MemoryResult[None]:
        """Delete every entry of the thread, keeping the thread. Fails for a missing thread."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            await self._recall_forget(thread_id=tid)
            if not await self._clear_thread(tid):
                raise NotFoundError(f"thread not found: {tid}")
            await self._recall_forget(thread_id=tid)  # and what an indexer wrote meanwhile
        except Exception as exc:
            return self._fail("clear_thread", exc)
        if self._listeners:
            self.emit(ChangeEvent(type="thread-cleared", thread_id=tid))
        return ok_none()

    # ----- trees ---------------------------------------------------------------------------

    async def get_path(
        self,
        thread_id: str,
        *,
        leaf_id: str | None = None,
        limit: int = 0,
        before: datetime | str | None = None,
        types: TypesArg = None,
        include_tool_calls: bool = False,
        copy: bool = True,
    ) -> MemoryResult[list[MemoryEntry]]:
        """One branch, oldest first: from the root to ``leaf_id`` (the active leaf by default).

        ``limit`` keeps the newest matching entries (0 for all). ``before`` pages back: an entry
        id reads the branch above that entry (pass the first entry of a page to get the page
        before it); a datetime keeps entries created before it. ``types`` and
        ``include_tool_calls`` work as in :meth:`get_entries`. Reads no other branch.

        ``copy=False`` is for readers that change nothing (the context builder): the entries may
        then be the store's own objects (the in-memory store shares them; the others always
        return fresh ones), and changing one would change what later such reads see.
        """
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            leaf = tree.check_optional_id("leaf_id", leaf_id)
            size = tree.check_read_limit("limit", limit)
            chosen = tree.check_types(types)
            before_t: datetime | None = None
            if isinstance(before, str):
                anchor = await self._get_entry(tree.check_id("before", before))
                if anchor is None or anchor.thread_id != tid:
                    raise NotFoundError(f"entry {before} (before) is not an entry of thread {tid}")
                if anchor.parent_id is None:
                    if await self._get_thread(tid) is None:
                        raise NotFoundError(f"thread not found: {tid}")
                    return ok([])
                leaf = anchor.parent_id
            else:
                before_t = tree.check_datetime("before", before)
            read = self._get_path if copy else self._get_path_shared
            entries = await read(tid, leaf, limit=size, before=before_t, types=chosen)
            if entries is None:
                raise NotFoundError(f"thread not found: {tid}")
            if not include_tool_calls:
                entries = [tree.strip_tool_calls(e) for e in entries]
            return ok(entries)
        except Exception as exc:
            return self._fail("get_path", exc)

    async def rewind(self, thread_id: str, to_entry_id: str) -> MemoryResult[Thread]:
        """Move the active leaf back to an entry of the active branch; nothing is deleted, and
        the entries after it stay on a branch of their own."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            eid = tree.check_id("to_entry_id", to_entry_id)
            return ok(await self._set_active_leaf(tid, eid, on_active_path=True, now=clock.now()))
        except Exception as exc:
            return self._fail("rewind", exc)

    async def checkout(self, thread_id: str, entry_id: str) -> MemoryResult[Thread]:
        """Make any entry of the thread the active leaf, so its branch becomes the active one."""
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            eid = tree.check_id("entry_id", entry_id)
            return ok(await self._set_active_leaf(tid, eid, on_active_path=False, now=clock.now()))
        except Exception as exc:
            return self._fail("checkout", exc)

    async def fork_thread(
        self, thread_id: str, at_entry_id: str, new_thread_id: str | None = None
    ) -> MemoryResult[Thread]:
        """Copy the branch from the root to ``at_entry_id`` into a new thread.

        Each copy names its original in ``metadata["fork_of"]``, the new thread its origin in
        ``metadata["forked_from"]`` (``{"thread_id", "entry_id"}``), and the origin lists the
        fork in ``metadata["memory_forks"]``. Fails when ``new_thread_id`` is taken.
        """
        try:
            self._require_connected()
            tid = tree.check_id("thread_id", thread_id)
            eid = tree.check_id("at_entry_id", at_entry_id)
            fork_id = tree.check_optional_id("new_thread_id", new_thread_id) or make_thread_id()
            if fork_id == tid:
                raise ConflictError(f"a fork needs an id of its own, not {tid}")
            origin = await self._get_thread(tid)
            if origin is None:
                raise NotFoundError(f"thread not found: {tid}")
            path = await self._get_path(tid, eid, limit=0, before=None, types=None)
            if path is None:
                raise NotFoundError(f"thread not found: {tid}")
            now = clock.now()
            fork, copies = tree.fork_records(origin, path, fork_id, now)
            return ok(await self._write_fork(tid, fork, copies, now))
        except Exception as exc:
            return self._fail("fork_thread", exc)

    async def redact_entry(
        self, entry_id: str, redaction: EntryRedaction | dict[str, Any]
    ) -> MemoryResult[MemoryEntry | None]:
        """Replace the entry's text, tool-call arguments and tool results with ``[redacted]``.

        Keeps its place, parent, role and call ids; drops a user message's sender name;
        records ``metadata["redacted"]``. ``None`` for a missing entry; an event entry is refused.
        """
        try:
            self._require_connected()
            eid = tree.check_id("entry_id", entry_id)
            if isinstance(redaction, dict):
                try:
                    redaction = EntryRedaction.model_validate(redaction)
                except ValidationError as exc:
                    raise tree.validation_error("redaction", exc) from None
            elif not isinstance(redaction, EntryRedaction):
                raise InvalidArgumentError("redaction", "must be an EntryRedaction or a dict with 'at'")
            values.check_optional_text("redaction.reason", redaction.reason)
            entry = await self._get_entry(eid)
            if entry is None:
                return ok(None)
            redacted = tree.redacted_entry(entry, redaction)
            await self._recall_forget(entry_id=eid)
            await self._replace_entry(redacted)
            await self._recall_forget(entry_id=eid)  # and what an indexer wrote meanwhile
        except Exception as exc:
            return self._fail("redact_entry", exc)
        if self._listeners:
            self.emit(ChangeEvent(type="entry-redacted", thread_id=redacted.thread_id, entry_id=eid, entry=redacted))
        return ok(redacted)


__all__ = [
    "BaseMemoryAdapter",
    "Capability",
    "ChangeListener",
    "ChangeReportingMemoryAdapter",
    "MemoryAdapter",
]
