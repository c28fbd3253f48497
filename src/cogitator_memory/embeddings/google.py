"""Google Gemini embeddings: ``POST {base_url}/models/{model}:batchEmbedContents``.

The key goes in the ``x-goog-api-key`` header (never in the URL, where it would end up in logs).
Each text becomes one request of the batch; the answer is ``{"embeddings": [{"values": [...]}]}``
in the same order. The API takes at most 100 texts per call, the default ``batch_size``.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..http import endpoint, env_key_for
from .base import EmbeddingServiceError, parse_vector, resolve_model
from .http import HttpEmbeddingService, RetryPolicy

GOOGLE_MODEL_DIMENSIONS: dict[str, int] = {
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
    "embedding-001": 768,
}
"""Native vector sizes of Google's embedding models."""

DEFAULT_GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


class GoogleEmbeddingService(HttpEmbeddingService):
    """Embeddings from the Gemini API.

    ``api_key`` defaults to ``$GEMINI_API_KEY``, then ``$GOOGLE_API_KEY`` (for Google's own
    ``base_url`` only). ``dimensions`` smaller
    than the model's native size is sent as ``outputDimensionality`` (Gemini then returns vectors
    that are not unit length; cosine search does not mind). ``task_type`` (e.g.
    ``"RETRIEVAL_DOCUMENT"``, ``"RETRIEVAL_QUERY"``, ``"SEMANTIC_SIMILARITY"``) is sent with every
    text when set.
    """

    provider = "google"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str = "gemini-embedding-001",
        dimensions: int | None = None,
        base_url: str = DEFAULT_GOOGLE_BASE_URL,
        task_type: str | None = None,
        batch_size: int = 100,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if isinstance(model, str):
            model = model.removeprefix("models/")
        model, dimensions, native = resolve_model(model, dimensions, GOOGLE_MODEL_DIMENSIONS)
        super().__init__(
            dimensions=dimensions, batch_size=batch_size, timeout=timeout, retry=retry, http_client=http_client
        )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.task_type = task_type
        key = (
            api_key
            if api_key is not None
            else env_key_for(self.base_url, DEFAULT_GOOGLE_BASE_URL, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        )
        self._api_key = key
        self._send_dimensions = dimensions != native

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        if not self._api_key:
            raise EmbeddingServiceError(
                self.provider,
                None,
                "no API key: pass api_key, or set GEMINI_API_KEY / GOOGLE_API_KEY (read only for Google's own base_url)",
                attempts=0,
            )
        requests: list[dict[str, Any]] = []
        for text in texts:
            request: dict[str, Any] = {"model": f"models/{self.model}", "content": {"parts": [{"text": text}]}}
            if self.task_type:
                request["taskType"] = self.task_type
            if self._send_dimensions:
                request["outputDimensionality"] = self.dimensions
            requests.append(request)
        status, body = await self._post_json(
            endpoint(self.base_url, f"models/{self.model}:batchEmbedContents"),
            {"requests": requests},
            {"content-type": "application/json", "x-goog-api-key": self._api_key},
        )
        embeddings = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(embeddings, list):
            raise EmbeddingServiceError(self.provider, status, "malformed answer: no 'embeddings' list")
        if len(embeddings) != len(texts):
            raise EmbeddingServiceError(
                self.provider, status, f"malformed answer: {len(embeddings)} vectors for {len(texts)} texts"
            )
        out: list[list[float]] = []
        for i, item in enumerate(embeddings):
            values = item.get("values") if isinstance(item, dict) else None
            out.append(parse_vector(self.provider, status, values, self.dimensions, f"embeddings[{i}].values"))
        return out

    def __repr__(self) -> str:
        return f"GoogleEmbeddingService(model={self.model!r}, dimensions={self.dimensions})"


__all__ = ["DEFAULT_GOOGLE_BASE_URL", "GOOGLE_MODEL_DIMENSIONS", "GoogleEmbeddingService"]
