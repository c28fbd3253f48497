"""OpenAI embeddings (``POST {base_url}/embeddings``), and any server that speaks the same API.

``base_url`` defaults to ``https://api.openai.com/v1``; point it at an OpenAI-compatible server
(vLLM, llama.cpp, LM Studio, Ollama's ``/v1``, Azure-style gateways) to use that instead. The
``dimensions`` parameter is sent for ``text-embedding-3-*`` models only, the ones that accept it.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..http import endpoint, env_key_for, redact_url
from .base import EmbeddingServiceError, parse_vector, resolve_model
from .http import HttpEmbeddingService, RetryPolicy

OPENAI_MODEL_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Native vector sizes of OpenAI's embedding models; another model needs ``dimensions``."""

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAIEmbeddingService(HttpEmbeddingService):
    """Embeddings from OpenAI's ``/v1/embeddings`` API.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` when ``base_url`` is OpenAI's own (the key is never
    sent to another server unless passed); without one no ``Authorization`` header is sent (local
    OpenAI-compatible servers need none). ``dimensions`` defaults to the model's native
    size; for a ``text-embedding-3`` model a smaller value is sent as the API's ``dimensions``
    parameter. ``batch_size`` texts go in one request (the API takes up to 2048).
    """

    provider = "openai"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        organization: str | None = None,
        batch_size: int = 512,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        model, dimensions, native = resolve_model(model, dimensions, OPENAI_MODEL_DIMENSIONS)
        super().__init__(
            dimensions=dimensions, batch_size=batch_size, timeout=timeout, retry=retry, http_client=http_client
        )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = (
            api_key if api_key is not None else env_key_for(self.base_url, DEFAULT_OPENAI_BASE_URL, "OPENAI_API_KEY")
        )
        self._organization = organization
        self._send_dimensions = model.startswith("text-embedding-3") and dimensions != native

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        if self._organization:
            headers["openai-organization"] = self._organization
        return headers

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_dimensions:
            payload["dimensions"] = self.dimensions
        status, body = await self._post_json(endpoint(self.base_url, "embeddings"), payload, self._headers())
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingServiceError(self.provider, status, "malformed answer: no 'data' list")
        if len(data) != len(texts):
            raise EmbeddingServiceError(
                self.provider, status, f"malformed answer: {len(data)} vectors for {len(texts)} texts"
            )
        vectors: list[list[float] | None] = [None] * len(texts)
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbeddingServiceError(
                    self.provider, status, f"malformed answer: data[{position}] is not an object"
                )
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(texts):
                raise EmbeddingServiceError(
                    self.provider, status, f"malformed answer: data[{position}] has index {index!r}"
                )
            if vectors[index] is not None:
                raise EmbeddingServiceError(self.provider, status, f"malformed answer: index {index} appears twice")
            vectors[index] = parse_vector(
                self.provider, status, item.get("embedding"), self.dimensions, f"data[{position}].embedding"
            )
        return [v for v in vectors if v is not None]

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingService(model={self.model!r}, dimensions={self.dimensions}, base_url={redact_url(self.base_url)!r})"


__all__ = ["DEFAULT_OPENAI_BASE_URL", "OPENAI_MODEL_DIMENSIONS", "OpenAIEmbeddingService"]
