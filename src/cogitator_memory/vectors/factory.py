"""``create_embedding_adapter``: an embedding store from a config dict, drivers imported lazily."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..stores.factory import build_from_config
from .base import EmbeddingAdapter

#: provider -> (module, class). Stores import their drivers only in connect().
EMBEDDING_PROVIDERS: dict[str, tuple[str, str]] = {
    "memory": ("cogitator_memory.vectors.memory", "InMemoryEmbeddingAdapter"),
    "sqlite": ("cogitator_memory.vectors.sqlite", "SQLiteEmbeddingAdapter"),
    "qdrant": ("cogitator_memory.vectors.qdrant", "QdrantAdapter"),
    "postgres": ("cogitator_memory.stores.postgres", "PostgresAdapter"),
}


def create_embedding_adapter(config: Mapping[str, Any] | None = None, **options: Any) -> EmbeddingAdapter:
    """Create (not connect) the embedding store a config names.

    ``config["provider"]`` is one of ``memory``, ``sqlite``, ``qdrant``, ``postgres`` (the
    PostgreSQL store keeps threads and vectors); the other keys are the store's keyword options
    (``dimensions``, ``path``, ``url``, ``collection``...). Keyword arguments are merged over
    ``config``. Raises :class:`~cogitator_memory.errors.InvalidArgumentError` for an unknown
    provider or option. A missing driver is reported by ``connect()``, with the pip command.
    """
    return cast(EmbeddingAdapter, build_from_config(EMBEDDING_PROVIDERS, config, options))


__all__ = ["EMBEDDING_PROVIDERS", "create_embedding_adapter"]
