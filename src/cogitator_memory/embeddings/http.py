"""The HTTP plumbing the provider clients share: timeouts, retries with backoff, error mapping.

:class:`RetryPolicy` says how often and how long to wait; :class:`HttpEmbeddingService` owns one
``httpx.AsyncClient`` and posts JSON through :meth:`HttpEmbeddingService._post_json`, which

* retries on 429, on every 5xx, on timeouts and on connection errors, waiting
  ``backoff_base * 2**n`` seconds (capped at ``backoff_max``, with up to ``jitter`` of it added
  at random), or what the answer's ``Retry-After`` header asks (seconds or an HTTP date);
* gives up at once, without waiting, when ``Retry-After`` asks for more than
  ``max_retry_after`` seconds;
* never retries another 4xx (bad key, bad request, unknown model);
* maps every failure to :class:`~cogitator_memory.embeddings.base.EmbeddingServiceError`
  naming the provider and the HTTP status, with the provider's own error text when it sent one.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from ..errors import InvalidArgumentError
from .base import BaseEmbeddingService, EmbeddingServiceError

RetryCallback = Callable[[int, float, str], None]
"""Called before each retry with (attempt number from 1, seconds it will wait, reason)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries: ``max_retries`` retries after the first attempt.

    ``on_retry`` (optional) is told of every retry before the wait: useful for logging, and how
    the tests check that ``Retry-After`` was honoured.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    jitter: float = 0.1
    max_retry_after: float = 60.0
    on_retry: RetryCallback | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise InvalidArgumentError("max_retries", f"must be an integer >= 0, got {self.max_retries!r}")
        for name in ("backoff_base", "backoff_max", "jitter", "max_retry_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidArgumentError(name, f"must be a number >= 0, got {value!r}")

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (from 1) when the server named no time."""
        delay = float(min(self.backoff_max, self.backoff_base * (2.0 ** (retry - 1))))
        return delay + random.uniform(0, self.jitter * delay) if self.jitter else delay


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: a number of seconds or an HTTP date.

    Returns ``None`` when the header is missing or unreadable; a date in the past gives 0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        return max(0.0, when.timestamp() - current)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)


def _error_text(response: httpx.Response) -> str:
    """The provider's own error message from a failed answer, shortened."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:300] if text else response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    return json.dumps(body)[:300]


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


class HttpEmbeddingService(BaseEmbeddingService):
    """A service behind an HTTP API. Owns its ``httpx.AsyncClient`` unless one is passed in.

    ``timeout`` is the per-request timeout in seconds (connect, read, write and pool alike);
    ``retry`` the :class:`RetryPolicy`. A client passed as ``http_client`` is used as is and
    not closed by :meth:`aclose`.
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
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidArgumentError("timeout", f"must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.retry = retry if retry is not None else RetryPolicy()
        self._client = http_client
        self._owns_client = http_client is None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout))
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client if this service created it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()

    async def _post_json(self, url: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[int, Any]:
        """POST ``payload`` and return (status, parsed JSON), retrying as the policy says."""
        policy = self.retry
        attempt = 0
        while True:
            attempt += 1
            status: int | None = None
            reason: str
            wait: float | None = None
            try:
                response = await self._http().post(url, json=dict(payload), headers=dict(headers), timeout=self.timeout)
            except httpx.TimeoutException as exc:
                reason = f"request timed out after {self.timeout:g}s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                reason = f"cannot reach {url}: {type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status < 300:
                    try:
                        return status, response.json()
                    except ValueError:
                        raise EmbeddingServiceError(
                            self.provider,
                            status,
                            f"malformed answer: body is not JSON: {response.text[:120]!r}",
                            attempts=attempt,
                        ) from None
                reason = _error_text(response)
                if not _retryable(status):
                    raise EmbeddingServiceError(self.provider, status, reason, attempts=attempt)
                wait = parse_retry_after(response.headers.get("retry-after"))
                if wait is not None and wait > policy.max_retry_after:
                    raise EmbeddingServiceError(
                        self.provider,
                        status,
                        f"{reason} (the server asks to retry after {wait:.0f}s, more than "
                        f"max_retry_after={policy.max_retry_after:g}s)",
                        retryable=True,
                        attempts=attempt,
                    )
            if attempt > policy.max_retries:
                tries = "1 attempt" if attempt == 1 else f"{attempt} attempts"
                raise EmbeddingServiceError(
                    self.provider, status, f"{reason} (gave up after {tries})", retryable=True, attempts=attempt
                )
            delay = wait if wait is not None else policy.backoff(attempt)
            if policy.on_retry is not None:
                policy.on_retry(attempt, delay, reason if status is None else f"HTTP {status}: {reason}")
            await asyncio.sleep(delay)


__all__ = ["HttpEmbeddingService", "RetryCallback", "RetryPolicy", "parse_retry_after"]
