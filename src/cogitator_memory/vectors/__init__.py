"""Embedding stores: the :class:`EmbeddingAdapter` contract and its stores.

``InMemoryEmbeddingAdapter`` (numpy), ``SQLiteEmbeddingAdapter`` (the same file as
``SQLiteAdapter``) and ``QdrantAdapter`` (``qdrant-client``), created directly or with
:func:`create_embedding_adapter`. Importing this package imports no driver. See ``docs/vectors.md``.
"""

from .base import (
    BaseEmbeddingAdapter,
    EmbeddingAdapter,
    EmbeddingInput,
    EmbeddingStoreMixin,
    FilterInput,
    check_dimensions,
)
from .factory import EMBEDDING_PROVIDERS, create_embedding_adapter
from .memory import InMemoryEmbeddingAdapter
from .qdrant import QdrantAdapter
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
    deletion_matches,
    filter_matches,
)
from .sqlite import SQLiteEmbeddingAdapter

__all__ = [
    "EMBEDDING_PROVIDERS",
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
    "InMemoryEmbeddingAdapter",
    "NewEmbedding",
    "QdrantAdapter",
    "SQLiteEmbeddingAdapter",
    "ScoredEmbedding",
    "check_dimensions",
    "create_embedding_adapter",
    "deletion_matches",
    "filter_matches",
]
