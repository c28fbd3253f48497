"""mem0's calls over a :class:`~cogitator_memory.runtime.Memory`: ``memory.mem0`` (see ``docs/mem0.md``).

:class:`Mem0Compat` answers the calls of ``mem0.Memory`` (mem0ai 2.x, with its 1.x argument
names too) in mem0's shapes, backed by this package's memory items and searched through the
recall index (:meth:`Memory.search <cogitator_memory.runtime.Memory.search>`):

- a mem0 memory is a memory item of kind ``fact`` whose slot is its own (subject: the role
  that said it, attribute ``said``, linked to the entity whose id is the memory's id; it is
  searched as "user said <text>"), so ``update`` writes
  the next state of that slot and the one before is superseded, never overwritten: ``history``
  lists every state (``ADD``, then ``UPDATE``) and a ``delete`` (``DELETE``). The memory's id is
  the id of its first state, so :meth:`Mem0Compat.get` is one read by id on every store;
- ``user_id`` is the item's user, ``agent_id`` its agent (the config's ``agent_id`` when not
  given) and ``run_id`` its thread;
- ``delete`` and ``delete_all`` mark the states stale (``metadata.stale_because``), as mem0
  keeps a deleted memory's history; ``reset`` purges the agent's items for good;
- items written otherwise (extraction, :class:`~cogitator_memory.items.MemoryItems`) are
  memories too, under their own ids.

:class:`SyncMem0Compat` is the same, synchronous, for :class:`~cogitator_memory.runtime.SyncMemory`.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from ..errors import InvalidArgumentError, MemoryStoreError, NotFoundError
from ..ids import new_id
from ..items.records import MAX_BATCH, MAX_VALUE_CHARS, ItemUpdate, MemoryItem, MemoryScope, NewMemoryItem
from ..items.service import MemoryItems
from ..recall.item_vectors import item_vector_id, item_vectors
from ..recall.query import check_query
from ..result import unwrap
from ..runtime.search import SearchKind, search_memory
from ..threads import tree
from ..threads.records import ACTIVATED_AT_KEY, STALE_BECAUSE_KEY
from ..threads.values import has_surrogate
from .mem0_filters import CompiledFilter, compile_filters

if TYPE_CHECKING:
    from ..runtime.memory import Memory
    from ..runtime.sync import SyncMemory

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

#: The attribute of a mem0 memory's slot (its subject is the role, its entity the memory's id).
MEM0_ATTRIBUTE = "said"
#: The prefix of a mem0 memory's id (an item id: the id of its first state).
MEM0_ID_PREFIX = "mem_"
#: Longest role name kept (a memory's subject).
MAX_ROLE_CHARS = 100
#: The metadata key holding what mem0 keeps beside a memory (role, actor, when it was made).
MEM0_KEY = "mem0"
#: Metadata keys the package sets, never shown as a memory's metadata.
_OWN_KEYS = frozenset({MEM0_KEY, STALE_BECAUSE_KEY, ACTIVATED_AT_KEY})
#: Keys mem0 sets from the call's arguments, refused in ``metadata``.
_IDENTITY_KEYS = ("user_id", "agent_id", "run_id", "actor_id")
#: What ``search`` asks :func:`~cogitator_memory.runtime.search.search_memory` for: memories are items.
_MEMORIES: tuple[SearchKind, ...] = ("item",)
#: Most results one ``search`` or ``get_all`` page returns here.
MAX_TOP_K = 100

#: The ids new mem0 memories take as the ids of their first state (set by :meth:`Mem0Compat.add`).
_FIRST_IDS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("mem0_first_ids", default=frozenset())


class _Mem0Items(MemoryItems):
    """:class:`MemoryItems` whose new mem0 memories take their memory id as their first state's id."""

    def _new_item(self, new: NewMemoryItem, recorded: datetime, shadow: bool) -> MemoryItem:
        item = super()._new_item(new, recorded, shadow)
        if new.entity_id is not None and new.entity_id in _FIRST_IDS.get():
            item = item.model_copy(update={"id": new.entity_id})
        return item


