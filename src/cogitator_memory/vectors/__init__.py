"""Vectors: the embedding-store capability.

:mod:`.records` holds its records and filter rules, :mod:`.base` the ``EmbeddingAdapter`` protocol
and the ``BaseEmbeddingAdapter`` store authors subclass, :mod:`.matrix` the numpy matrix the
embedded engines search with. The stores themselves live in the engines
(``InMemoryEmbeddingAdapter``, ``SQLiteEmbeddingAdapter``, ``QdrantAdapter``, ``PostgresAdapter``)
and are imported from ``cogitator_memory``. See ``docs/vectors.md``.
"""

import importlib
from typing import Any

from .base import (
    BaseEmbeddingAdapter,
    EmbeddingAdapter,
    EmbeddingInput,
    EmbeddingStoreMixin,
    FilterInput,
    check_dimensions,
)
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
    deletion_matches,
    filter_matches,
)

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
    "VectorHit",
    "check_dimensions",
    "deletion_matches",
    "filter_matches",
]

#: Names this package exported before the stores moved to ``cogitator_memory.engines``: still
#: importable from here (loaded on first use, so importing the contract imports no engine).
_MOVED = {
    "EMBEDDING_PROVIDERS": "cogitator_memory.engines.factory",
    "create_embedding_adapter": "cogitator_memory.engines.factory",
    "InMemoryEmbeddingAdapter": "cogitator_memory.engines.memory.vectors",
    "SQLiteEmbeddingAdapter": "cogitator_memory.engines.sqlite.vectors",
    "QdrantAdapter": "cogitator_memory.engines.qdrant.vectors",
}


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
