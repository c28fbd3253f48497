"""HTTP plumbing every provider client shares: timeouts, retries with backoff, error mapping, redaction.

The embedding services and the chat model clients post JSON to their provider through one
:class:`JsonHttpClient`, which

* retries on 429, on every 5xx, on timeouts and on connection errors, waiting
  ``backoff_base * 2**n`` seconds (capped at ``backoff_max``, with up to ``jitter`` of it added
  at random), or what the answer's ``Retry-After`` header asks (seconds or an HTTP date);
* gives up at once, without waiting, when ``Retry-After`` asks for more than
  ``max_retry_after`` seconds;
* never retries another 4xx (bad key, bad request, unknown model);
* turns every failure into the caller's own error class (an ``error`` factory given the HTTP
  status, the detail, whether the failure was retryable and how many requests were made), with
  the provider's own error text when it sent one;
* keeps credentials out of every message: the values of the credential headers it sent
  (``authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``), user info and query
  strings of URLs are replaced by ``***`` (:func:`redact`, :func:`redact_url`);
* keeps them out of httpx's own log too: httpx logs every request at INFO with its full URL
  (user info of ``base_url``, ``?api_key=``), so the first client made puts a
  :class:`RedactingLogFilter` on the ``httpx`` logger, which masks those records as
  :func:`redact` does.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import logging
import os
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from .errors import InvalidArgumentError, MemoryStoreError

RetryCallback = Callable[[int, float, str], None]
"""Called before each retry with (attempt number from 1, seconds it will wait, reason)."""

ErrorFactory = Callable[[int | None, str, bool, int], Exception]
"""Makes the error a failed request raises from (HTTP status or ``None``, detail, retryable, attempts)."""


class ProviderServiceError(MemoryStoreError):
    """A provider's service failed: HTTP error, timeout, unreachable server or malformed answer.

    The base of :class:`~cogitator_memory.embeddings.EmbeddingServiceError` and
    :class:`~cogitator_memory.models.ModelServiceError`. ``provider`` is the provider's name,
    ``status`` the HTTP status of the last answer (``None`` when there was none), ``detail`` what
    went wrong, ``retryable`` whether the failure was of a kind that is retried (429, 5xx,
    timeouts, connection errors) and ``attempts`` how many requests were made. The message is
    ``"<provider> <service> failed (HTTP <status>): <detail>"``, ``service`` naming what the
    subclass serves (``"no HTTP status"`` in place of the status when there was none).
    """

    #: What was asked of the provider, as the message names it.
    service = "service"

    def __init__(
        self,
        provider: str,
        status: int | None,
        detail: str,
        *,
        retryable: bool = False,
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.status = status
        self.detail = detail
        self.retryable = retryable
        self.attempts = attempts
        where = f"HTTP {status}" if status is not None else "no HTTP status"
        super().__init__(f"{provider} {self.service} failed ({where}): {detail}")


#: Request headers whose values are credentials, never shown in a message.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key"})

_MASK = "***"
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_SECRET_NAMES = r"(?:key|api[-_]?key|apikey|token|access[-_]?token|auth|password|secret|sig|signature)"
_SECRET_NAME = re.compile(f"(?i){_SECRET_NAMES}")
_SECRET_PARAM = re.compile(rf"(?i)([?&]{_SECRET_NAMES}=)[^&#\s]+")
_MIN_SECRET = 4


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries: ``max_retries`` retries after the first attempt.

    ``backoff_base * 2**(n-1)`` seconds pass before retry ``n`` when the server names no time,
    never more than ``backoff_max``, plus up to ``jitter`` of it at random. A ``Retry-After``
    longer than ``max_retry_after`` seconds fails at once. ``on_retry`` (optional) is told of
    every retry before the wait: useful for logging, and how the tests check that ``Retry-After``
    was honoured.
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


#: The fields of :class:`RetryPolicy` a flat configuration may carry (factories take them).
RETRY_KEYS = ("max_retries", "backoff_base", "backoff_max", "jitter", "max_retry_after")


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


def check_timeout(value: object, argument: str = "timeout") -> float:
    """``value`` as a positive number of seconds, else ``InvalidArgumentError`` naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value == float("inf"):
        raise InvalidArgumentError(argument, f"must be a positive number of seconds, got {value!r}")
    return float(value)


def redact_url(url: str) -> str:
    """``url`` without user info, query string or fragment, for messages and reprs.

    >>> redact_url("https://user:secret@gateway.example/v1?key=abc")
    'https://gateway.example/v1'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return redact(url)
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def endpoint(base_url: str, path: str) -> str:
    """The URL of ``path`` under ``base_url``: the path is joined to the base's path, before its
    query string (a gateway's ``?api-version=...`` or ``?key=...`` stays a query string).

    >>> endpoint("https://gateway.example/v1/?api-version=2024", "chat/completions")
    'https://gateway.example/v1/chat/completions?api-version=2024'
    """
    parts = urlsplit(base_url)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: its password (and a token-like user name) and its credential query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password or ""]
    if parts.password:  # what httpx sends as Basic auth for user info in the URL
        found.append(base64.b64encode(f"{parts.username or ''}:{parts.password}".encode()).decode())
    if parts.username and len(parts.username) >= 16:  # a token passed as the user name
        found.append(parts.username)
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if _SECRET_NAME.fullmatch(name):
            found.append(value)
    return [s for s in found if len(s) >= _MIN_SECRET]


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The credential values among ``headers`` (a ``Bearer``/``Basic`` scheme name left out)."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in CREDENTIAL_HEADERS and value:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.isalpha():
                found.append(token.strip())
    return [s for s in found if len(s) >= _MIN_SECRET]


class RedactingLogFilter(logging.Filter):
    """A log filter that masks credentials in every record it sees, as :func:`redact` does
    (URL user info, credential-like query values); the record is kept, its text masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's to report
            return True
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


#: The filter on the ``httpx`` logger (one for the process: ``addFilter`` adds it once).
HTTPX_LOG_FILTER = RedactingLogFilter()


def redact_httpx_log() -> None:
    """Put :data:`HTTPX_LOG_FILTER` on the ``httpx`` logger, whose INFO line of each request
    shows the full URL; done by every :class:`JsonHttpClient` (a second call changes nothing)."""
    logging.getLogger("httpx").addFilter(HTTPX_LOG_FILTER)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret, every URL's user info and every credential-like query value masked."""
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, _MASK)
    text = _URL_USERINFO.sub(rf"\1{_MASK}@", text)
    return _SECRET_PARAM.sub(rf"\1{_MASK}", text)


