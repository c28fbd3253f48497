"""``InMemoryAdapter``: threads and entries in the process, for tests and short-lived agents.

Entries are kept as their JSON, so every read builds fresh objects and nothing a caller holds
can change the store. A reader that changes nothing (``get_path(copy=False)``, which the context
builder uses) gets the entry parsed once and kept beside its JSON until the entry changes.
Each primitive runs without awaiting, so each call is atomic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any, ClassVar

from ...clock import to_micros
from ...errors import ConflictError, InvalidArgumentError, NotFoundError
from ...threads.base import BaseMemoryAdapter
from ...threads.damage import broken_branch
from ...threads.records import ChangeEvent, MemoryEntry, Message, NewMemoryEntry, Thread
from ...threads.tree import build_entry, type_allowed, with_fork_listed
from .files import InMemoryFiles
from .graph import InMemoryGraph
from .items import InMemoryItems
from .recall import InMemoryRecallIndex

DEFAULT_MAX_ENTRIES = 10_000


def _to_json(entry: MemoryEntry) -> bytes:
    """The entry as JSON bytes, unset fields left out (what the store keeps)."""
    return MemoryEntry.__pydantic_serializer__.to_json(entry, exclude_none=True)


#: The fields of a plain message entry, every one immutable (strings, numbers, a datetime,
#: ``None``): message role, content, name, tool_call_id and cache_breakpoint, then the entry's
#: type, id, thread_id, parent_id, seq, created_at and token_count (``None`` until counted).
_Plain = tuple[str, str, str | None, str | None, bool | None, str, str, str, str | None, int, datetime, int | None]


# The fields _Plain keeps, read at C speed: the message's, then the entry's but its count.
_MESSAGE_FIELDS = itemgetter("role", "content", "name", "tool_call_id", "cache_breakpoint")
_ENTRY_FIELDS = itemgetter("type", "id", "thread_id", "parent_id", "seq", "created_at")


def _packed(entry: MemoryEntry) -> bytes | _Plain:
    """What a node keeps of a new entry: its JSON, or, for a plain message entry (text
    content, no tool data, metadata or event), its immutable fields, written as JSON on the
    first read (half the cost of a write is writing the JSON, which most entries are never read
    back from in a short-lived store). Nothing kept is shared with a caller's object."""
    fields = entry.__dict__
    message = fields["message"]
    if (
        type(message) is Message
        and fields["metadata"] is None
        and fields["tool_calls"] is None
        and fields["tool_results"] is None
        and fields["event"] is None
    ):
        m = message.__dict__
        head = _MESSAGE_FIELDS(m)
        role, content, name, call_id, mark = head
        if (
            m["tool_calls"] is None
            and type(content) is str
            and type(role) is str
            and (name is None or type(name) is str)
            and (call_id is None or type(call_id) is str)
            and (mark is None or type(mark) is bool)
        ):
            # The count of an entry made to count its tokens when first read is taken when the
            # store first reads it (see _plain_json), not when it is written.
            return head + _ENTRY_FIELDS(fields) + (fields.get("token_count"),)  # type: ignore[no-any-return]
    return _to_json(entry)


def _plain_json(plain: _Plain) -> bytes:
    """The JSON of the entry whose fields :func:`_packed` kept (its tokens counted now if they
    were not)."""
    role, content, name, call_id, mark, kind, entry_id, thread_id, parent_id, seq, created_at, tokens = plain
    message = Message.model_construct(
        role=role,  # type: ignore[arg-type]
        content=content,
        name=name,
        tool_call_id=call_id,
        cache_breakpoint=mark,
    )
    entry = MemoryEntry.model_construct(
        message=message,
        token_count=tokens,  # type: ignore[arg-type]  # None: counted by the dump below (MemoryEntry)
        type=kind,  # type: ignore[arg-type]
        id=entry_id,
        thread_id=thread_id,
        parent_id=parent_id,
        seq=seq,
        created_at=created_at,
    )
    return _to_json(entry)