def is_mem0_memory(item: MemoryItem) -> bool:
    """Whether ``item`` is a state of a memory written through :class:`Mem0Compat`."""
    entity = item.entity_id
    return item.attribute == MEM0_ATTRIBUTE and entity is not None and entity.startswith(MEM0_ID_PREFIX)


def mem0_id(item: MemoryItem) -> str:
    """The mem0 id of ``item``: its memory's id for a mem0 memory, else the item's id."""
    return item.entity_id if is_mem0_memory(item) and item.entity_id is not None else item.id


def memory_text(item: MemoryItem) -> str:
    """What mem0 calls the ``memory``: a mem0 memory's text, else ``subject attribute: value``."""
    if is_mem0_memory(item):
        return item.value
    head = f"{item.subject} {item.attribute}" if item.attribute else item.subject
    return f"{head}: {item.value}"


def memory_dict(item: MemoryItem, *, score: float | None = None, with_score: bool = True) -> dict[str, Any]:
    """``item`` in mem0's shape: ``id``, ``memory``, ``hash`` (MD5 of the text, as mem0),
    ``metadata`` (``None`` when empty), ``score`` (unless ``with_score`` is false),
    ``created_at``, ``updated_at`` and, when set, ``user_id``, ``agent_id``, ``run_id``,
    ``role`` and ``actor_id``."""
    own = item.metadata.get(MEM0_KEY)
    own = own if isinstance(own, dict) else {}
    text = memory_text(item)
    metadata = {k: v for k, v in item.metadata.items() if k not in _OWN_KEYS}
    out: dict[str, Any] = {
        "id": mem0_id(item),
        "memory": text,
        "hash": hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest(),
        "metadata": metadata or None,
    }
    if with_score:
        out["score"] = score
    out["created_at"] = own.get("created_at") or item.recorded_at.isoformat()
    out["updated_at"] = item.recorded_at.isoformat()
    scope = item.scope
    for key, value in (
        ("user_id", scope.user_id),
        ("agent_id", scope.agent_id),
        ("run_id", scope.thread_id),
        ("role", item.subject if is_mem0_memory(item) else None),
        ("actor_id", own.get("actor_id")),
    ):
        if value is not None:
            out[key] = value
    return out


def _unsupported(name: str, value: object, default: object = None) -> None:
    if value is not default:
        raise InvalidArgumentError(name, "is a mem0 option this package does not support: leave it out")


def _check_metadata(metadata: object) -> dict[str, Any]:
    checked = tree.check_metadata("metadata", metadata)
    for key in (*_IDENTITY_KEYS, *_OWN_KEYS):
        if key in checked:
            raise InvalidArgumentError(f"metadata.{key}", "is set by the package or by the call's arguments")
    return checked


