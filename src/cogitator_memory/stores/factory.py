"""``create_memory_adapter``: a thread store from a config dict, drivers imported lazily."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, cast

from ..errors import InvalidArgumentError
from .base import BaseMemoryAdapter

#: provider -> (module, class). Modules of engines with drivers import them only in connect().
PROVIDERS: dict[str, tuple[str, str]] = {
    "memory": ("cogitator_memory.stores.memory", "InMemoryAdapter"),
    "sqlite": ("cogitator_memory.stores.sqlite", "SQLiteAdapter"),
    "postgres": ("cogitator_memory.stores.postgres", "PostgresAdapter"),
    "redis": ("cogitator_memory.stores.redis", "RedisAdapter"),
    "mongodb": ("cogitator_memory.stores.mongodb", "MongoDBAdapter"),
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


__all__ = ["PROVIDERS", "build_from_config", "create_memory_adapter"]