@dataclass(slots=True)
class _Node:
    id: str
    parent_id: str | None
    type: str
    created_at: datetime
    #: The entry's JSON, or the fields of a plain entry not written as JSON yet (see :func:`_packed`).
    packed: bytes | _Plain
    #: The entry parsed from ``blob`` for readers that change nothing (set on first use; every
    #: change of ``blob`` goes through :meth:`store`, which drops it).
    shared: MemoryEntry | None = None

    @property
    def blob(self) -> bytes:
        """The entry as JSON (written now if it was kept as fields)."""
        packed = self.packed
        if isinstance(packed, tuple):
            packed = self.packed = _plain_json(packed)
        return packed

    def entry(self) -> MemoryEntry:
        """A fresh copy of the entry."""
        return MemoryEntry.model_validate_json(self.blob)

    def view(self) -> MemoryEntry:
        """The entry as kept for readers that promise not to change it."""
        shared = self.shared
        if shared is None:
            shared = self.shared = MemoryEntry.model_validate_json(self.blob)
        return shared

    def store(self, entry: MemoryEntry) -> None:
        """Keep ``entry`` as the node's content."""
        self.packed = _to_json(entry)
        self.shared = None


@dataclass(slots=True)
class _ThreadState:
    thread: Thread  # its active_leaf_id is not kept up to date: `leaf` is
    updated_us: int
    leaf: str | None = None
    next_seq: int = 1
    nodes: dict[str, _Node] = field(default_factory=dict)  # in seq order
    children: dict[str, list[str]] = field(default_factory=dict)
    #: Ids on the active branch, kept while cheap to keep (None: unknown).
    active_path: set[str] | None = None


