"""``QdrantAdapter``: embeddings in a Qdrant collection, through ``qdrant-client``'s async client.

Each embedding is a point whose id is a deterministic UUID of the embedding id
(:func:`point_id`, ``uuid5``), since Qdrant accepts only unsigned integers and UUIDs; the
``emb_...`` id stays in ``payload["embedding_id"]`` and is what searches return. The payload
also holds ``source_id``, ``source_type``, ``content``, ``metadata``, ``created_at`` (epoch
microseconds), the scope keys copied to the top level (only when set), ``terms`` (the
tokenized content) and ``metadata_terms``: one string per top-level metadata key holding a
string, an integer or a boolean, the JSON of ``[key, value]`` (:func:`metadata_term`). Keyword
payload indexes cover ``embedding_id``, ``source_id``, ``source_type``, ``agent_id``,
``user_id``, ``thread_id``, ``terms`` and ``metadata_terms``.

Every filter runs on the server, so a search's top ``limit`` is taken among the matching points
only. A metadata condition matches one ``metadata_terms`` string: any key works (dots, spaces,
quotes: no payload path is parsed), a list value never equals a scalar (Qdrant's own match would
find ``"x"`` in ``["x", "y"]``), and ``True`` is not ``1``. A collection written before
``metadata_terms`` existed gets them at connect (:meth:`QdrantAdapter.connect`).

Qdrant normalises cosine vectors when it stores them, so vectors read back with length 1.

Keyword search: Qdrant has no BM25 over payload text, so the candidates (points in the filter
holding a query term, found through the ``terms`` index) are scored here with
:class:`~cogitator_memory.search.bm25.BM25`; ``N`` is an exact count of the filtered points, each
term's document frequency is counted over the candidates (which are every filtered point holding
a term, so it is exact too), and the average document length is that of the candidates (Qdrant
cannot sum a payload field).

``url=":memory:"`` (or ``location=":memory:"``) and ``path=`` run qdrant-client's local mode,
an in-process re-implementation for tests.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from ...clock import from_micros, to_micros
from ...errors import ConflictError, InvalidArgumentError, MissingDriverError, NotConnectedError
from ...search.bm25 import BM25
from ...search.tokenizer import index_terms
from ...vectors.base import BaseEmbeddingAdapter
from ...vectors.records import (
    SCOPE_KEYS,
    DeletionFilter,
    Embedding,
    EmbeddingFilter,
    MetadataValue,
    ScoredEmbedding,
)

#: The namespace of :func:`point_id`.
POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://cogitator.ai/memory/embedding")
#: The payload field of the exact metadata values (see :func:`metadata_term`).
METADATA_TERMS = "metadata_terms"
INDEXED_FIELDS = ("embedding_id", "source_id", "source_type", *SCOPE_KEYS, "terms", METADATA_TERMS)
_SCROLL_PAGE = 1_000


def metadata_term(key: str, value: object) -> str | None:
    """The string a metadata filter ``{key: value}`` matches: the JSON of ``[key, value]``.

    Only strings, integers and booleans (what a filter may ask for) have one; other values
    (floats, lists, objects, ``None``) give ``None``, so no filter matches them, as the
    store-independent rule (:func:`~cogitator_memory.vectors.records.same_value`) says.
    """
    if not isinstance(value, str | int):  # bool is an int
        return None
    return json.dumps([key, value], ensure_ascii=False, separators=(",", ":"))


def metadata_terms(metadata: dict[str, Any]) -> list[str]:
    """The ``metadata_terms`` payload of an embedding's metadata, in key order."""
    return [t for key in sorted(metadata) if (t := metadata_term(key, metadata[key])) is not None]


def point_id(embedding_id: str) -> str:
    """The Qdrant point id of an embedding: ``uuid5(POINT_NAMESPACE, embedding_id)`` as a string."""
    return str(uuid.uuid5(POINT_NAMESPACE, embedding_id))


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError:
        raise MissingDriverError("QdrantAdapter", "qdrant", "qdrant-client") from None
    return models


