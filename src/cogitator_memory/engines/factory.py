"""Factories: a thread store or an embedding store from a config dict, drivers imported lazily.

This is the one module that names every engine; it imports an engine's module only when that
engine is asked for, and an engine imports its driver only when it connects.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, cast

from ..errors import InvalidArgumentError
from ..threads.base import BaseMemoryAdapter
from ..vectors.base import EmbeddingAdapter

#: provider -> (module, class). Modules of engines with drivers import them only in connect().
PROVIDERS: dict[str, tuple[str, str]] = {
    "memory": ("cogitator_memory.engines.memory.threads", "InMemoryAdapter"),
    "sqlite": ("cogitator_memory.engines.sqlite.threads", "SQLiteAdapter"),
    "postgres": ("cogitator_memory.engines.postgres.adapter", "PostgresAdapter"),
    "redis": ("cogitator_memory.engines.redis.threads", "RedisAdapter"),
    "mongodb": ("cogitator_memory.engines.mongodb.adapter", "MongoDBAdapter"),
}


def build_from_config(
    providers: Mapping[str, tuple[str, str]], config: Mapping[str, Any] | None, options: Mapping[str, Any]
) -> Any:
    """The store of ``providers`` that ``config["provider"]`` names, made with the other keys.

    Imports only the store's module (which imports its driver only when it connects). Raises
    :class:`InvalidArgumentError` for an unknown provider or option.
    """
    merged: dict[str, Any] = {**(config or {}), **options}
    provider = merged.pop("provider", None)
    if provider not in providers:
        raise InvalidArgumentError("provider", f"must be one of {', '.join(providers)}, got {provider!r}")
    module_name, class_name = providers[provider]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise InvalidArgumentError("provider", f"the {provider} store is not available in this version") from None
        raise
    cls = getattr(module, class_name)
    try:
        return cls(**merged)
    except TypeError as exc:
        raise InvalidArgumentError("config", f"{class_name}: {exc}") from None


def create_memory_adapter(config: Mapping[str, Any] | None = None, **options: Any) -> BaseMemoryAdapter:
    """Create (not connect) the thread store a config names.

    ``config["provider"]`` is one of ``memory``, ``sqlite``, ``postgres``, ``redis``,
    ``mongodb``; the other keys are the store's keyword options. Keyword arguments are merged
    over ``config``. Raises :class:`InvalidArgumentError` for an unknown provider or option.
    """
    return cast(BaseMemoryAdapter, build_from_config(PROVIDERS, config, options))


#: provider -> (module, class). Stores import their drivers only in connect().
EMBEDDING_PROVIDERS: dict[str, tuple[str, str]] = {
    "memory": ("cogitator_memory.engines.memory.vectors", "InMemoryEmbeddingAdapter"),
    "sqlite": ("cogitator_memory.engines.sqlite.vectors", "SQLiteEmbeddingAdapter"),
    "qdrant": ("cogitator_memory.engines.qdrant.vectors", "QdrantAdapter"),
    "postgres": ("cogitator_memory.engines.postgres.adapter", "PostgresAdapter"),
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


__all__ = ["EMBEDDING_PROVIDERS", "PROVIDERS", "build_from_config", "create_embedding_adapter", "create_memory_adapter"]