class InMemoryAdapter(InMemoryRecallIndex, InMemoryFiles, InMemoryGraph, InMemoryItems, BaseMemoryAdapter):
    """A thread store in the process's memory. Nothing survives the process.

    ``max_entries`` (default 10,000) bounds each thread on its own: a full thread drops the
    oldest entry of a branch that is not active first, then the oldest of the active branch
    (listeners hear ``entry-deleted``).
    """

    provider: ClassVar[str] = "memory"
    shares_entries: ClassVar[bool] = True

    def __init__(self, *, max_entries: int = DEFAULT_MAX_ENTRIES, provider: str | None = None) -> None:
        super().__init__()
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InvalidArgumentError("max_entries", f"must be a positive integer, got {max_entries!r}")
        if provider not in (None, "memory"):
            raise InvalidArgumentError("provider", f"must be 'memory', got {provider!r}")
        self.max_entries = max_entries
        self._threads: dict[str, _ThreadState] = {}
        self._entry_thread: dict[str, str] = {}

    async def _connect(self) -> None:
        return None

    async def _disconnect(self) -> None:
        return None

    # ----- threads -------------------------------------------------------------------------

    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        state = self._threads.get(thread_id)
        if state is None:
            thread = Thread(id=thread_id, agent_id=agent_id, metadata=metadata, created_at=now, updated_at=now)
            self._threads[thread_id] = _ThreadState(thread=thread, updated_us=to_micros(now), active_path=set())
            return thread.model_copy(deep=True)
        return self._set_metadata(state, {**state.thread.metadata, **metadata}, now)

    def _set_metadata(self, state: _ThreadState, metadata: dict[str, Any], now: datetime) -> Thread:
        state.thread = state.thread.model_copy(update={"metadata": metadata, "updated_at": now})
        state.updated_us = to_micros(now)
        return self._thread_copy(state)

    async def _get_thread(self, thread_id: str) -> Thread | None:
        state = self._threads.get(thread_id)
        return None if state is None else self._thread_copy(state)

    def _thread_copy(self, state: _ThreadState) -> Thread:
        return state.thread.model_copy(update={"active_leaf_id": state.leaf}, deep=True)

    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        state = self._threads.get(thread_id)
        if state is None:
            return None
        merged = metadata if replace else {**state.thread.metadata, **metadata}
        return self._set_metadata(state, merged, now)

    async def _delete_thread(self, thread_id: str) -> bool:
        state = self._threads.pop(thread_id, None)
        if state is None:
            return False
        for entry_id in state.nodes:
            self._entry_thread.pop(entry_id, None)
        return True

    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        low = to_micros(updated_after) if updated_after else None
        high = to_micros(updated_before) if updated_before else None
        keyed = []
        for state in self._threads.values():
            key = (state.updated_us, state.thread.id)
            if agent_id is not None and state.thread.agent_id != agent_id:
                continue
            if low is not None and state.updated_us <= low:
                continue
            if high is not None and state.updated_us >= high:
                continue
            if after is not None and key >= after:
                continue
            keyed.append((key, state))
        keyed.sort(key=lambda pair: pair[0], reverse=True)
        return [self._thread_copy(state) for _, state in keyed[:limit]]

    # ----- entries -------------------------------------------------------------------------

    def _state(self, thread_id: str) -> _ThreadState:
        state = self._threads.get(thread_id)
        if state is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        return state

    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        given = entry.__dict__
        thread_id = given["thread_id"]
        state = self._threads.get(thread_id)
        if state is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        entry_thread = self._entry_thread
        if entry_id in entry_thread:
            raise ConflictError(f"entry id {entry_id} is taken")
        leaf = state.leaf
        nodes = state.nodes
        parent_id = given["parent_id"]
        parent = parent_id if parent_id is not None or given["root"] else leaf
        if parent_id is not None and parent not in nodes:
            if parent in entry_thread:
                raise ConflictError(f"parent {parent} is an entry of another thread, not of {thread_id}")
            raise NotFoundError(f"parent entry not found: {parent}")
        created = build_entry(entry, entry_id, parent, state.next_seq, token_count, now)
        packed = _packed(created)
        state.next_seq += 1
        nodes[entry_id] = _Node(entry_id, parent, given["type"], now, packed)
        if parent is not None:
            siblings = state.children.get(parent)
            if siblings is None:
                state.children[parent] = [entry_id]
            else:
                siblings.append(entry_id)
        entry_thread[entry_id] = thread_id
        if given["activate"]:
            if state.active_path is not None and parent == leaf:
                state.active_path.add(entry_id)
            else:
                state.active_path = None
            state.leaf = entry_id
        if len(nodes) > self.max_entries:
            self._evict(state)
        # The store keeps only JSON or immutable fields, so handing out `created` cannot change it.
        return created

    def _active_path(self, state: _ThreadState) -> set[str]:
        if state.active_path is None:
            state.active_path = {node.id for node in self._walk(state, state.leaf)}
        return state.active_path

    def _walk(self, state: _ThreadState, leaf_id: str | None) -> Iterator[_Node]:
        """The nodes from ``leaf_id`` up to the root, newest first; parent links that loop fail
        (see :mod:`cogitator_memory.threads.damage`)."""
        nodes = state.nodes
        current = leaf_id
        steps = len(nodes)
        while current is not None:
            node = nodes.get(current)
            if node is None:
                return
            if steps == 0:
                raise broken_branch("memory", state.thread.id, leaf_id or "", len(nodes))
            steps -= 1
            yield node
            current = node.parent_id

    def _evict(self, state: _ThreadState) -> None:
        while len(state.nodes) > self.max_entries:
            path = self._active_path(state)
            victim: _Node | None = None
            if len(path) < len(state.nodes):
                victim = next((n for n in state.nodes.values() if n.id not in path), None)
            if victim is None:
                victim = next(iter(state.nodes.values()))
            removed = self._splice(state, victim.id)
            if self._listeners:
                self.emit(
                    ChangeEvent(type="entry-deleted", thread_id=removed.thread_id, entry_id=removed.id, entry=removed)
                )

    def _splice(self, state: _ThreadState, entry_id: str) -> MemoryEntry:
        node = state.nodes.pop(entry_id)
        self._entry_thread.pop(entry_id, None)
        moved = state.children.pop(entry_id, [])
        for child_id in moved:
            child = state.nodes[child_id]
            entry = child.entry().model_copy(update={"parent_id": node.parent_id})
            child.parent_id = node.parent_id
            child.store(entry)
        if node.parent_id is not None:
            siblings = state.children.get(node.parent_id, [])
            if entry_id in siblings:
                siblings.remove(entry_id)
            siblings.extend(moved)
            if siblings:
                state.children[node.parent_id] = siblings
        if state.active_path is not None:
            state.active_path.discard(entry_id)
        if state.leaf == entry_id:
            state.leaf = node.parent_id
        return node.entry()

    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        state = self._threads.get(thread_id)
        if state is None:
            return None
        low, high = after, before
        picked: list[_Node] = []
        nodes = reversed(state.nodes.values()) if limit else iter(state.nodes.values())
        for node in nodes:
            if not type_allowed(node.type, types):
                continue
            if (low is not None and node.created_at <= low) or (high is not None and node.created_at >= high):
                continue
            picked.append(node)
            if limit and len(picked) >= limit:
                break
        if limit:
            picked.reverse()
        return [node.entry() for node in picked]

    async def _get_entry(self, entry_id: str) -> MemoryEntry | None:
        thread_id = self._entry_thread.get(entry_id)
        if thread_id is None:
            return None
        return self._threads[thread_id].nodes[entry_id].entry()

    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        thread_id = self._entry_thread.get(entry_id)
        if thread_id is None:
            return None
        return self._splice(self._threads[thread_id], entry_id)

    async def _clear_thread(self, thread_id: str) -> bool:
        state = self._threads.get(thread_id)
        if state is None:
            return False
        for entry_id in state.nodes:
            self._entry_thread.pop(entry_id, None)
        state.nodes.clear()
        state.children.clear()
        state.active_path = set()
        state.leaf = None
        return True

    # ----- trees ---------------------------------------------------------------------------

    async def _get_path(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        nodes = self._path_nodes(thread_id, leaf_id, limit, before, types)
        return None if nodes is None else [node.entry() for node in nodes]

    async def _get_path_shared(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        nodes = self._path_nodes(thread_id, leaf_id, limit, before, types)
        return None if nodes is None else [node.view() for node in nodes]

    def _path_nodes(
        self, thread_id: str, leaf_id: str | None, limit: int, high: datetime | None, types: frozenset[str] | None
    ) -> list[_Node] | None:
        """The nodes :meth:`_get_path` reads, oldest first (``None`` for a missing thread)."""
        state = self._threads.get(thread_id)
        if state is None:
            return None
        if leaf_id is None:
            leaf_id = state.leaf
        elif leaf_id not in state.nodes:
            raise NotFoundError(f"entry {leaf_id} is not an entry of thread {thread_id}")
        picked: list[_Node] = []
        nodes = state.nodes
        current = leaf_id
        steps = len(nodes)  # a healthy branch is never longer: more means its parent links loop
        while current is not None:
            node = nodes.get(current)
            if node is None:
                break
            if steps == 0:
                raise broken_branch("memory get_path", thread_id, leaf_id or "", len(nodes))
            steps -= 1
            current = node.parent_id
            if types is not None and node.type not in types:
                continue
            if high is not None and node.created_at >= high:
                continue
            picked.append(node)
            if limit and len(picked) >= limit:
                break
        picked.reverse()
        return picked

    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        state = self._state(thread_id)
        if entry_id not in state.nodes:
            raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
        if on_active_path and entry_id not in self._active_path(state):
            raise ConflictError(f"entry {entry_id} is not on the active branch of {thread_id}: use checkout()")
        if state.leaf != entry_id:
            state.leaf = entry_id
            state.active_path = None
        return self._thread_copy(state)

    async def _replace_entry(self, entry: MemoryEntry) -> None:
        state = self._state(entry.thread_id)
        node = state.nodes.get(entry.id)
        if node is None:
            raise NotFoundError(f"entry not found: {entry.id}")
        node.store(entry)

    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        origin = self._state(origin_id)
        if fork.id in self._threads:
            raise ConflictError(f"thread {fork.id} already exists")
        state = _ThreadState(
            thread=fork, updated_us=to_micros(now), leaf=fork.active_leaf_id, next_seq=len(entries) + 1
        )
        for entry in entries:
            blob = _to_json(entry)
            state.nodes[entry.id] = _Node(entry.id, entry.parent_id, entry.type, entry.created_at, blob)
            if entry.parent_id is not None:
                state.children.setdefault(entry.parent_id, []).append(entry.id)
            self._entry_thread[entry.id] = fork.id
        state.active_path = set(state.nodes)
        self._threads[fork.id] = state
        self._set_metadata(origin, with_fork_listed(origin.thread.metadata, fork.id), now)
        return self._thread_copy(state)


__all__ = ["DEFAULT_MAX_ENTRIES", "InMemoryAdapter"]