def qdrant_filter(
    models: Any,
    *,
    source_type: str | None = None,
    scope: dict[str, str] | None = None,
    exact: dict[str, MetadataValue] | None = None,
    any_terms: Sequence[str] | None = None,
    excluded: dict[str, list[MetadataValue]] | None = None,
) -> Any:
    """A ``models.Filter`` for the conditions (``None`` when there are none).

    ``scope`` keys follow the scoping rule (absent is shared); ``exact`` are metadata keys that
    must hold exactly that value (matched through ``metadata_terms``); ``any_terms`` matches points whose ``terms`` hold any of them;
    ``excluded`` keys must hold none of their values (through ``metadata_terms`` too).
    """
    must: list[Any] = []
    if source_type is not None:
        must.append(models.FieldCondition(key="source_type", match=models.MatchValue(value=source_type)))
    for key, value in (scope or {}).items():
        must.append(
            models.Filter(
                should=[
                    models.IsEmptyCondition(is_empty=models.PayloadField(key=key)),
                    models.FieldCondition(key=key, match=models.MatchValue(value=value)),
                ]
            )
        )
    for key, wanted in (exact or {}).items():
        term = metadata_term(key, wanted)
        assert term is not None  # filters hold strings, integers and booleans only
        must.append(models.FieldCondition(key=METADATA_TERMS, match=models.MatchValue(value=term)))
    if any_terms:
        must.append(models.FieldCondition(key="terms", match=models.MatchAny(any=list(any_terms))))
    must_not: list[Any] = []
    for key, unwanted in (excluded or {}).items():
        for unwanted_value in unwanted:
            term = metadata_term(key, unwanted_value)
            assert term is not None
            must_not.append(models.FieldCondition(key=METADATA_TERMS, match=models.MatchValue(value=term)))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


