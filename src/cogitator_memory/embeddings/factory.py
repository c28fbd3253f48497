"""``create_embedding_service(config)``: an embedding service from a plain configuration.

``config`` is a mapping (or a pydantic model, dumped without ``None`` fields) with ``provider``
in ``openai``, ``ollama``, ``google``, ``local``, ``hashing`` and the keyword arguments of that
provider's class (``api_key``, ``model``, ``dimensions``, ``base_url``, ``batch_size``,
``timeout``...). The HTTP providers also take the fields of
:class:`~cogitator_memory.embeddings.http.RetryPolicy` flat (``max_retries``, ``backoff_base``,
``backoff_max``, ``jitter``, ``max_retry_after``). An unknown provider or key raises
:class:`~cogitator_memory.errors.InvalidArgumentError` naming it; nothing connects until the
first ``embed``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from .base import BaseEmbeddingService
from .google import GoogleEmbeddingService
from .hashing import HashingEmbedder
from .http import HttpEmbeddingService, RetryPolicy
from .local import LocalEmbeddingService
from .ollama import OllamaEmbeddingService
from .openai import OpenAIEmbeddingService

PROVIDERS: dict[str, type[BaseEmbeddingService]] = {
    "openai": OpenAIEmbeddingService,
    "ollama": OllamaEmbeddingService,
    "google": GoogleEmbeddingService,
    "local": LocalEmbeddingService,
    "hashing": HashingEmbedder,
}
"""The providers ``create_embedding_service`` knows, by name."""

_RETRY_KEYS = ("max_retries", "backoff_base", "backoff_max", "jitter", "max_retry_after")


def _options(cls: type[BaseEmbeddingService]) -> set[str]:
    params = inspect.signature(cls.__init__).parameters
    return {name for name, p in params.items() if name != "self" and p.kind is not p.VAR_KEYWORD}


def create_embedding_service(config: Mapping[str, Any] | Any) -> BaseEmbeddingService:
    """Build the embedding service ``config`` describes (see the module docs for the keys).

    >>> service = create_embedding_service({"provider": "hashing", "dimensions": 64})
    >>> service.dimensions
    64
    """
    if hasattr(config, "model_dump") and not isinstance(config, Mapping):
        config = config.model_dump(exclude_none=True)
    if not isinstance(config, Mapping):
        raise InvalidArgumentError("config", f"expected a mapping, got {type(config).__name__}")
    options = dict(config)
    provider = options.pop("provider", None)
    if not isinstance(provider, str) or provider.lower() not in PROVIDERS:
        raise InvalidArgumentError("provider", f"must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    cls = PROVIDERS[provider.lower()]
    is_http = issubclass(cls, HttpEmbeddingService)
    allowed = _options(cls) - {"http_client", "retry"}
    if is_http:
        allowed |= set(_RETRY_KEYS)
    for key in options:
        if key not in allowed:
            raise InvalidArgumentError(
                key, f"is not an option of the '{provider}' provider (options: {', '.join(sorted(allowed))})"
            )
    retry_fields = {k: options.pop(k) for k in _RETRY_KEYS if k in options} if is_http else {}
    if retry_fields:
        options["retry"] = RetryPolicy(**retry_fields)
    try:
        return cls(**options)
    except TypeError as exc:
        raise InvalidArgumentError("config", str(exc)) from exc


__all__ = ["PROVIDERS", "create_embedding_service"]