def error_text(response: httpx.Response, secrets: Iterable[str] = (), limit: int = 300) -> str:
    """The provider's own error message from a failed answer, redacted, then shortened to ``limit``.

    Reads ``{"error": {"message": ...}}`` (OpenAI, Anthropic, Gemini), ``{"error": "..."}``
    (Ollama) and ``{"message": ...}``; otherwise the body itself. Credentials are masked before
    the text is shortened, so a cut never leaves part of one.
    """
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip() or response.reason_phrase
    else:
        text = json.dumps(body)
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            elif isinstance(error, str):
                text = error
            elif isinstance(body.get("message"), str):
                text = body["message"]
    return redact(text, secrets)[:limit]


def env_key_for(url: str, home: str, *variables: str) -> str | None:
    """The API key from the first set environment ``variables``, only when ``url`` is on the same
    host as ``home`` (the provider's own address): a key from the environment is never sent to a
    gateway or a local server the caller pointed the client at (pass ``api_key`` for those)."""
    try:
        target = httpx.URL(url).host.lower()
        own = httpx.URL(home).host.lower()
    except (httpx.InvalidURL, TypeError):
        return None
    if not target or target != own:
        return None
    for variable in variables:
        value = os.environ.get(variable)
        if value:
            return value
    return None


def retryable_status(status: int) -> bool:
    """Whether an answer of ``status`` is worth another try: 429 and every 5xx."""
    return status == 429 or status >= 500


class JsonHttpClient:
    """Posts JSON to one provider with a timeout and a :class:`RetryPolicy`.

    Owns its ``httpx.AsyncClient`` unless one is passed as ``http_client`` (that one is used as
    is and not closed by :meth:`aclose`). ``timeout`` is the per-request timeout in seconds
    (connect, read, write and pool alike). ``error`` makes the exception every failure raises;
    ``secrets`` are strings masked in every message on top of the credential headers of each
    request.
    """

    def __init__(
        self,
        *,
        error: ErrorFactory,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.timeout = check_timeout(timeout)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidArgumentError("retry", f"must be a RetryPolicy, got {type(retry).__name__}")
        self.retry = retry if retry is not None else RetryPolicy()
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise InvalidArgumentError("http_client", f"must be an httpx.AsyncClient, got {type(http_client).__name__}")
        self._error = error
        self._secrets = [s for s in secrets if s]
        redact_httpx_log()
        self._client = http_client
        self._owns_client = http_client is None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout))
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it; safe to call twice.

        A client passed in stays open and in use: closing it is its owner's business.
        """
        if not self._owns_client:
            return
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def post_json(self, url: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[int, Any]:
        """POST ``payload`` and return (status, parsed JSON), retrying as the policy says."""
        policy = self.retry
        secrets = [*self._secrets, *header_secrets(headers), *url_secrets(url)]
        shown_url = redact_url(url)

        def fail(status: int | None, detail: str, retryable: bool, attempts: int) -> Exception:
            return self._error(status, redact(detail, secrets), retryable, attempts)

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
                reason = f"cannot reach {shown_url}: {type(exc).__name__}: {redact(str(exc), secrets)}"
            else:
                status = response.status_code
                if status < 300:
                    try:
                        return status, response.json()
                    except ValueError:
                        start = redact(response.text, secrets)[:120]
                        raise fail(status, f"malformed answer: body is not JSON: {start!r}", False, attempt) from None
                reason = error_text(response, secrets)
                if not retryable_status(status):
                    raise fail(status, reason, False, attempt)
                wait = parse_retry_after(response.headers.get("retry-after"))
                if wait is not None and wait > policy.max_retry_after:
                    raise fail(
                        status,
                        f"{reason} (the server asks to retry after {wait:.0f}s, more than "
                        f"max_retry_after={policy.max_retry_after:g}s)",
                        True,
                        attempt,
                    )
            if attempt > policy.max_retries:
                tries = "1 attempt" if attempt == 1 else f"{attempt} attempts"
                raise fail(status, f"{reason} (gave up after {tries})", True, attempt)
            delay = wait if wait is not None else policy.backoff(attempt)
            if policy.on_retry is not None:
                told = reason if status is None else f"HTTP {status}: {reason}"
                policy.on_retry(attempt, delay, redact(told, secrets))
            await asyncio.sleep(delay)


__all__ = [
    "CREDENTIAL_HEADERS",
    "HTTPX_LOG_FILTER",
    "RETRY_KEYS",
    "ErrorFactory",
    "JsonHttpClient",
    "ProviderServiceError",
    "RedactingLogFilter",
    "RetryCallback",
    "RetryPolicy",
    "check_timeout",
    "endpoint",
    "env_key_for",
    "error_text",
    "header_secrets",
    "parse_retry_after",
    "redact",
    "redact_httpx_log",
    "redact_url",
    "retryable_status",
    "url_secrets",
]
