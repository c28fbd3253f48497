"""LangGraph's ``BaseStore`` over cogitator-memory: :class:`CogitatorStore`.

Each LangGraph item (a namespace, a key, a JSON value) is one **memory item** of the store's
agent (``agent_id``, default ``"langgraph"``), so it lives on whatever store the
:class:`~cogitator_memory.runtime.Memory` uses (SQLite, PostgreSQL, Redis, MongoDB, in-memory),
is searched through that store's **recall index**, and is forgotten by the cascade with the rest
of the user's memory. The mapping:

============================  ===========================================================
LangGraph                     memory item
============================  ===========================================================
namespace ``("a", "b")``      ``subject = "a.b"`` (labels never hold a period)
key                           ``attribute``
namespace label ``user_label``  ``scope.user_id`` (optional: whose memory it is)
value (any JSON object)       ``metadata["langgraph"]["value"]``, kept as given
the text of the index fields  ``value`` (what keywords and vectors search), 10,000 chars at most
created_at / updated_at       ``metadata["langgraph"]["created_at"]`` / ``recorded_at``
ttl                           ``metadata["langgraph"]["expires_at"]``
============================  ===========================================================

A put writes a new item and then deletes the key's previous one (so a crash in between leaves
the newer value, never none); a delete removes the item and its vectors. ``search(query=...)``
takes its candidates from the recall index's keyword channel (BM25 over stemmed terms, in the
engine) and, with an ``index``, from the nearest vectors in the memory's embedding store, one
vector per indexed field (LangGraph's own layout); it ranks by cosine (the best field of each
item) when there is an ``index``, else by BM25. Without a query, items are listed newest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from .. import clock
from ..errors import ConflictError, InvalidArgumentError, MissingDriverError, NotFoundError
from ..ids import new_id
from ..index.records import RecallFilter
from ..items.records import MAX_ATTRIBUTE_CHARS, MAX_SUBJECT_CHARS, MAX_VALUE_CHARS, MemoryItem
from ..recall.indexed import nearest
from ..result import unwrap
from ..threads import tree
from ._filters import check_filter, matches, namespace_matches

try:
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        ensure_embeddings,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError:  # pragma: no cover - exercised in a subprocess without the extra
    raise MissingDriverError("CogitatorStore", "langgraph", "langgraph-checkpoint") from None

if TYPE_CHECKING:
    from ..runtime.memory import Memory
    from ..runtime.sync import SyncMemory

#: ``metadata.index`` of the store's vectors in the memory's embedding store.
LANGGRAPH_INDEX = "langgraph"
#: ``metadata`` key of an item holding the LangGraph record.
META_KEY = "langgraph"
#: Candidates each search channel returns first (at least 4 times what the page needs);
#: 4 times more while filters leave too few.
_DEPTH = 40
_MAX_DEPTH = 10_000
_TTL_KEYS = frozenset({"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"})
_INDEX_KEYS = frozenset({"dims", "embed", "fields", "text_fields", "distance_type", "ann_index_config"})


class _LangChainService:
    """A LangChain ``Embeddings`` (or a LangGraph embedding function) as an embedding service."""

    def __init__(self, embeddings: Embeddings, dims: int) -> None:
        self.embeddings = embeddings
        self._dims = dims

    @property
    def dimensions(self) -> int:
        return self._dims

    async def embed(self, text: str) -> list[float]:
        return list(await self.embeddings.aembed_query(text))

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(v) for v in await self.embeddings.aembed_documents(list(texts))]


def langchain_embedding_service(embed: Any, dims: int) -> Any:
    """A LangChain ``Embeddings``, or a sync or async function of a list of texts, as a
    cogitator-memory embedding service of ``dims`` dimensions: give it to ``Memory(...,
    embedding_service=...)`` so the memory's vectors and the store's index are made by it."""
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise InvalidArgumentError("dims", f"must be a positive integer, got {dims!r}")
    return _LangChainService(ensure_embeddings(embed), dims)


def _is_service(value: object) -> bool:
    return hasattr(value, "embed_batch") and hasattr(value, "dimensions") and hasattr(value, "embed")


def _check_ttl(ttl: object) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidArgumentError("ttl", f"must be a dict (LangGraph's TTLConfig), got {type(ttl).__name__}")
    unknown = sorted(str(k) for k in ttl if k not in _TTL_KEYS)
    if unknown:
        raise InvalidArgumentError("ttl", f"unknown key(s) {', '.join(unknown)}")
    for key in ("default_ttl", "sweep_interval_minutes"):
        value = ttl.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise InvalidArgumentError(f"ttl.{key}", f"must be a positive number of minutes, got {value!r}")
    return cast(TTLConfig, dict(ttl))


class _Stored:
    """A memory item read back as a LangGraph record."""

    __slots__ = ("created_at", "expires_at", "item", "key", "namespace", "ttl", "value")

    def __init__(self, item: MemoryItem) -> None:
        meta = item.metadata[META_KEY]
        self.item = item
        self.namespace: tuple[str, ...] = tuple(meta["namespace"])
        self.key: str = meta["key"]
        self.value: dict[str, Any] = meta["value"]
        self.created_at = datetime.fromisoformat(meta["created_at"])
        self.ttl: float | None = meta.get("ttl")
        expires = meta.get("expires_at")
        self.expires_at = datetime.fromisoformat(expires) if expires else None

    @property
    def updated_at(self) -> datetime:
        return self.item.recorded_at

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def as_item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def as_hit(self, score: float | None) -> SearchItem:
        return SearchItem(self.namespace, self.key, self.value, self.created_at, self.updated_at, score)


def _newest(found: Iterable[_Stored]) -> list[_Stored]:
    """One record per (namespace, key): the newest (a racing writer of another process may have
    left two for a moment)."""
    best: dict[tuple[tuple[str, ...], str], _Stored] = {}
    for s in found:
        k = (s.namespace, s.key)
        if k not in best or (s.updated_at, s.item.id) > (best[k].updated_at, best[k].item.id):
            best[k] = s
    return list(best.values())


class CogitatorStore(BaseStore):
    """LangGraph's ``BaseStore`` kept as memory items of a :class:`~cogitator_memory.runtime.Memory`.

    ``memory``: a connected :class:`~cogitator_memory.runtime.Memory` (async; the sync calls
    ``get``, ``put``... then work from other threads, as LangGraph runs sync nodes) or
    :class:`~cogitator_memory.runtime.SyncMemory` (sync calls from any thread; the async ones
    hop to its loop). ``agent_id``: whose items these are. ``user_label``: the position of the
    namespace label that is the user id (``1`` for ``("memories", user_id)``): items are kept
    in that user's scope, a search or listing whose prefix names the user reads only that
    user's items, and ``Memory.forget_user`` forgets them. ``index``: LangGraph's index
    configuration (``dims``, ``embed``, ``fields``); ``embed`` may be one of our embedding
    services, a config dict of one (``{"provider": "local"}``), a LangChain ``Embeddings`` or a
    function; without ``embed`` the memory's own embedding service is used. The vectors go to
    the memory's embedding store, so the memory must have one of ``dims`` dimensions. ``ttl``:
    LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``, ``omit_expired``,
    ``sweep_interval_minutes``); expired items are deleted by :meth:`sweep_ttl` (or the
    sweeper of :meth:`start_ttl_sweeper`) and left out of reads with ``omit_expired``.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory | SyncMemory,
        *,
        agent_id: str = "langgraph",
        user_label: int | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        from ..items.records import MemoryScope
        from ..runtime.memory import Memory
        from ..runtime.sync import SyncMemory

        if isinstance(memory, SyncMemory):
            self._sync: SyncMemory | None = memory
            self._memory: Memory = memory.memory
        elif isinstance(memory, Memory):
            self._sync = None
            self._memory = memory
        else:
            raise InvalidArgumentError("memory", f"must be a Memory or a SyncMemory, got {type(memory).__name__}")
        self.agent_id = MemoryScope(agent_id=agent_id).agent_id
        if user_label is not None and (
            isinstance(user_label, bool) or not isinstance(user_label, int) or user_label < 0
        ):
            raise InvalidArgumentError("user_label", f"must be a namespace position (0, 1, ...), got {user_label!r}")
        self.user_label = user_label
        self.ttl_config = _check_ttl(ttl)
        self.index_config: dict[str, Any] | None = None
        self._service: Any = None
        self._fields: list[str] = []
        if index is not None:
            self._set_index(index)
        self._loop: asyncio.AbstractEventLoop | None = None
        with contextlib.suppress(RuntimeError):  # made outside a loop: bound at the first abatch
            self._loop = asyncio.get_running_loop()
        self._locks: weakref.WeakValueDictionary[tuple[tuple[str, ...], str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._sweeper: asyncio.Task[None] | None = None

    # ----- configuration ---------------------------------------------------------------------

    def _set_index(self, index: Mapping[str, Any]) -> None:
        if not isinstance(index, Mapping):
            raise InvalidArgumentError("index", f"must be a dict (LangGraph's IndexConfig), got {type(index).__name__}")
        unknown = sorted(str(k) for k in index if k not in _INDEX_KEYS)
        if unknown:
            raise InvalidArgumentError("index", f"unknown key(s) {', '.join(unknown)}")
        distance = index.get("distance_type", "cosine")
        if distance != "cosine":
            raise InvalidArgumentError("index.distance_type", f"only cosine is supported, got {distance!r}")
        dims = index.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise InvalidArgumentError("index.dims", f"must be a positive integer, got {dims!r}")
        embed = index.get("embed")
        if embed is None:
            embed = self._memory.embedding_service
            if embed is None:
                raise InvalidArgumentError("index.embed", "is required: the memory has no embedding service")
        if isinstance(embed, Mapping):
            from ..embeddings.factory import create_embedding_service

            service: Any = create_embedding_service(embed)
        elif _is_service(embed):
            service = embed
        else:
            service = _LangChainService(ensure_embeddings(embed), dims)
        if service.dimensions != dims:
            raise InvalidArgumentError("index.dims", f"is {dims}, but the embedding service makes {service.dimensions}")
        fields = index.get("fields", index.get("text_fields")) or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise InvalidArgumentError("index.fields", "must be a list of JSON paths")
        self._service = service
        for f in fields:
            tokenize_path(f)  # a malformed path fails here, not at the first put
        self._fields = list(fields)
        self.index_config = {**dict(index), "dims": dims, "embed": embed, "fields": list(fields)}

    def _vectors(self) -> Any:
        vectors = self._memory.vectors
        if vectors is None:
            raise InvalidArgumentError(
                "index", "the memory keeps no vectors: give it an embedding service (memory.embedding)"
            )
        assert self.index_config is not None
        have = getattr(vectors, "dimensions", None)
        if have is not None and have != self.index_config["dims"]:
            raise InvalidArgumentError(
                "index.dims", f"is {self.index_config['dims']}, but the memory's vectors have {have} dimensions"
            )
        return vectors

    def _scope(self, namespace: Sequence[str]) -> tuple[str | None, dict[str, Any]]:
        """The user a namespace (or a prefix of one) names, and the item scope to read."""
        user = None
        if self.user_label is not None and len(namespace) > self.user_label and namespace[self.user_label] != "*":
            user = namespace[self.user_label]
        scope: dict[str, Any] = {"agent_id": self.agent_id}
        if user is not None:
            scope["user_id"] = user
        return user, scope

    # ----- the two calls LangGraph needs -----------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` and wait (see the class docs for the threads it may be called from)."""
        ops = list(ops)
        if self._sync is not None:
            return self._sync.run(self._abatch(ops))
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop.is_closed() or not loop.is_running():
            raise asyncio.InvalidStateError(
                "CogitatorStore over an async Memory: call the a-methods (await store.aget(...)), or the sync "
                "ones from another thread while the Memory's loop runs; use a SyncMemory for sync code"
            )
        if running is loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to CogitatorStore detected in the event loop of its Memory: "
                "await the a-methods (store.aget, store.aput, ...) instead"
            )
        return asyncio.run_coroutine_threadsafe(self._abatch(ops), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; the results in the same order."""
        ops = list(ops)
        if self._sync is not None:
            sync = self._sync
            return await asyncio.to_thread(sync.run, self._abatch(ops))
        running = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = running
        if running is not self._loop:
            if not self._loop.is_running():
                raise asyncio.InvalidStateError("CogitatorStore: the Memory's event loop is not running")
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._abatch(ops), self._loop))
        return await self._abatch(ops)

    async def _abatch(self, ops: list[Op]) -> list[Result]:
        for i, op in enumerate(ops):
            if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
                raise InvalidArgumentError(f"ops[{i}]", f"unknown operation {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                self._check_put(i, op)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            else:
                results.append(await self._list_namespaces(op))
        return results

    # ----- puts ------------------------------------------------------------------------------

    def _check_put(self, i: int, op: PutOp) -> None:
        if not op.namespace:
            raise InvalidArgumentError(f"ops[{i}].namespace", "must not be empty")
        if len(".".join(op.namespace)) > MAX_SUBJECT_CHARS:
            raise InvalidArgumentError(f"ops[{i}].namespace", f"must be at most {MAX_SUBJECT_CHARS} characters joined")
        key = op.key
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_ATTRIBUTE_CHARS or "\x00" in key:
            raise InvalidArgumentError(
                f"ops[{i}].key", f"must be a non-blank string of at most {MAX_ATTRIBUTE_CHARS} characters without NUL"
            )
        if self.user_label is not None and op.value is not None and len(op.namespace) <= self.user_label:
            raise InvalidArgumentError(
                f"ops[{i}].namespace", f"must have a user id at position {self.user_label} (user_label)"
            )
        if op.value is not None:
            if not isinstance(op.value, Mapping):
                raise InvalidArgumentError(f"ops[{i}].value", f"must be a dict or None, got {type(op.value).__name__}")
            tree.check_metadata(f"ops[{i}].value", op.value)  # JSON a store can keep: checked before any write
        if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, int | float) or op.ttl <= 0):
            raise InvalidArgumentError(f"ops[{i}].ttl", f"must be a positive number of minutes, got {op.ttl!r}")
        if op.index not in (None, False) and (
            not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index)
        ):
            raise InvalidArgumentError(f"ops[{i}].index", "must be None, False or a list of JSON paths")

    def _lock(self, namespace: tuple[str, ...], key: str) -> asyncio.Lock:
        lock = self._locks.get((namespace, key))
        if lock is None:
            lock = asyncio.Lock()
            self._locks[(namespace, key)] = lock
        return lock

    async def _find(self, namespace: tuple[str, ...], key: str) -> list[_Stored]:
        """Every active item of ``(namespace, key)`` (one, unless a racing process left two)."""
        _, scope = self._scope(namespace)
        flt = {
            "scope": scope,  # items are kept in exactly their namespace's scope
            "slot": {"subject": ".".join(namespace), "attribute": key},
            "statuses": ["active"],
        }
        found = unwrap(await self._memory.adapter.query_items(flt))  # type: ignore[attr-defined]
        out = []
        for item in found:
            if META_KEY in item.metadata:
                s = _Stored(item)
                if s.namespace == namespace and s.key == key:
                    out.append(s)
        return out

    def _texts(self, op: PutOp) -> list[str]:
        """The texts of the fields ``op`` indexes (the op's own list, else the store's)."""
        assert op.value is not None
        paths = op.index if isinstance(op.index, list) else self._fields
        texts: list[str] = []
        for path in paths:
            texts.extend(t for t in get_text_at_path(op.value, path) if t and t.strip())
        return texts

    async def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        adapter: Any = self._memory.adapter
        async with self._lock(namespace, key):
            old = await self._find(namespace, key)
            if op.value is None:
                await self._drop([s.item.id for s in old])
                return
            value = dict(op.value)
            vectored = self._service is not None and op.index is not False
            texts = self._texts(op) if vectored or isinstance(op.index, list) else []
            vectors = await self._service.embed_batch(texts) if vectored and texts else []
            now = clock.now()
            created = min((s.created_at for s in old), default=now)
            text = " ".join(texts) if texts else json.dumps(value, ensure_ascii=False, default=str)
            text = text[:MAX_VALUE_CHARS] if text.strip() else key
            user, scope = self._scope(namespace)
            meta: dict[str, Any] = {
                "namespace": list(namespace),
                "key": key,
                "value": value,
                "created_at": created.isoformat(),
            }
            ttl = op.ttl
            if ttl is not None:
                meta["ttl"] = float(ttl)
                meta["expires_at"] = (now + timedelta(minutes=float(ttl))).isoformat()
            item = {
                "id": new_id("lg"),
                "status": "active",
                "recorded_at": now,
                "kind": "fact",
                "subject": ".".join(namespace),
                "attribute": key,
                "value": text,
                "trust": "tool",
                "scope": scope,
                "metadata": {META_KEY: meta},
            }
            stored: MemoryItem = unwrap(await adapter.add_items([item]))[0]
            if vectors:
                rows = []
                for n, (content, vector) in enumerate(zip(texts, vectors, strict=True)):
                    metadata: dict[str, Any] = {"index": LANGGRAPH_INDEX, "agent_id": self.agent_id}
                    if user is not None:
                        metadata["user_id"] = user
                    rows.append(
                        {
                            "id": f"{stored.id}_v{n}",
                            "source_id": stored.id,
                            "source_type": "langgraph",
                            "content": content,
                            "vector": list(vector),
                            "metadata": metadata,
                        }
                    )
                try:
                    unwrap(await self._vectors().add_embeddings(rows))
                except BaseException:
                    await adapter.delete_items([stored.id])
                    raise
            await self._drop([s.item.id for s in old])

    async def _drop(self, ids: list[str]) -> None:
        """Delete items and their vectors."""
        if not ids:
            return
        if self._memory.vectors is not None:
            vectors = self._memory.vectors
            found = unwrap(await vectors.get_by_sources(ids))
            mine = [e.id for e in found if e.metadata.get("index") == LANGGRAPH_INDEX]
            if mine:
                unwrap(await vectors.delete_embeddings(mine))
        unwrap(await self._memory.adapter.delete_items(ids))  # type: ignore[attr-defined]

    # ----- reads -----------------------------------------------------------------------------

    def _omit_expired(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    async def _refresh(self, found: Sequence[_Stored], refresh: bool) -> None:
        """Move the expiry of ``found`` items that have a TTL ``ttl`` minutes from now."""
        if not refresh:
            return
        now = clock.now()
        updates = []
        for s in found:
            if s.ttl is None or s.expired(now):
                continue
            meta = dict(s.item.metadata[META_KEY])
            meta["expires_at"] = (now + timedelta(minutes=s.ttl)).isoformat()
            updates.append({"id": s.item.id, "expected_version": s.item.version, "metadata": {META_KEY: meta}})
        if updates:
            # A racing put, delete or refresh moved the item on (its expiry is fresh already) or
            # took it away (nothing to refresh): the read stands.
            res = await self._memory.adapter.update_items(updates)  # type: ignore[attr-defined]
            if not res.success and res.error_type not in (ConflictError, NotFoundError):
                unwrap(res)

    async def _get(self, op: GetOp) -> Item | None:
        found = _newest(await self._find(tuple(op.namespace), op.key))
        if not found:
            return None
        s = found[0]
        if self._omit_expired() and s.expired(clock.now()):
            return None
        await self._refresh([s], op.refresh_ttl)
        return s.as_item()

    async def _in_scope(self, prefix: tuple[str, ...]) -> list[_Stored]:
        """Every live record under ``prefix`` (read by scope, narrowed here)."""
        user, scope = self._scope(prefix)
        # Exactly the scope when it is known (no user label, or the prefix names the user), else
        # every user's under the agent.
        how = "scope" if self.user_label is None or user is not None else "within"
        items = unwrap(
            await self._memory.adapter.query_items({how: scope, "statuses": ["active"]})  # type: ignore[attr-defined]
        )
        return self._keep([_Stored(i) for i in items if META_KEY in i.metadata], prefix, None)

    def _keep(self, found: Iterable[_Stored], prefix: tuple[str, ...], flt: dict[str, Any] | None) -> list[_Stored]:
        now = clock.now()
        omit = self._omit_expired()
        out = []
        for s in _newest(found):
            if s.namespace[: len(prefix)] != prefix:
                continue
            if omit and s.expired(now):
                continue
            if flt and not all(matches(s.value.get(k), v) for k, v in flt.items()):
                continue
            out.append(s)
        return out

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit < 0 or op.offset < 0:
            raise InvalidArgumentError("limit", "limit and offset must not be negative")
        if op.filter is not None and not isinstance(op.filter, dict):
            raise InvalidArgumentError("filter", f"must be a dict, got {type(op.filter).__name__}")
        check_filter("filter", op.filter)
        if not (op.query and op.query.strip()):
            found = self._keep(await self._in_scope(prefix), (), op.filter)
            found.sort(key=lambda s: (s.updated_at, s.item.id), reverse=True)
            page = found[op.offset : op.offset + op.limit]
            await self._refresh(page, op.refresh_ttl)
            return [s.as_hit(None) for s in page]
        want = op.offset + op.limit
        if want == 0:
            return []
        qvec = list(await self._service.embed(op.query)) if self._service is not None else None
        depth = min(_MAX_DEPTH, max(4 * want, _DEPTH))
        while True:
            ranked, exhausted = await self._ranked(op.query, qvec, prefix, op.filter, depth, want)
            if len(ranked) >= want or exhausted or depth >= _MAX_DEPTH:
                break
            depth = min(_MAX_DEPTH, depth * 4)
        hits = ranked[op.offset : want]
        await self._refresh([s for s, _ in hits], op.refresh_ttl)
        return [s.as_hit(score) for s, score in hits]

    async def _ranked(
        self,
        query: str,
        qvec: list[float] | None,
        prefix: tuple[str, ...],
        flt: dict[str, Any] | None,
        depth: int,
        want: int,
    ) -> tuple[list[tuple[_Stored, float | None]], bool]:
        """The first ``want`` records under ``prefix`` passing ``flt`` that the recall channels
        find for ``query``, best first, and whether the channels returned less than ``depth``
        (nothing more to find).

        With an index, the vector channel ranks (an item scores its best field's cosine); once
        it has returned every vector in scope, items without vectors that the keyword channel
        finds follow, without a score (as LangGraph's stores fill a page). Without an index,
        the keyword channel ranks (BM25). Items are read in rank order, a few at a time, until
        ``want`` pass."""
        user, _ = self._scope(prefix)
        order: dict[str, float | None] = {}
        if qvec is not None:
            near = await nearest(
                self._vectors(), qvec, RecallFilter(agent_id=self.agent_id, user_id=user), LANGGRAPH_INDEX, depth
            )
            exhausted = len(near) < depth
            for h in near:  # best first: an item's first vector is its best
                if h.source_id and h.source_id not in order:
                    order[h.source_id] = h.score
        else:
            keyword = await self._keyword(query, user, depth)
            exhausted = len(keyword) < depth
            order = dict(keyword)
        kept = await self._read_ranked(list(order.items()), prefix, flt, want)
        if qvec is not None and exhausted and len(kept) < want:
            keyword = await self._keyword(query, user, depth)
            exhausted = len(keyword) < depth
            extra: list[tuple[str, float | None]] = [(rid, None) for rid, _ in keyword if rid not in order]
            kept += await self._read_ranked(extra, prefix, flt, want - len(kept))
        return kept, exhausted

    async def _keyword(self, query: str, user: str | None, depth: int) -> list[tuple[str, float | None]]:
        """The items the recall index's keyword channel finds, best first, with their BM25 score."""
        recall = RecallFilter(agent_id=self.agent_id, user_id=user, kinds=["item"], statuses=["active"])
        found = unwrap(await self._memory.adapter.recall_keyword(query, filter=recall, limit=depth))  # type: ignore[attr-defined]
        out: dict[str, float | None] = {}
        for c in found:
            out.setdefault(c.record.source_id, c.score)
        return list(out.items())

    async def _read_ranked(
        self, ranked: list[tuple[str, float | None]], prefix: tuple[str, ...], flt: dict[str, Any] | None, want: int
    ) -> list[tuple[_Stored, float | None]]:
        """The first ``want`` of ``ranked`` (item id, score) that are live records under
        ``prefix`` passing ``flt``, read a chunk at a time."""
        out: list[tuple[_Stored, float | None]] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        chunk = max(2 * want, 50)
        for start in range(0, len(ranked), chunk):
            part = ranked[start : start + chunk]
            stored = unwrap(await self._memory.adapter.get_items([rid for rid, _ in part]))  # type: ignore[attr-defined]
            by_id = {i.id: i for i in stored if i.status == "active" and META_KEY in i.metadata}
            for rid, score in part:
                item = by_id.get(rid)
                if item is None:
                    continue
                record = _Stored(item)
                if (record.namespace, record.key) in seen or not self._keep([record], prefix, flt):
                    continue
                seen.add((record.namespace, record.key))
                out.append((record, score))
                if len(out) >= want:
                    return out
        return out

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for c in op.match_conditions or ():
            if c.match_type == "prefix":
                cut = []
                for label in c.path:
                    if label == "*":
                        break
                    cut.append(label)
                prefix = tuple(cut)
        names = {s.namespace for s in await self._in_scope(prefix)}
        conditions = op.match_conditions or ()
        found = [n for n in names if all(namespace_matches(c, n) for c in conditions)]
        if op.max_depth is not None:
            found = [n[: op.max_depth] for n in found]
        return sorted(set(found))[op.offset : op.offset + op.limit]

    # ----- TTL -------------------------------------------------------------------------------

    def sweep_ttl(self) -> Any:
        """Delete every expired item of the store's agent (and its vectors): how many went.
        Over a ``Memory`` this returns an awaitable; over a ``SyncMemory`` it blocks."""
        return self._on_loop(self._sweep())

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:
        """Sweep expired items every ``sweep_interval_minutes`` (else the TTL config's, else 5)
        in a task of the memory's loop, until :meth:`stop_ttl_sweeper`; the task. Over a
        ``Memory`` this returns an awaitable; over a ``SyncMemory`` it blocks."""
        return self._on_loop(self._start_sweeper(sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> Any:
        """Stop the sweeper; whether it stopped within ``timeout`` seconds. Over a ``Memory``
        this returns an awaitable; over a ``SyncMemory`` it blocks."""
        return self._on_loop(self._stop_sweeper(timeout))

    def _on_loop(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        if self._sync is not None:
            return self._sync.run(coroutine)
        return coroutine

    async def _sweep(self) -> int:
        now = clock.now()
        items = unwrap(
            await self._memory.adapter.query_items(  # type: ignore[attr-defined]
                {"within": {"agent_id": self.agent_id}, "statuses": ["active"]}
            )
        )
        gone = [i.id for i in items if META_KEY in i.metadata and _Stored(i).expired(now)]
        await self._drop(gone)
        return len(gone)

    async def _start_sweeper(self, sweep_interval_minutes: float | None) -> asyncio.Task[None]:
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5

        async def run() -> None:
            while True:
                await asyncio.sleep(float(minutes) * 60)
                try:
                    await self._sweep()
                except Exception:  # the next pass tries again
                    logging.getLogger("cogitator_memory").warning("langgraph store: TTL sweep failed", exc_info=True)

        self._sweeper = asyncio.get_running_loop().create_task(run())
        return self._sweeper

    async def _stop_sweeper(self, timeout: float | None) -> bool:
        task, self._sweeper = self._sweeper, None
        if task is None or task.done():
            return True
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except asyncio.CancelledError:
            return True
        except TimeoutError:
            return False
        return True


__all__ = ["LANGGRAPH_INDEX", "CogitatorStore", "langchain_embedding_service"]
