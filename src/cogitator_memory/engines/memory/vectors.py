"""``InMemoryEmbeddingAdapter``: embeddings in the process, searched with numpy.

Vectors are kept as float32 unit vectors for search (and as given, for reads); the matrix of
each searched scope is cached and dropped on the next write. Keyword search runs on a
:class:`~cogitator_memory.search.bm25.BM25Index` whose statistics cover the whole store. Each
primitive runs without awaiting, so every call is atomic. Nothing survives the process.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...errors import ConflictError, InvalidArgumentError
from ...search.bm25 import BM25, BM25Index
from ...search.tokenizer import index_terms
from ...threads.records import built_record
from ...vectors.base import BaseEmbeddingAdapter, check_bm25
from ...vectors.matrix import Matrix, ScopeCache, VectorMatrix, load_numpy, unit_rows
from ...vectors.records import (
    DeletionFilter,
    Embedding,
    EmbeddingFilter,
    ScoredEmbedding,
    deletion_matches,
    filter_matches,
)

#: JSON values that are immutable: a dict of nothing else is copied by one C call.
_IMMUTABLE = frozenset([str, int, float, bool, type(None)])


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (faster than ``copy.deepcopy`` for it)."""
    if isinstance(value, dict):
        if all(map(_IMMUTABLE.__contains__, map(type, value.values()))):
            return value.copy()  # flat metadata, the common case: nothing below to copy
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _copy(embedding: Embedding) -> Embedding:
    """A copy sharing nothing mutable with ``embedding`` (its floats and strings are immutable)."""
    return embedding.model_copy(update={"vector": list(embedding.vector), "metadata": _copy_json(embedding.metadata)})


class InMemoryEmbeddingAdapter(BaseEmbeddingAdapter):
    """An embedding store in the process's memory (needs numpy, the ``[vectors]`` extra).

    ``dimensions`` fixes the vector size; without it the first vector added sets it. ``bm25``
    sets the keyword scoring (default ``BM25(k1=1.2, b=0.75)``); for chat messages of very
    uneven length ``BM25(k1=3, b=1)`` measured better (see ``docs/embeddings.md``).
    """

    provider: ClassVar[str] = "memory"
    cheap_metadata_not: ClassVar[bool] = True

    def __init__(self, *, dimensions: int | None = None, bm25: BM25 | None = None, provider: str | None = None) -> None:
        if provider not in (None, "memory"):
            raise InvalidArgumentError("provider", f"must be 'memory', got {provider!r}")
        scoring = check_bm25(bm25)
        super().__init__(dimensions=dimensions)
        self._items: dict[str, Embedding] = {}
        self._units: dict[str, Matrix] = {}
        self._terms: dict[str, list[str]] = {}
        self._by_source: dict[str, list[str]] = {}
        self._index: BM25Index[str] = BM25Index(bm25=scoring)
        self._cache = ScopeCache()

    async def _connect(self) -> None:
        load_numpy("InMemoryEmbeddingAdapter")

    async def _disconnect(self) -> None:
        return None

    # ----- writes ----------------------------------------------------------------------------

    async def _add_embeddings(self, embeddings: list[Embedding]) -> None:
        taken = [e.id for e in embeddings if e.id in self._items]
        if taken:
            raise ConflictError(f"embedding id(s) already stored: {', '.join(taken)}")
        units = unit_rows([e.vector for e in embeddings])
        for row, emb in enumerate(embeddings):
            stored = _copy(emb)
            self._items[emb.id] = stored
            self._units[emb.id] = units[row]
            terms = index_terms(emb.content)
            self._terms[emb.id] = terms
            self._index.add(emb.id, terms)
            self._by_source.setdefault(emb.source_id, []).append(emb.id)
        self._cache.clear()

    def _remove(self, embedding_id: str) -> None:
        emb = self._items.pop(embedding_id)
        self._units.pop(embedding_id, None)
        self._index.remove_terms(embedding_id, self._terms.pop(embedding_id, []))
        siblings = self._by_source.get(emb.source_id, [])
        if embedding_id in siblings:
            siblings.remove(embedding_id)
        if not siblings:
            self._by_source.pop(emb.source_id, None)

    async def _delete_embedding(self, embedding_id: str) -> bool:
        if embedding_id not in self._items:
            return False
        self._remove(embedding_id)
        self._cache.clear()
        return True

    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        doomed = [e.id for e in self._items.values() if deletion_matches(e.source_type, e.metadata, flt)]
        for embedding_id in doomed:
            self._remove(embedding_id)
        if doomed:
            self._cache.clear()
        return len(doomed)

    # ----- reads -----------------------------------------------------------------------------

    def _scope_matrix(self, flt: EmbeddingFilter) -> VectorMatrix:
        key = flt.cache_key()
        found = self._cache.get(key)
        if found is not None:
            return found
        if flt.is_empty:
            ids = list(self._items)
        else:
            ids = [e.id for e in self._items.values() if filter_matches(e.source_type, e.metadata, flt)]
        np = load_numpy("InMemoryEmbeddingAdapter")
        matrix = np.stack([self._units[i] for i in ids]) if ids else None
        built = VectorMatrix(ids, matrix)
        self._cache.put(key, built)
        return built

    def _hit(self, embedding_id: str, score: float, vectors: bool = True) -> ScoredEmbedding:
        """A hit of a stored embedding, sharing nothing mutable with it; with ``vectors=False``
        its vector is empty (and the stored one is never copied)."""
        e = self._items[embedding_id].__dict__
        return built_record(
            ScoredEmbedding,
            {
                "id": e["id"],
                "source_id": e["source_id"],
                "source_type": e["source_type"],
                "content": e["content"],
                "vector": list(e["vector"]) if vectors else [],
                "metadata": _copy_json(e["metadata"]),
                "created_at": e["created_at"],
                "score": score,
            },
        )

    async def _search(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        return await self._search_hits(vector, limit, threshold, flt, True)

    async def _search_hits(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        matrix = self._scope_matrix(flt)
        return [self._hit(i, s, include_vectors) for i, s in matrix.top(vector, limit, threshold)]

    async def _keyword_hits(
        self, terms: list[str], limit: int, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        return self._keyword_ranked(terms, limit, flt, include_vectors)

    async def _keyword_search(self, terms: list[str], limit: int, flt: EmbeddingFilter) -> list[ScoredEmbedding]:
        return self._keyword_ranked(terms, limit, flt, True)

    def _keyword_ranked(
        self, terms: list[str], limit: int, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        items = self._items

        def keep(embedding_id: str) -> bool:
            emb = items[embedding_id]
            return filter_matches(emb.source_type, emb.metadata, flt)

        ranked = self._index.search_terms(terms, limit=limit, keep=None if flt.is_empty else keep)
        return [self._hit(i, s, include_vectors) for i, s in ranked]

    async def _get_embedding(self, embedding_id: str) -> Embedding | None:
        found = self._items.get(embedding_id)
        return None if found is None else _copy(found)

    async def _get_by_sources(self, source_ids: list[str]) -> list[Embedding]:
        return [_copy(self._items[i]) for sid in source_ids for i in self._by_source.get(sid, ())]

    @property
    def size(self) -> int:
        """How many embeddings the store holds."""
        return len(self._items)


__all__ = ["InMemoryEmbeddingAdapter"]