class QdrantAdapter(BaseEmbeddingAdapter):
    """An embedding store in a Qdrant collection (``pip install "cogitator-memory[qdrant]"``).

    ``url`` is the server (``http://localhost:6333``), or ``":memory:"`` for the local mode;
    ``path`` a folder for the local mode on disk; ``collection`` the collection (created on
    connect, or on the first write when ``dimensions`` is not known yet); ``api_key`` and
    ``timeout`` (seconds) go to the client. ``client`` takes an ``AsyncQdrantClient`` you made
    (it is not closed by :meth:`disconnect`).
    """

    provider: ClassVar[str] = "qdrant"
    cheap_metadata_not: ClassVar[bool] = True

    def __init__(
        self,
        *,
        url: str | None = None,
        path: str | None = None,
        collection: str = "cogitator",
        dimensions: int | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        client: Any = None,
        provider: str | None = None,
    ) -> None:
        if provider not in (None, "qdrant"):
            raise InvalidArgumentError("provider", f"must be 'qdrant', got {provider!r}")
        if not isinstance(collection, str) or not collection or "/" in collection:
            raise InvalidArgumentError("collection", f"must be a non-empty name without '/', got {collection!r}")
        if client is None and url is None and path is None:
            url = "http://localhost:6333"
        super().__init__(dimensions=dimensions)
        self.url = url
        self.path = path
        self.collection = collection
        self.api_key = api_key
        self.timeout = timeout
        self._given_client = client
        self._client: Any = None
        self._models: Any = None
        self._collection_ready = False
        self.bm25 = BM25()

    @property
    def local(self) -> bool:
        """Whether this runs qdrant-client's local mode (no server)."""
        return self._given_client is None and (self.path is not None or self.url == ":memory:")

    # ----- lifecycle -------------------------------------------------------------------------

    async def _connect(self) -> None:
        models = _models()
        from qdrant_client import AsyncQdrantClient

        if self._given_client is not None:
            client = self._given_client
        elif self.path is not None:
            client = AsyncQdrantClient(path=self.path)
        elif self.url == ":memory:":
            client = AsyncQdrantClient(location=":memory:")
        else:
            client = AsyncQdrantClient(
                url=self.url, api_key=self.api_key, timeout=max(1, int(self.timeout)), check_compatibility=False
            )
        try:
            self._client, self._models = client, models
            if await client.collection_exists(self.collection):
                info = await client.get_collection(self.collection)
                params = info.config.params.vectors
                size = getattr(params, "size", None)
                if size is None:
                    raise ConflictError(f"qdrant collection {self.collection} has named vectors; it needs one vector")
                self._adopt_dimensions(int(size))
                self._collection_ready = True
                if METADATA_TERMS not in (info.payload_schema or {}):
                    await self._add_metadata_terms()
            elif self._dimensions is not None:
                await self._create_collection(self._dimensions)
        except BaseException:
            self._client = None
            if self._given_client is None:
                await client.close()
            raise

    async def _stored_dimensions(self) -> int | None:
        client = self._c()
        if not await client.collection_exists(self.collection):
            return None
        info = await client.get_collection(self.collection)
        size = getattr(info.config.params.vectors, "size", None)
        if size is not None:
            self._collection_ready = True
        return None if size is None else int(size)

    async def _create_collection(self, dims: int) -> None:
        models = self._models
        client = self._client
        if not await client.collection_exists(self.collection):
            await client.create_collection(
                self.collection, vectors_config=models.VectorParams(size=dims, distance=models.Distance.COSINE)
            )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field in INDEXED_FIELDS:
                await client.create_payload_index(
                    self.collection, field, field_schema=models.PayloadSchemaType.KEYWORD, wait=True
                )
        self._collection_ready = True

    async def _add_metadata_terms(self) -> None:
        """Give the points of a collection written before ``metadata_terms`` existed theirs, then
        index the field (a server's index is the mark that this was done; the local mode keeps no
        indexes, so it looks for points without the field at every connect)."""
        models = self._models
        client = self._client
        lacking = models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key=METADATA_TERMS))])
        updates = []
        for point in await self._scroll(lacking, with_vectors=False, payload=["metadata"]):
            terms = metadata_terms((point.payload or {}).get("metadata") or {})
            if terms:
                payload = models.SetPayload(payload={METADATA_TERMS: terms}, points=[point.id])
                updates.append(models.SetPayloadOperation(set_payload=payload))
        for start in range(0, len(updates), _SCROLL_PAGE):
            await client.batch_update_points(self.collection, update_operations=updates[start : start + _SCROLL_PAGE])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            await client.create_payload_index(
                self.collection, METADATA_TERMS, field_schema=models.PayloadSchemaType.KEYWORD, wait=True
            )

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        self._collection_ready = False
        if client is not None and self._given_client is None:
            await client.close()

    async def _ping(self) -> None:
        await self._c().get_collections()

    def _c(self) -> Any:
        if self._client is None:
            raise NotConnectedError("qdrant embedding store is not connected: call connect() first")
        return self._client

    # ----- points ----------------------------------------------------------------------------

    @staticmethod
    def _payload(e: Embedding) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "embedding_id": e.id,
            "source_id": e.source_id,
            "source_type": e.source_type,
            "content": e.content,
            "metadata": e.metadata,
            "created_at": to_micros(e.created_at),
            "terms": sorted(set(index_terms(e.content))),
            METADATA_TERMS: metadata_terms(e.metadata),
        }
        for key in SCOPE_KEYS:
            if e.metadata.get(key) is not None:
                payload[key] = e.metadata[key]
        return payload

    @staticmethod
    def _record(point: Any) -> dict[str, Any]:
        p = point.payload or {}
        vector = point.vector
        if isinstance(vector, dict):  # named vectors: take the unnamed one
            vector = vector.get("", next(iter(vector.values()), []))
        return {
            "id": p["embedding_id"],
            "source_id": p["source_id"],
            "source_type": p["source_type"],
            "content": p["content"],
            "vector": list(vector or []),
            "metadata": p.get("metadata") or {},
            "created_at": from_micros(int(p["created_at"])),
        }

    def _embedding(self, point: Any) -> Embedding:
        return Embedding.model_validate(self._record(point))

    def _scored(self, point: Any, score: float) -> ScoredEmbedding:
        return ScoredEmbedding.model_validate({**self._record(point), "score": score})

    async def _scroll(self, flt: Any, *, with_vectors: bool, payload: Any = True) -> list[Any]:
        client = self._c()
        out: list[Any] = []
        offset = None
        while True:
            points, offset = await client.scroll(
                self.collection,
                scroll_filter=flt,
                limit=_SCROLL_PAGE,
                offset=offset,
                with_payload=payload,
                with_vectors=with_vectors,
            )
            out.extend(points)
            if offset is None:
                return out

    # ----- writes ----------------------------------------------------------------------------

    async def _add_embeddings(self, embeddings: list[Embedding]) -> None:
        models = self._models
        client = self._c()
        if not self._collection_ready:
            await self._create_collection(len(embeddings[0].vector))
        ids = [point_id(e.id) for e in embeddings]
        found = await client.retrieve(self.collection, ids=ids, with_payload=["embedding_id"], with_vectors=False)
        if found:
            taken = sorted((p.payload or {}).get("embedding_id", str(p.id)) for p in found)
            raise ConflictError(f"embedding id(s) already stored: {', '.join(taken)}")
        points = [
            models.PointStruct(id=pid, vector=e.vector, payload=self._payload(e))
            for pid, e in zip(ids, embeddings, strict=True)
        ]
        await client.upsert(self.collection, points=points, wait=True)

    async def _delete_embedding(self, embedding_id: str) -> bool:
        if not self._collection_ready:
            return False
        client = self._c()
        pid = point_id(embedding_id)
        found = await client.retrieve(self.collection, ids=[pid], with_payload=False, with_vectors=False)
        if not found:
            return False
        await client.delete(self.collection, points_selector=self._models.PointIdsList(points=[pid]), wait=True)
        return True

    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        if not self._collection_ready:
            return 0
        condition = qdrant_filter(self._models, source_type=flt.source_type, exact=flt.exact_metadata())
        doomed = [p.id for p in await self._scroll(condition, with_vectors=False, payload=False)]
        if doomed:
            await self._c().delete(self.collection, points_selector=self._models.PointIdsList(points=doomed), wait=True)
        return len(doomed)

    # ----- reads -----------------------------------------------------------------------------

    def _search_filter(self, flt: EmbeddingFilter, any_terms: Sequence[str] | None = None) -> Any:
        return qdrant_filter(
            self._models,
            source_type=flt.source_type,
            scope=flt.scope(),
            exact=dict(flt.metadata or {}),
            any_terms=any_terms,
            excluded=flt.excluded(),
        )

    async def _search(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        return await self._search_hits(vector, limit, threshold, flt, True)

    async def _search_hits(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        if not self._collection_ready:
            return []
        response = await self._c().query_points(
            self.collection,
            query=vector,
            limit=limit,
            # local mode keeps only scores above the threshold, a server those at or above it
            score_threshold=None if threshold <= -1.0 else threshold - 1e-6,
            query_filter=self._search_filter(flt),
            with_payload=True,
            with_vectors=include_vectors,
        )
        hits = []
        for p in response.points:
            score = max(-1.0, min(1.0, float(p.score)))
            if score >= threshold:
                hits.append(self._scored(p, score))
        return hits

    async def _keyword_search(self, terms: list[str], limit: int, flt: EmbeddingFilter) -> list[ScoredEmbedding]:
        return await self._keyword_hits(terms, limit, flt, True)

    async def _keyword_hits(
        self, terms: list[str], limit: int, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        if not self._collection_ready:
            return []
        client = self._c()
        candidates = await self._scroll(self._search_filter(flt, terms), with_vectors=False, payload=True)
        if not candidates:
            return []
        scope = self._search_filter(flt)
        n_docs = (await client.count(self.collection, count_filter=scope, exact=True)).count
        token_lists = [index_terms((p.payload or {}).get("content", "")) for p in candidates]
        # every point of the filter holding a term is a candidate, so the candidates give the
        # exact document frequencies (no count request per term)
        position = {term: i for i, term in enumerate(terms)}
        doc_freq = Counter(t for tokens in token_lists for t in set(tokens) if t in position)
        avg_len = sum(len(t) for t in token_lists) / len(token_lists)
        scored = []
        for point, tokens in zip(candidates, token_lists, strict=True):
            counts = Counter(tokens)
            held = sorted((t for t in counts if t in position), key=position.__getitem__)  # query order
            score = self.bm25.score(held, counts, n_docs=n_docs, avg_len=avg_len, doc_freq=doc_freq)
            if score > 0:
                scored.append((score, point))
        scored.sort(key=lambda pair: (-pair[0], (pair[1].payload or {}).get("embedding_id", "")))
        top = scored[:limit]
        if not top:
            return []
        if not include_vectors:
            return [self._scored(p, s) for s, p in top]
        with_vectors = await client.retrieve(
            self.collection, ids=[p.id for _, p in top], with_payload=True, with_vectors=True
        )
        by_id = {str(p.id): p for p in with_vectors}
        return [self._scored(by_id[str(p.id)], s) for s, p in top if str(p.id) in by_id]

    async def _get_embedding(self, embedding_id: str) -> Embedding | None:
        if not self._collection_ready:
            return None
        found = await self._c().retrieve(
            self.collection, ids=[point_id(embedding_id)], with_payload=True, with_vectors=True
        )
        return self._embedding(found[0]) if found else None

    async def _get_by_sources(self, source_ids: list[str]) -> list[Embedding]:
        if not self._collection_ready:
            return []
        models = self._models
        condition = models.Filter(must=[models.FieldCondition(key="source_id", match=models.MatchAny(any=source_ids))])
        return [self._embedding(p) for p in await self._scroll(condition, with_vectors=True)]


__all__ = [
    "INDEXED_FIELDS",
    "METADATA_TERMS",
    "POINT_NAMESPACE",
    "QdrantAdapter",
    "metadata_term",
    "metadata_terms",
    "point_id",
    "qdrant_filter",
]
