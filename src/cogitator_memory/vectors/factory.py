"""``create_embedding_adapter``: an embedding store from a config dict, drivers imported lazily."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, cast

from ..errors import InvalidArgumentError
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
    merged: dict[str, Any] = {**(config or {}), **options}
    provider = merged.pop("provider", None)
    if provider not in EMBEDDING_PROVIDERS:
        raise InvalidArgumentError("provider", f"must be one of {', '.join(EMBEDDING_PROVIDERS)}, got {provider!r}")
    module_name, class_name = EMBEDDING_PROVIDERS[provider]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise InvalidArgumentError("provider", f"the {provider} store is not available in this version") from None
        raise
    cls = cast(type[Any], getattr(module, class_name))
    try:
        store = cls(**merged)
    except TypeError as exc:
        raise InvalidArgumentError("config", f"{class_name}: {exc}") from None
    return cast(EmbeddingAdapter, store)


__all__ = ["EMBEDDING_PROVIDERS", "create_embedding_adapter"]
