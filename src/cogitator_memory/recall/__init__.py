"""Recall: reading what a turn asks for and finding it in memory.

- :func:`analyze_query` reads a turn without a model: whether to search, the kind of question,
  the time it names, its terms and names (:class:`QueryAnalysis`); :func:`analyze_query_async`
  reads a long one in a worker thread. A turn is at most :data:`MAX_QUERY_CHARS` characters.
- :class:`MemoryRetriever` searches turns and memory items by several channels and returns
  them in one ranked list (:class:`Retrieval`, :class:`RecallHit`), as the hybrid strategy of
  the context builder does; :class:`RetrieverSettings` holds its numbers.
- :class:`Reranker` reorders the best hits; :class:`CohereReranker`, :class:`JinaReranker` and
  :class:`VoyageReranker` are HTTP rerankers.
- :func:`resolve_time` turns time words ("last Tuesday", "early March", "the 90s") into a UTC
  interval with its precision, and :func:`find_times` finds such words in running text.

See ``docs/recall.md`` and ``docs/time.md``.
"""

from .query import MAX_QUERY_CHARS, QUERY_KINDS, QueryAnalysis, QueryKind, analyze_query, analyze_query_async
from .rerank import (
    CohereReranker,
    HttpReranker,
    JinaReranker,
    Reranker,
    RerankerError,
    RerankResult,
    VoyageReranker,
)
from .retriever import MemoryRetriever, RecallHit, Retrieval
from .settings import CHANNELS, DEFAULT_WEIGHTS, Channel, RetrieverSettings
from .time import (
    PRECISIONS,
    Hemisphere,
    Precision,
    Prefer,
    TimeInterval,
    TimeMention,
    find_times,
    resolve_time,
    zone_hemisphere,
)

__all__ = [
    "CHANNELS",
    "DEFAULT_WEIGHTS",
    "MAX_QUERY_CHARS",
    "PRECISIONS",
    "QUERY_KINDS",
    "Channel",
    "CohereReranker",
    "Hemisphere",
    "HttpReranker",
    "JinaReranker",
    "MemoryRetriever",
    "Precision",
    "Prefer",
    "QueryAnalysis",
    "QueryKind",
    "RecallHit",
    "RerankResult",
    "Reranker",
    "RerankerError",
    "Retrieval",
    "RetrieverSettings",
    "TimeInterval",
    "TimeMention",
    "VoyageReranker",
    "analyze_query",
    "analyze_query_async",
    "find_times",
    "resolve_time",
    "zone_hemisphere",
]
