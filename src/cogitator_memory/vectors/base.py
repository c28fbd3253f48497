"""The embedding-store contract: :class:`EmbeddingAdapter` for users, :class:`BaseEmbeddingAdapter` for authors.

An embedding store keeps :class:`Embedding` records (a vector, the text it embeds, where it
comes from and metadata) and finds them by cosine similarity (:meth:`search`) and by BM25
(:meth:`keyword_search`). Every call is ``async`` and returns a
:class:`~cogitator_memory.MemoryResult`; bad input gets a failed result naming the argument and
writes nothing.

**Scoping** (applied the same way by every store, see :mod:`cogitator_memory.vectors.records`):
with ``filter.agent_id`` given, embeddings whose ``metadata["agent_id"]`` names another agent
are excluded and those without one (absent or ``None``) are shared and found; the same for
``user_id`` and ``thread_id``. Without the filter key there is no scoping on it.
``filter.source_type`` and ``filter.metadata`` (exact top-level values) narrow further.

Store authors subclass :class:`BaseEmbeddingAdapter` (a standalone store) or mix
:class:`EmbeddingStoreMixin` into a thread store that also keeps vectors (it needs the
``provider``, ``_require_connected()`` and ``_fail()`` of
:class:`~cogitator_memory.threads.base.BaseMemoryAdapter`). Either way the public methods below
are written once; the engine implements the underscore primitives, each atomic, each receiving
checked arguments.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

from .. import clock
from ..errors import ConflictError, InvalidArgumentError
from ..ids import new_id
from ..lifecycle import Capability, StoreLifecycle
from ..result import MemoryResult, err, ok, ok_none
from ..search.bm25 import BM25
from ..search.tokenizer import index_terms
from ..threads import tree
from .records import (
    MAX_CONTENT_CHARS,
    MAX_DIMENSIONS,
    MAX_SEARCH_LIMIT,
    SCOPE_KEYS,
    DeletionFilter,
    Embedding,
    EmbeddingFilter,
    NewEmbedding,
    ScoredEmbedding,
    VectorHit,
    check_deletion,
    check_filter,
    check_include_vectors,
    check_limit,
    check_new_embedding,
    check_query_vector,
    check_source_ids,
    check_text,
    check_threshold,
    sort_hits,
    without_vectors,
)

logger = logging.getLogger("cogitator_memory")

EmbeddingInput = NewEmbedding | dict[str, Any]
FilterInput = EmbeddingFilter | dict[str, Any] | None


@runtime_checkable
class EmbeddingAdapter(Protocol):
    """What every embedding store offers. All calls return a :class:`~cogitator_memory.MemoryResult`."""

    @property
    def provider(self) -> str:
        """The engine's name: ``memory``, ``sqlite``, ``qdrant``, ``postgres`` or your own."""
        ...

    @property
    def dimensions(self) -> int | None:
        """The vector size of the store (``None`` until configured or learned from a vector)."""
        ...

    async def connect(self) -> MemoryResult[None]:
        """Open the store (create its tables or collection)."""
        ...

    async def disconnect(self) -> MemoryResult[None]:
        """Close the store."""
        ...

    async def health_check(self) -> MemoryResult[None]:
        """A round trip to the engine."""
        ...

    async def add_embedding(self, embedding: EmbeddingInput) -> MemoryResult[Embedding]:
        """Store one embedding; a taken id is refused."""
        ...

    async def add_embeddings(self, embeddings: Sequence[EmbeddingInput]) -> MemoryResult[list[Embedding]]:
        """Store many embeddings, all or nothing."""
        ...

    async def search(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        threshold: float = 0.0,
        filter: FilterInput = None,
        include_vectors: bool = True,
    ) -> MemoryResult[list[ScoredEmbedding]]:
        """The most similar embeddings by cosine (in [-1, 1], best first), scoped by ``filter``;
        with ``include_vectors=False`` the hits come without their vectors."""
        ...

    async def keyword_search(
        self, query: str, *, limit: int = 10, filter: FilterInput = None, include_vectors: bool = True
    ) -> MemoryResult[list[ScoredEmbedding]]:
        """Embeddings holding the query's terms, ranked by BM25 (best first), scoped by ``filter``;
        with ``include_vectors=False`` the hits come without their vectors."""
        ...

    async def get_embedding(self, embedding_id: str) -> MemoryResult[Embedding | None]:
        """The embedding, or ``None``."""
        ...

    async def delete_embedding(self, embedding_id: str) -> MemoryResult[None]:
        """Delete one embedding (a missing one succeeds)."""
        ...

    async def delete_embeddings(self, embedding_ids: Sequence[str]) -> MemoryResult[int]:
        """Delete several embeddings (missing ones skipped); how many went."""
        ...

    async def delete_by_filter(
        self,
        *,
        source_type: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryResult[int]:
        """Delete the embeddings matching every condition exactly; how many went."""
        ...

    async def get_by_sources(self, source_ids: Sequence[str]) -> MemoryResult[list[Embedding]]:
        """The embeddings of these sources, in their order."""
        ...


def check_bm25(value: object) -> BM25:
    """The keyword scoring a store was given (``None``: ``BM25()``, k1=1.2 and b=0.75)."""
    if value is None:
        return BM25()
    if not isinstance(value, BM25):
        raise InvalidArgumentError("bm25", f"must be a BM25 (its k1 and b), got {type(value).__name__}")
    return value


def check_dimensions(value: object) -> int | None:
    """A configured vector size: ``None`` (learn it from the first vector) or 1..65,536."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSIONS:
        raise InvalidArgumentError("dimensions", f"must be an integer from 1 to {MAX_DIMENSIONS}, got {value!r}")
    return value


async def nearest_ids(
    store: Any, vector: Sequence[float], *, limit: int, threshold: float = 0.0, filter: FilterInput = None
) -> MemoryResult[list[VectorHit]]:
    """The hits of ``store.search_ids`` (id, source id, cosine) when ``store`` has it (every
    built-in store does), else those of its ``search`` without vectors, each made a
    :class:`~cogitator_memory.vectors.records.VectorHit` (an embedding store of your own
    written to :class:`EmbeddingAdapter` alone): for callers that want only which sources are
    nearest."""
    search_ids = getattr(store, "search_ids", None)
    if search_ids is not None:
        found: MemoryResult[list[VectorHit]] = await search_ids(vector, limit=limit, threshold=threshold, filter=filter)
        return found
    hits: MemoryResult[list[ScoredEmbedding]] = await store.search(
        vector, limit=limit, threshold=threshold, filter=filter, include_vectors=False
    )
    if not hits.success or hits.data is None:
        return cast("MemoryResult[list[VectorHit]]", hits)
    return ok([VectorHit(h.id, h.source_id, h.score) for h in hits.data])


class EmbeddingStoreMixin(ABC):
    """The public embedding calls, written once over the engine's underscore primitives.

    Needs ``provider``, ``_require_connected()`` and ``_fail(operation, exc)`` from the class it
    is mixed into (:class:`BaseEmbeddingAdapter` or a thread store's base class), and a call of
    :meth:`_init_embeddings` in ``__init__``.
    """

    provider: ClassVar[str]
    #: Whether a search that ``filter.metadata_not`` narrows to a small part of its scope costs
    #: about what a search of that part alone would: true where the engine finds the rows left
    #: in before ranking (SQLite keeps the codes of each ``index`` apart; the in-memory store and
    #: Qdrant filter first). PostgreSQL's HNSW index walks past every row a filter leaves out, so
    #: a caller leaving out most of a scope (the semantic section, every turn's vector) searches
    #: it without the condition there and drops those hits itself. Stores of your own: ``False``.
    cheap_metadata_not: ClassVar[bool] = False
    _dimensions: int | None = None
    _configured_dimensions: int | None = None

    def _init_embeddings(self, dimensions: int | None) -> None:
        """Set up the embedding state; ``dimensions`` as given to the store (checked here)."""
        self._dimensions = check_dimensions(dimensions)
        self._configured_dimensions = self._dimensions

    if TYPE_CHECKING:  # provided by the class the mixin goes into

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    @property
    def dimensions(self) -> int | None:
        """The vector size of the store: as configured, else learned from the stored vectors or the
        first one added; ``None`` until then."""
        return self._dimensions

    def _adopt_dimensions(self, found: int | None) -> None:
        """Take the size of the vectors an engine already holds (at connect).

        A store configured for another size refuses to connect, naming both sizes.
        """
        if found is None:
            return
        if self._configured_dimensions is not None and found != self._configured_dimensions:
            raise ConflictError(
                f"{self.provider} embedding store holds vectors of {found} dimensions, "
                f"but it was configured for {self._configured_dimensions}"
            )
        self._dimensions = found

    async def _stored_dimensions(self) -> int | None:
        """The size of the vectors the engine holds, asked when the store does not know its size
        yet (another connection may have written since connect). ``None``: still unknown."""
        return None

    async def _known_dimensions(self) -> int | None:
        if self._dimensions is None:
            found = await self._stored_dimensions()
            if found is not None:
                self._adopt_dimensions(found)
        return self._dimensions

    # ----- engine primitives ---------------------------------------------------------------

    @abstractmethod
    async def _add_embeddings(self, embeddings: list[Embedding]) -> None:
        """Store every embedding or none (one transaction); ``ConflictError`` when an id is taken.

        The objects are handed back to the caller afterwards: a store that keeps objects keeps
        copies of them (as the in-memory store does), never these."""

    @abstractmethod
    async def _search(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        """Up to ``limit`` embeddings passing ``flt`` with cosine >= ``threshold``, best first."""

    @abstractmethod
    async def _keyword_search(self, terms: list[str], limit: int, flt: EmbeddingFilter) -> list[ScoredEmbedding]:
        """Up to ``limit`` embeddings passing ``flt`` holding any of ``terms`` (distinct, from
        :func:`~cogitator_memory.search.tokenizer.index_terms`), by BM25 score, best first."""

    async def _search_hits(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        """:meth:`_search`, its hits without vectors unless ``include_vectors``. An engine that can
        leave the vectors unread (a server sending fewer bytes) overrides this."""
        hits = await self._search(vector, limit, threshold, flt)
        return hits if include_vectors else without_vectors(hits)

    async def _search_ids(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[VectorHit]:
        """:meth:`_search`'s hits as ids and cosines, best first (cosine descending, then id). An
        engine that can leave the rest of the rows unread overrides this."""
        hits = sort_hits(await self._search_hits(vector, limit, threshold, flt, False), limit)
        return [VectorHit(h.id, h.source_id, h.score) for h in hits]

    async def _keyword_hits(
        self, terms: list[str], limit: int, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        """:meth:`_keyword_search`, its hits without vectors unless ``include_vectors`` (see
        :meth:`_search_hits`)."""
        hits = await self._keyword_search(terms, limit, flt)
        return hits if include_vectors else without_vectors(hits)

    @abstractmethod
    async def _get_embedding(self, embedding_id: str) -> Embedding | None: ...

    @abstractmethod
    async def _delete_embedding(self, embedding_id: str) -> bool:
        """Delete it; whether it existed."""

    async def _delete_embeddings(self, embedding_ids: list[str]) -> int:
        """Delete them; how many existed. By default one :meth:`_delete_embedding` each; an
        engine that can do it in one write overrides this."""
        gone = 0
        for embedding_id in embedding_ids:
            gone += await self._delete_embedding(embedding_id)
        return gone

    @abstractmethod
    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        """Delete every embedding :func:`~cogitator_memory.vectors.records.deletion_matches`
        accepts, atomically; how many went."""

    @abstractmethod
    async def _get_by_sources(self, source_ids: list[str]) -> list[Embedding]:
        """Every embedding whose ``source_id`` is one of ``source_ids`` (any order)."""

    # ----- public calls --------------------------------------------------------------------

    def _prepare(self, items: Sequence[object], dims: int | None) -> list[Embedding]:
        prepared: list[Embedding] = []
        seen: set[str] = set()
        single = len(items) == 1
        for i, item in enumerate(items):
            name = "embedding" if single else f"embeddings[{i}]"
            new = check_new_embedding(name, item, dims)
            if dims is None:
                dims = len(new.vector)
            eid = new.id or new_id("emb_")
            if eid in seen:
                raise InvalidArgumentError(f"{name}.id", f"{eid} appears twice in one batch")
            seen.add(eid)
            prepared.append(
                Embedding.model_construct(
                    id=eid,
                    source_id=new.source_id,
                    source_type=new.source_type,
                    content=new.content,
                    vector=new.vector,
                    metadata=new.metadata or {},
                    created_at=clock.now(),
                )
            )
        return prepared

    async def add_embedding(self, embedding: EmbeddingInput) -> MemoryResult[Embedding]:
        """Store one embedding (a :class:`NewEmbedding` or a dict of its fields).

        The vector must be non-empty, finite, not all zeros, and of the store's size; ``content``
        at most :data:`~cogitator_memory.vectors.records.MAX_CONTENT_CHARS` characters; scope keys
        in ``metadata`` must be strings. An ``id`` already stored is refused (``ConflictError``).
        The first vector of a store without ``dimensions`` sets its size.
        """
        result = await self.add_embeddings([embedding])
        if not result.success:
            return err(result.error or "add_embedding failed", result.error_type)
        assert result.data is not None
        return ok(result.data[0])

    async def add_embeddings(self, embeddings: Sequence[EmbeddingInput]) -> MemoryResult[list[Embedding]]:
        """Store many embeddings, all or nothing: one bad item or a taken id stores none."""
        try:
            self._require_connected()
            if isinstance(embeddings, str | bytes | dict) or not isinstance(embeddings, Sequence):
                raise InvalidArgumentError("embeddings", "must be a list of embeddings")
            items = list(embeddings)
            prepared = self._prepare(items, await self._known_dimensions() if items else self._dimensions)
            if not prepared:
                return ok([])
            await self._add_embeddings(prepared)
            if self._dimensions is None:
                self._dimensions = len(prepared[0].vector)
            return ok(prepared)  # the caller's: stores keep rows or copies of their own
        except Exception as exc:
            return self._fail("add_embeddings", exc)

    async def search(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        threshold: float = 0.0,
        filter: FilterInput = None,
        include_vectors: bool = True,
    ) -> MemoryResult[list[ScoredEmbedding]]:
        """The ``limit`` embeddings most similar to ``vector`` by cosine (score in [-1, 1], best
        first), those with a score below ``threshold`` left out, narrowed by ``filter``.

        ``limit`` is 1..10,000; ``threshold`` in [-1, 1]. An empty store of unknown size finds nothing.
        With ``include_vectors=False`` every hit's ``vector`` is empty (a server store then does not
        send them).
        """
        try:
            query, size, floor, flt = await self._search_args(vector, limit, threshold, filter)
            with_vectors = check_include_vectors(include_vectors)
            if self._dimensions is None:
                return ok([])
            return ok(sort_hits(await self._search_hits(query, size, floor, flt, with_vectors), size))
        except Exception as exc:
            return self._fail("search", exc)

    async def search_ids(
        self, vector: Sequence[float], *, limit: int = 10, threshold: float = 0.0, filter: FilterInput = None
    ) -> MemoryResult[list[VectorHit]]:
        """What :meth:`search` finds, each hit as a :class:`~cogitator_memory.vectors.records.VectorHit`
        (id, source id, cosine), in the same order: for a caller that wants only which sources
        are nearest (recall's vector channel), a server store sends neither texts nor metadata.
        The arguments are checked as :meth:`search` checks them."""
        try:
            query, size, floor, flt = await self._search_args(vector, limit, threshold, filter)
            if self._dimensions is None:
                return ok([])
            return ok(await self._search_ids(query, size, floor, flt))
        except Exception as exc:
            return self._fail("search_ids", exc)

    async def _search_args(
        self, vector: Sequence[float], limit: object, threshold: object, filter: object
    ) -> tuple[list[float], int, float, EmbeddingFilter]:
        """A vector search's arguments checked (the store connected, the vector of its size)."""
        self._require_connected()
        query = check_query_vector("vector", vector, await self._known_dimensions())
        return query, check_limit(limit), check_threshold(threshold), check_filter(filter)

    async def keyword_search(
        self, query: str, *, limit: int = 10, filter: FilterInput = None, include_vectors: bool = True
    ) -> MemoryResult[list[ScoredEmbedding]]:
        """Embeddings whose content holds any term of ``query``, ranked by BM25 (score = the BM25
        score, > 0, best first), narrowed by ``filter``.

        Terms come from :func:`~cogitator_memory.search.tokenizer.index_terms` (lower case,
        letters and digits of every script, CJK as bigrams, English stopwords dropped); a query
        with no such term finds nothing. ``include_vectors=False`` as in :meth:`search`.
        """
        try:
            self._require_connected()
            text = check_text("query", query)
            size = check_limit(limit)
            flt = check_filter(filter)
            with_vectors = check_include_vectors(include_vectors)
            terms = list(dict.fromkeys(index_terms(text)))
            if not terms:
                return ok([])
            return ok(sort_hits(await self._keyword_hits(terms, size, flt, with_vectors), size))
        except Exception as exc:
            return self._fail("keyword_search", exc)

    async def get_embedding(self, embedding_id: str) -> MemoryResult[Embedding | None]:
        """The embedding, or ``None`` when there is none with that id."""
        try:
            self._require_connected()
            return ok(await self._get_embedding(tree.check_id("embedding_id", embedding_id)))
        except Exception as exc:
            return self._fail("get_embedding", exc)

    async def delete_embedding(self, embedding_id: str) -> MemoryResult[None]:
        """Delete the embedding; deleting a missing one succeeds."""
        try:
            self._require_connected()
            await self._delete_embedding(tree.check_id("embedding_id", embedding_id))
            return ok_none()
        except Exception as exc:
            return self._fail("delete_embedding", exc)

    async def delete_embeddings(self, embedding_ids: Sequence[str]) -> MemoryResult[int]:
        """Delete these embeddings (missing ones are skipped) in one write where the engine
        allows; how many went. Every id is checked before anything is deleted."""
        try:
            self._require_connected()
            if isinstance(embedding_ids, str) or not isinstance(embedding_ids, Sequence):
                raise InvalidArgumentError("embedding_ids", "must be a list of embedding ids")
            ids = list(dict.fromkeys(tree.check_id(f"embedding_ids[{i}]", e) for i, e in enumerate(embedding_ids)))
            return ok(await self._delete_embeddings(ids) if ids else 0)
        except Exception as exc:
            return self._fail("delete_embeddings", exc)

    async def delete_by_filter(
        self,
        *,
        source_type: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryResult[int]:
        """Delete every embedding matching ALL the conditions given; returns how many went.

        Conditions match exactly: ``agent_id`` deletes the embeddings whose metadata names that
        agent (shared ones stay), likewise ``thread_id``; ``metadata`` gives exact top-level
        values. A call with no condition is refused.
        """
        try:
            self._require_connected()
            flt = check_deletion(source_type, agent_id, thread_id, metadata)
            return ok(await self._delete_by_filter(flt))
        except Exception as exc:
            return self._fail("delete_by_filter", exc)

    async def get_by_sources(self, source_ids: Sequence[str]) -> MemoryResult[list[Embedding]]:
        """Every embedding of the given sources, in the order of ``source_ids``, then by creation."""
        try:
            self._require_connected()
            ids = check_source_ids(source_ids)
            if not ids:
                return ok([])
            found = await self._get_by_sources(ids)
            rank = {sid: i for i, sid in enumerate(ids)}
            found.sort(key=lambda e: (rank.get(e.source_id, len(rank)), e.created_at, e.id))
            return ok(found)
        except Exception as exc:
            return self._fail("get_by_sources", exc)


class BaseEmbeddingAdapter(StoreLifecycle, EmbeddingStoreMixin):
    """Base class of a standalone embedding store: lifecycle and the public calls written once.

    A subclass implements ``_connect``, ``_disconnect``, optionally ``_ping`` and ``_map_error``
    (see :class:`~cogitator_memory.lifecycle.StoreLifecycle`), and the primitives of
    :class:`EmbeddingStoreMixin`.
    """

    provider: ClassVar[str] = "custom"
    #: What the store supports (checked by code with :meth:`supports`).
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"vectors", "keyword-search", "health"})
    store_kind: ClassVar[str] = "embedding store"

    def __init__(self, *, dimensions: int | None = None) -> None:
        super().__init__()
        self._init_embeddings(dimensions)


__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_DIMENSIONS",
    "MAX_SEARCH_LIMIT",
    "SCOPE_KEYS",
    "BaseEmbeddingAdapter",
    "DeletionFilter",
    "Embedding",
    "EmbeddingAdapter",
    "EmbeddingFilter",
    "EmbeddingInput",
    "EmbeddingStoreMixin",
    "FilterInput",
    "NewEmbedding",
    "ScoredEmbedding",
    "check_bm25",
    "check_dimensions",
]
