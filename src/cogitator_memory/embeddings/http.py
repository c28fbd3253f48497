"""The base of the embedding services behind an HTTP API.

The plumbing itself (timeouts, retries honouring ``Retry-After``, error mapping, credentials kept
out of messages) is the package's shared :mod:`cogitator_memory.http`, the same one the chat
model clients use; :class:`HttpEmbeddingService` posts through it and raises
:class:`~cogitator_memory.embeddings.base.EmbeddingServiceError` naming the provider and the
HTTP status. ``RetryPolicy`` and ``parse_retry_after`` are re-exported here for the imports that
name this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ..http import JsonHttpClient, RetryCallback, RetryPolicy, parse_retry_after
from .base import BaseEmbeddingService, EmbeddingServiceError


class HttpEmbeddingService(BaseEmbeddingService):
    """A service behind an HTTP API. Owns its ``httpx.AsyncClient`` unless one is passed in.

    ``timeout`` is the per-request timeout in seconds (connect, read, write and pool alike);
    ``retry`` the :class:`~cogitator_memory.http.RetryPolicy`. A client passed as
    ``http_client`` is used as is and not closed by :meth:`aclose`.
    """

    def __init__(
        self,
        *,
        dimensions: int,
        batch_size: int,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(dimensions=dimensions, batch_size=batch_size)
        self._transport = JsonHttpClient(error=self._error, timeout=timeout, retry=retry, http_client=http_client)
        self.timeout = self._transport.timeout
        self.retry = self._transport.retry

    def _error(self, status: int | None, detail: str, retryable: bool, attempts: int) -> EmbeddingServiceError:
        return EmbeddingServiceError(self.provider, status, detail, retryable=retryable, attempts=attempts)

    async def aclose(self) -> None:
        """Close the HTTP client if this service created it."""
        await self._transport.aclose()

    async def _post_json(self, url: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[int, Any]:
        """POST ``payload`` and return (status, parsed JSON), retrying as the policy says."""
        return await self._transport.post_json(url, payload, headers)


__all__ = ["HttpEmbeddingService", "RetryCallback", "RetryPolicy", "parse_retry_after"]