def _check_top_k(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
        raise InvalidArgumentError(name, f"must be an integer from 1 to {MAX_TOP_K}, got {value!r}")
    return value


def _pick_top_k(top_k: int | None, limit: int | None, default: int) -> int:
    """mem0 2.x's ``top_k`` or 1.x's ``limit`` (not both)."""
    if top_k is not None and limit is not None:
        raise InvalidArgumentError("limit", "is mem0 1.x's name of top_k: give one of them")
    if limit is not None:
        return _check_top_k("limit", limit)
    return _check_top_k("top_k", default if top_k is None else top_k)


def _check_text(name: str, text: object) -> str:
    """A memory's text: non-empty, at most :data:`MAX_VALUE_CHARS` characters, no NUL or lone surrogate."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(name, "must be non-empty text")
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidArgumentError(name, f"must be at most {MAX_VALUE_CHARS} characters, got {len(text)}")
    if "\x00" in text or has_surrogate(text):
        raise InvalidArgumentError(name, "must not contain NUL characters or lone surrogates")
    return text


def _messages(messages: object) -> list[tuple[str, str, str | None]]:
    """mem0's messages (text, one message, or a list) as (role, content, actor) to store: system
    messages are left out, as mem0 does; anything malformed raises naming the message."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    if isinstance(messages, bytes) or not isinstance(messages, Sequence):
        raise InvalidArgumentError("messages", "must be text, a message dict or a list of message dicts")
    out: list[tuple[str, str, str | None]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise InvalidArgumentError(where, f"must be a dict with role and content, got {type(message).__name__}")
        role = message.get("role")
        content = message.get("content")
        if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE_CHARS:
            raise InvalidArgumentError(f"{where}.role", "must be a role such as 'user' or 'assistant'")
        if role == "system":
            continue
        content = _check_text(f"{where}.content", content)
        actor = tree.check_optional_id(f"{where}.name", message.get("name"))
        out.append((role, content, actor))
    return out


class Mem0Compat:
    """mem0's ``Memory`` calls over a connected :class:`~cogitator_memory.runtime.Memory` (see the
    module docstring and ``docs/mem0.md``). Get it as ``memory.mem0``. Every call is ``async``;
    :class:`SyncMem0Compat` (``sync_memory.mem0``) is the synchronous twin."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        #: The store, with its item calls (every built-in thread store keeps items).
        self.store: Any = cast(Any, memory.adapter)
        self.items = _Mem0Items(adapter=self.store)

    # ----- helpers -------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Raise when the memory is not connected; false when it is disabled."""
        self.memory._require()
        return self.memory.enabled

    def _scope(self, flt: CompiledFilter, call: str) -> MemoryScope:
        if flt.user_id is None and flt.agent_id is None and flt.run_id is None:
            raise InvalidArgumentError(
                "filters" if call != "add" else "user_id", f"{call} needs a user_id, agent_id or run_id"
            )
        return MemoryScope(agent_id=self.memory._agent(flt.agent_id), user_id=flt.user_id, thread_id=flt.run_id)

    async def _get(self, mid: object) -> MemoryItem | None:
        checked = tree.check_id("memory_id", mid)
        found: list[MemoryItem] = unwrap(await self.store.get_items([checked]))
        return found[0] if found else None

    async def _states(self, item: MemoryItem) -> list[MemoryItem]:
        """Every state of the memory ``item`` is a state of, oldest first."""
        if not is_mem0_memory(item):
            return [item]
        states = await self.items.history(item.scope, item.slot, statuses="all")
        return sorted(states, key=lambda s: (s.recorded_at, s.id))

    async def _current(self, item: MemoryItem) -> MemoryItem | None:
        """The state of ``item``'s memory that holds now (``None``: deleted)."""
        if not is_mem0_memory(item):
            return item if item.status == "active" else None
        held = [s for s in await self._states(item) if s.status == "active"]
        return held[-1] if held else None

    async def _embed(self, items: Sequence[MemoryItem]) -> None:
        """Write the vectors of ``items`` now (searchable by meaning at once); a failing
        embedding service is logged: the items are found by their words, and the search that
        finds them makes the vectors it lacks."""
        memory = self.memory
        if memory.vectors is None or memory.embedding_service is None or not items:
            return
        try:
            await item_vectors(memory.vectors, memory.embedding_service, items)
        except Exception as exc:
            logger.warning("mem0: %d memories stored without vectors (%s)", len(items), exc)

    # ----- mem0's calls --------------------------------------------------------------------

    async def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        timestamp: Any = None,
        expiration_date: Any = None,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Store memories from ``messages`` (text, a message or a list of messages) for
        ``user_id`` / ``agent_id`` / ``run_id`` (at least one), mem0's ``add``.

        ``infer=False`` stores each message's text (system messages aside) as a memory with
        ``metadata``, ``role`` and, from a message's ``name``, ``actor_id``: no model is asked.
        ``infer=True`` (mem0's default) writes the messages as turns of the thread ``run_id``
        (a new one without it) and lets extraction, with the config's ``model``, write the
        memory items; it raises :class:`InvalidArgumentError` when no model is configured.
        Returns ``{"results": [{"id", "memory", "event": "ADD", ...}]}``. ``timestamp``,
        ``expiration_date``, ``memory_type`` and ``prompt`` are refused."""
        enabled = self._ready()
        _unsupported("timestamp", timestamp)
        _unsupported("expiration_date", expiration_date)
        _unsupported("memory_type", memory_type)
        _unsupported("prompt", prompt)
        if not isinstance(infer, bool):
            raise InvalidArgumentError("infer", f"must be true or false, got {infer!r}")
        scope = self._scope(compile_filters(None, user_id=user_id, agent_id=agent_id, run_id=run_id), "add")
        extra = _check_metadata(metadata)
        parsed = _messages(messages)
        if infer:
            return await self._add_inferred(messages, parsed, scope, extra)
        if not enabled or not parsed:
            return {"results": []}
        news: list[NewMemoryItem] = []
        firsts: list[str] = []
        for role, content, actor in parsed:
            mid = new_id(MEM0_ID_PREFIX)
            firsts.append(mid)
            own: dict[str, Any] = {} if actor is None else {"actor_id": actor}
            news.append(
                NewMemoryItem(
                    kind="fact",
                    subject=role,
                    attribute=MEM0_ATTRIBUTE,
                    entity_id=mid,
                    value=content,
                    trust="system",
                    scope=scope,
                    metadata={**extra, MEM0_KEY: own} if own else extra,
                )
            )
        token = _FIRST_IDS.set(frozenset(firsts))
        try:
            written = await self.items.add_many(news)
        finally:
            _FIRST_IDS.reset(token)
        await self._embed(written)
        results = []
        for item, (role, _, actor) in zip(written, parsed, strict=True):
            results.append({"id": mem0_id(item), "memory": item.value, "event": "ADD", "actor_id": actor, "role": role})
        return {"results": results}

    async def _add_inferred(
        self, messages: Any, parsed: list[tuple[str, str, str | None]], scope: MemoryScope, extra: dict[str, Any]
    ) -> dict[str, Any]:
        memory = self.memory
        if memory.extractor is None:
            raise InvalidArgumentError(
                "infer",
                "infer=True asks a model to extract memories: add a 'model' section to the memory config "
                "(with extraction on), or pass infer=False to store the messages as they are",
            )
        if extra:
            raise InvalidArgumentError("metadata", "is kept with memories stored as they are (infer=False) only")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif isinstance(messages, Mapping):
            messages = [messages]
        added = await memory.add(
            list(messages), user_id=scope.user_id, agent_id=scope.agent_id, thread_id=scope.thread_id
        )
        failed = [e for e in added.errors if e.stage == "extraction"]
        if failed:
            raise MemoryStoreError(
                f"the messages are stored (thread {added.thread_id}) but extraction failed: {failed[0].message}"
            )
        if not added.entries:
            return {"results": []}
        within = MemoryScope(agent_id=scope.agent_id, user_id=scope.user_id)
        found: list[MemoryItem] = unwrap(
            await self.store.query_items(
                {"within": within, "entry_ids": [e.id for e in added.entries], "statuses": ["active", "suggested"]}
            )
        )
        await self._embed([i for i in found if i.status == "active"])
        return {"results": [{"id": i.id, "memory": memory_text(i), "event": "ADD"} for i in found]}

    async def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The memories answering ``query``, best first, mem0's ``search``:
        ``{"results": [{"id", "memory", "score", ...}]}``.

        Scoped by ``filters`` (mem0 2.x: ``{"user_id": ...}`` and conditions with mem0's
        operators, see :mod:`.mem0_filters`) or the 1.x arguments ``user_id`` / ``agent_id`` /
        ``run_id``; ``top_k`` (or 1.x's ``limit``, default 20, at most 100) results. Found
        through the recall index as :meth:`Memory.search` finds items (words, time, names and,
        with embeddings, meaning; no turn is searched), so ``score`` is its rank score; ``threshold`` drops results
        scored below it. Conditions and ``run_id`` are applied to the best 100 candidates of
        the user and agent. ``rerank``, ``explain`` and ``reference_date`` are refused;
        ``show_expired`` changes nothing (no memory expires here)."""
        enabled = self._ready()
        _unsupported("rerank", rerank, False)
        _unsupported("explain", explain, False)
        _unsupported("reference_date", reference_date)
        if not isinstance(show_expired, bool):
            raise InvalidArgumentError("show_expired", f"must be true or false, got {show_expired!r}")
        size = _pick_top_k(top_k, limit, 20)
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)):
            raise InvalidArgumentError("threshold", f"must be a number, got {threshold!r}")
        flt = compile_filters(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        scope = self._scope(flt, "search")
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query", "must be non-empty text")
        check_query("query", query)
        if not enabled:
            return {"results": []}
        narrowed = flt.predicate is not None or flt.run_id is not None
        ask = MAX_TOP_K if narrowed else min(MAX_TOP_K, 2 * size + 10)
        # memories only: no turn is read or its vector searched only to be dropped here
        hits = await search_memory(
            self.memory, query, agent=scope.agent_id, user=scope.user_id, thread_id=None, limit=ask, kinds=_MEMORIES
        )
        scores: dict[str, float] = {}
        for hit in hits:
            if hit.kind == "item" and hit.id not in scores:
                scores[hit.id] = hit.score
        read: list[MemoryItem] = unwrap(await self.store.get_items(list(scores))) if scores else []
        by_id = {item.id: item for item in read}
        results: list[dict[str, Any]] = []
        seen: set[str] = set()
        for item_id, score in scores.items():
            item = by_id.get(item_id)
            if item is None or item.status != "active" or not self._in(item, scope):
                continue
            if threshold is not None and score < threshold:
                continue
            found = memory_dict(item, score=score)
            if found["id"] in seen or not flt.matches(found):
                continue
            seen.add(found["id"])
            results.append(found)
            if len(results) == size:
                break
        return {"results": results}

    @staticmethod
    def _in(item: MemoryItem, scope: MemoryScope) -> bool:
        """Whether ``item`` is kept in ``scope`` or a narrower one (mem0's exact scoping: a
        search for a user does not return memories of no user)."""
        return scope.holds(item.scope)

    async def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        show_expired: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The memories of the scope ``filters`` (or the 1.x ``user_id`` / ``agent_id`` /
        ``run_id``) names that hold now, mem0's ``get_all``: the newest ``top_k`` (or ``limit``;
        default 20, at most 100) passing the filter's conditions, oldest first, as
        ``{"results": [...]}`` (without ``score``)."""
        enabled = self._ready()
        if not isinstance(show_expired, bool):
            raise InvalidArgumentError("show_expired", f"must be true or false, got {show_expired!r}")
        size = _pick_top_k(top_k, limit, 20)
        flt = compile_filters(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        scope = self._scope(flt, "get_all")
        if not enabled:
            return {"results": []}
        query: dict[str, Any] = {"within": scope, "statuses": ["active"]}
        if flt.predicate is None:
            query["limit"] = size
        items: list[MemoryItem] = unwrap(await self.store.query_items(query))
        out = [d for d in (memory_dict(i, with_score=False) for i in items) if flt.matches(d)]
        return {"results": out[-size:]}

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory as it holds now (mem0's shape, ``score`` ``None``), or ``None`` when there
        is no such memory or it was deleted."""
        if not self._ready():
            return None
        item = await self._get(memory_id)
        current = await self._current(item) if item is not None else None
        return memory_dict(current) if current is not None else None

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        data: str | None = None,
        expiration_date: Any = None,
    ) -> dict[str, Any]:
        """Give the memory new ``text`` (mem0 1.x: ``data``) and/or ``metadata`` (merged into
        its metadata), mem0's ``update``. New text is a new state of the memory, recorded now:
        the one before is superseded and kept (see :meth:`history`). A memory not written
        through this view (extraction's) gets its new state as an item of its own, whose id the
        answer carries as ``id``. Raises :class:`NotFoundError` for no such memory."""
        self._ready()
        _unsupported("expiration_date", expiration_date)
        if data is not None:
            if text is not None:
                raise InvalidArgumentError("data", "is mem0 1.x's name of text: give one of them")
            text = data
        if text is not None:
            text = _check_text("text", text)
        extra = _check_metadata(metadata) if metadata is not None else None
        if text is None and extra is None:
            raise InvalidArgumentError("text", "give the new text, metadata, or both")
        item = await self._get(memory_id)
        current = await self._current(item) if item is not None else None
        if current is None:
            raise NotFoundError(f"memory {memory_id} not found")
        merged = {**current.metadata, **(extra or {})}
        merged.pop(STALE_BECAUSE_KEY, None)
        answer: dict[str, Any] = {"message": "Memory updated successfully!"}
        if text is None or text == current.value:
            if extra is not None and merged != current.metadata:
                unwrap(
                    await self.store.update_items(
                        [ItemUpdate(id=current.id, expected_version=current.version, metadata=merged)]
                    )
                )
            return answer
        own = dict(merged.get(MEM0_KEY) or {})
        if is_mem0_memory(current):
            own.setdefault("created_at", memory_dict(current)["created_at"])
            merged[MEM0_KEY] = own
        new = NewMemoryItem(
            kind=current.kind,
            subject=current.subject,
            attribute=current.attribute,
            entity_id=current.entity_id,
            related_entity_ids=current.related_entity_ids,
            value=text,
            trust="system",
            scope=current.scope,
            metadata=merged,
        )
        written = await self.items.add(new)
        if current.attribute is None:  # no slot: the old value does not give way by itself
            await self.items.mark_stale([current.id], {"reason": "updated", "by": written.id})
        await self._embed([written])
        if not is_mem0_memory(current):
            answer["id"] = written.id
        return answer

    async def delete(self, memory_id: str) -> dict[str, Any]:
        """Delete the memory (every state is marked stale; :meth:`history` keeps them and ends
        with ``DELETE``), mem0's ``delete``. Raises :class:`NotFoundError` for no such memory."""
        self._ready()
        item = await self._get(memory_id)
        held = [s for s in await self._states(item) if s.status != "stale"] if item is not None else []
        if not held:
            raise NotFoundError(f"memory {memory_id} not found")
        await self.items.mark_stale([s.id for s in held], {"reason": "deleted", "by": "mem0"})
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Delete every memory kept for ``user_id`` / ``agent_id`` / ``run_id`` (at least one;
        ``agent_id`` defaults to the config's), as :meth:`delete` does; others' memories are
        not touched. mem0's ``delete_all``."""
        self._ready()
        scope = self._scope(compile_filters(None, user_id=user_id, agent_id=agent_id, run_id=run_id), "delete_all")
        items: list[MemoryItem] = unwrap(
            await self.store.query_items({"within": scope, "statuses": ["active", "superseded", "suggested"]})
        )
        ids = [i.id for i in items]
        for start in range(0, len(ids), MAX_BATCH):
            await self.items.mark_stale(ids[start : start + MAX_BATCH], {"reason": "deleted", "by": "mem0"})
        return {"message": "Memories deleted successfully!"}

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every state of the memory, oldest first, mem0's ``history``: ``ADD`` for the first,
        ``UPDATE`` for each later one (``old_memory`` -> ``new_memory``) and ``DELETE`` when it
        was deleted; ``[]`` for no such memory."""
        if not self._ready():
            return []
        item = await self._get(memory_id)
        if item is None:
            return []
        states = await self._states(item)
        mid = mem0_id(item)
        created = memory_dict(states[0], with_score=False)["created_at"]
        out: list[dict[str, Any]] = []
        before: str | None = None
        for n, state in enumerate(states):
            shown = memory_dict(state, with_score=False)
            text = shown["memory"]
            out.append(
                {
                    "id": state.id,
                    "memory_id": mid,
                    "old_memory": before,
                    "new_memory": text,
                    "event": "ADD" if n == 0 else "UPDATE",
                    "created_at": created,
                    "updated_at": shown["updated_at"],
                    "is_deleted": False,
                    "actor_id": shown.get("actor_id"),
                    "role": shown.get("role"),
                }
            )
            before = text
        if all(s.status == "stale" for s in states):
            last = states[-1]
            ended = max((s.expired_at for s in states if s.expired_at is not None), default=last.recorded_at)
            out.append(
                {
                    "id": f"{last.id}:deleted",
                    "memory_id": mid,
                    "old_memory": before,
                    "new_memory": None,
                    "event": "DELETE",
                    "created_at": created,
                    "updated_at": ended.isoformat(),
                    "is_deleted": True,
                    "actor_id": out[-1]["actor_id"],
                    "role": out[-1]["role"],
                }
            )
        return out

    async def reset(self, *, agent_id: str | None = None) -> None:
        """Purge every memory item of the agent (``agent_id``, default the config's), of every
        user, with its vectors and history: mem0's ``reset``. Threads are not touched."""
        if not self._ready():
            return
        agent = self.memory._agent(agent_id)
        adapter = self.store
        if self.memory.indexer is not None:
            await self.memory.indexer.flush()
        items: list[MemoryItem] = unwrap(await adapter.query_items({"within": {"agent_id": agent}}))
        ids = [i.id for i in items]
        vectors = self.memory.vectors
        for start in range(0, len(ids), MAX_BATCH):
            chunk = ids[start : start + MAX_BATCH]
            unwrap(await adapter.delete_items(chunk))
            if vectors is not None:
                unwrap(await vectors.delete_embeddings([item_vector_id(i) for i in chunk]))


def _blocking(
    method: Callable[Concatenate[Mem0Compat, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[SyncMem0Compat, P], R]:
    """The synchronous twin of a :class:`Mem0Compat` call, run on the :class:`SyncMemory`'s loop."""
    name = method.__name__

    def call(self: SyncMem0Compat, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, Coroutine[Any, Any, R]] = getattr(self.view, name)
        return self.sync._loop.run(bound(*args, **kwargs))

    return functools.wraps(method)(call)  # type: ignore[return-value]


class SyncMem0Compat:
    """:class:`Mem0Compat` without ``asyncio``, over a :class:`~cogitator_memory.runtime.SyncMemory`
    (``sync_memory.mem0``): the same calls, arguments and answers."""

    def __init__(self, sync: SyncMemory) -> None:
        self.sync = sync
        self.view = Mem0Compat(sync.memory)

    add = _blocking(Mem0Compat.add)
    search = _blocking(Mem0Compat.search)
    get_all = _blocking(Mem0Compat.get_all)
    get = _blocking(Mem0Compat.get)
    update = _blocking(Mem0Compat.update)
    delete = _blocking(Mem0Compat.delete)
    delete_all = _blocking(Mem0Compat.delete_all)
    history = _blocking(Mem0Compat.history)
    reset = _blocking(Mem0Compat.reset)


__all__ = [
    "MEM0_ATTRIBUTE",
    "Mem0Compat",
    "SyncMem0Compat",
    "is_mem0_memory",
    "mem0_id",
    "memory_dict",
    "memory_text",
]
