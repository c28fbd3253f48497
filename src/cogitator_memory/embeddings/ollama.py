"""Ollama embeddings through its native batch endpoint ``POST {base_url}/api/embed``.

One request carries a list of inputs (``{"model": ..., "input": [...]}``) and the answer holds
``{"embeddings": [[...], ...]}`` in the same order. Ollama's vectors are L2-normalised.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..http import endpoint, redact_url
from .base import EmbeddingServiceError, parse_vector, resolve_model
from .http import HttpEmbeddingService, RetryPolicy

OLLAMA_MODEL_DIMENSIONS: dict[str, int] = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
    "embeddinggemma": 768,
}
"""Vector sizes of common Ollama embedding models (a ``:tag`` suffix is ignored)."""

DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434"


class OllamaEmbeddingService(HttpEmbeddingService):
    """Embeddings from a local or remote Ollama server.

    ``dimensions`` defaults to the size of a known model (see ``OLLAMA_MODEL_DIMENSIONS``) and
    is required for others. ``truncate`` (Ollama's default, true) cuts inputs longer than the
    model's context instead of failing; ``keep_alive`` is passed through when set.
    """

    provider = "ollama"

    def __init__(
        self,
        *,
        model: str = "nomic-embed-text",
        dimensions: int | None = None,
        base_url: str = DEFAULT_OLLAMA_BASE_URL,
        truncate: bool = True,
        keep_alive: str | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        key = model.split(":", 1)[0] if isinstance(model, str) else None
        model, dimensions, _ = resolve_model(model, dimensions, OLLAMA_MODEL_DIMENSIONS, key)
        super().__init__(
            dimensions=dimensions, batch_size=batch_size, timeout=timeout, retry=retry, http_client=http_client
        )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.truncate = bool(truncate)
        self.keep_alive = keep_alive

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "truncate": self.truncate}
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        status, body = await self._post_json(
            endpoint(self.base_url, "api/embed"), payload, {"content-type": "application/json"}
        )
        embeddings = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(embeddings, list):
            raise EmbeddingServiceError(self.provider, status, "malformed answer: no 'embeddings' list")
        if len(embeddings) != len(texts):
            raise EmbeddingServiceError(
                self.provider, status, f"malformed answer: {len(embeddings)} vectors for {len(texts)} texts"
            )
        return [
            parse_vector(self.provider, status, raw, self.dimensions, f"embeddings[{i}]")
            for i, raw in enumerate(embeddings)
        ]

    def __repr__(self) -> str:
        return f"OllamaEmbeddingService(model={self.model!r}, dimensions={self.dimensions}, base_url={redact_url(self.base_url)!r})"


__all__ = ["DEFAULT_OLLAMA_BASE_URL", "OLLAMA_MODEL_DIMENSIONS", "OllamaEmbeddingService"]
