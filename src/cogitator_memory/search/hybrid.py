"""``HybridSearch``: BM25 and vector search of one embedding store, fused by reciprocal rank.

Each search fetches ``candidates`` hits (default 50) from the store (``keyword_search`` and
``search``, with the same filter), and the two rankings are fused with
:func:`~cogitator_memory.search.fusion.reciprocal_rank_fusion` (``k`` = 60, weights
``keyword_weight`` and ``vector_weight``, 1 each by default). A hit keeps the score and the
1-based rank it had in each list it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..result import MemoryResult, err, ok
from ..vectors.records import ScoredEmbedding
from .fusion import DEFAULT_RRF_K, reciprocal_rank_fusion

if TYPE_CHECKING:
    from ..vectors.base import EmbeddingAdapter, FilterInput


class HybridHit(ScoredEmbedding):
    """A fused hit: ``score`` is the RRF score; the per-search scores and ranks are kept."""

    vector_score: float | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    keyword_rank: int | None = None


def _weight(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0 or value == float("inf"):
        raise InvalidArgumentError(name, f"must be a finite number >= 0, got {value!r}")
    return float(value)


class HybridSearch:
    """BM25 + vector search over an :class:`~cogitator_memory.vectors.EmbeddingAdapter`, fused by RRF."""

    def __init__(
        self,
        store: EmbeddingAdapter,
        *,
        vector_weight: float = 1.0,
        keyword_weight: float = 1.0,
        k: float = DEFAULT_RRF_K,
        candidates: int = 50,
    ) -> None:
        self.store = store
        self.vector_weight = _weight("vector_weight", vector_weight)
        self.keyword_weight = _weight("keyword_weight", keyword_weight)
        self.k = _weight("k", k)
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidArgumentError("candidates", f"must be a positive integer, got {candidates!r}")
        self.candidates = candidates

    async def search(
        self,
        query: str,
        vector: Sequence[float] | None = None,
        *,
        limit: int = 10,
        threshold: float = 0.0,
        filter: FilterInput = None,
    ) -> MemoryResult[list[HybridHit]]:
        """The ``limit`` best hits for ``query`` (BM25) and ``vector`` (cosine >= ``threshold``).

        Without ``vector`` (or with ``vector_weight`` 0) only the keyword search runs, and
        likewise for ``keyword_weight`` 0. A failed search fails the call with its message.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return err(InvalidArgumentError("limit", f"must be a positive integer, got {limit!r}"))
        fetch = max(self.candidates, limit)
        rankings: list[list[str]] = []
        weights: list[float] = []
        hits: dict[str, ScoredEmbedding] = {}
        extra: dict[str, dict[str, Any]] = {}
        if self.keyword_weight > 0:
            kw = await self.store.keyword_search(query, limit=fetch, filter=filter)
            if not kw.success:
                return err(kw.error or "keyword search failed", kw.error_type)
            ranking = []
            for rank, hit in enumerate(kw.data or [], start=1):
                hits.setdefault(hit.id, hit)
                extra.setdefault(hit.id, {}).update(keyword_score=hit.score, keyword_rank=rank)
                ranking.append(hit.id)
            rankings.append(ranking)
            weights.append(self.keyword_weight)
        if vector is not None and self.vector_weight > 0:
            vs = await self.store.search(vector, limit=fetch, threshold=threshold, filter=filter)
            if not vs.success:
                return err(vs.error or "vector search failed", vs.error_type)
            ranking = []
            for rank, hit in enumerate(vs.data or [], start=1):
                hits.setdefault(hit.id, hit)
                extra.setdefault(hit.id, {}).update(vector_score=hit.score, vector_rank=rank)
                ranking.append(hit.id)
            rankings.append(ranking)
            weights.append(self.vector_weight)
        fused = reciprocal_rank_fusion(rankings, k=self.k, weights=weights, limit=limit)
        out = []
        for hit_id, score in fused:
            base = hits[hit_id].model_dump(exclude={"score"})
            out.append(HybridHit.model_validate({**base, **extra[hit_id], "score": score}))
        return ok(out)


__all__ = ["HybridHit", "HybridSearch"]
