"""Rerankers: a :class:`Reranker` reorders the best hits of a search by a model's relevance.

:class:`~cogitator_memory.recall.MemoryRetriever` (and a ``ContextBuilder`` given
``deps.reranker``) hands a reranker the input and the texts of its best hits
(``RetrieverSettings.rerank_top``, 30 by default) after fusion, rerank by input words and MMR; the
reranker's order replaces theirs. A reranker that fails leaves the order as it was, and the
failure is reported (a ``relevance`` error of the build).

Three HTTP rerankers speak the common API shapes, over the package's shared HTTP plumbing
(:mod:`cogitator_memory.http`: timeouts, retries on 429/5xx honouring ``Retry-After``,
credentials kept out of messages):

================== ========================================= ============================= ==================
class              endpoint                                  answer                        key
================== ========================================= ============================= ==================
CohereReranker     ``POST {base}/v2/rerank`` (``top_n``)     ``results[].index/relevance_score`` ``$COHERE_API_KEY``
JinaReranker       ``POST {base}/v1/rerank`` (``top_n``)     ``results[].index/relevance_score`` ``$JINA_API_KEY``
VoyageReranker     ``POST {base}/v1/rerank`` (``top_k``)     ``data[].index/relevance_score``    ``$VOYAGE_API_KEY``
================== ========================================= ============================= ==================

Servers that copy one of these shapes (a self-hosted text-embeddings-inference or vLLM rerank
endpoint behind a gateway, say) work through ``base_url``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import httpx

from ..errors import InvalidArgumentError
from ..http import JsonHttpClient, ProviderServiceError, RetryPolicy, check_timeout, endpoint, env_key_for, redact_url


@dataclass(frozen=True, slots=True)
class RerankResult:
    """One reranked document: its ``index`` in the documents given and its relevance ``score``."""

    index: int
    score: float


@runtime_checkable
class Reranker(Protocol):
    """Orders documents by their relevance to a query.

    ``rerank`` returns results best first, each naming a document by its index; it may return
    fewer than it was given (the rest keep their order after them). It raises when it cannot
    rank (the caller keeps the order it had).
    """

    async def rerank(self, query: str, documents: Sequence[str]) -> list[RerankResult]:
        """The documents' indexes and scores, best first."""
        ...


class RerankerError(ProviderServiceError):
    """A reranking provider failed: HTTP error, timeout, unreachable server or malformed answer.

    ``provider`` names the service, ``status`` is the HTTP status of the last answer (``None``
    without one), ``retryable`` whether the failure was of a kind that is retried, ``attempts``
    how many requests were made. The message never holds a credential.
    """

    service = "rerank"


def check_results(results: object, count: int, who: str = "reranker") -> list[RerankResult]:
    """A reranker's answer checked: a list of :class:`RerankResult` with distinct indexes in
    ``range(count)`` and finite scores. Raises :class:`ValueError` naming what is wrong."""
    if not isinstance(results, list):
        raise ValueError(f"{who} returned {type(results).__name__}, not a list of RerankResult")
    seen: set[int] = set()
    out: list[RerankResult] = []
    for i, result in enumerate(results):
        if not isinstance(result, RerankResult):
            raise ValueError(f"{who} result {i} is {type(result).__name__}, not a RerankResult")
        if isinstance(result.index, bool) or not isinstance(result.index, int) or not 0 <= result.index < count:
            raise ValueError(f"{who} result {i} names document {result.index!r} of {count}")
        if result.index in seen:
            raise ValueError(f"{who} names document {result.index} twice")
        if not isinstance(result.score, int | float) or not math.isfinite(result.score):
            raise ValueError(f"{who} result {i} has score {result.score!r}")
        seen.add(result.index)
        out.append(result)
    return out


def reranked_order(results: Sequence[RerankResult], count: int) -> list[int]:
    """Indexes ``0..count-1`` in the reranker's order: its results by score (best first, ties in
    the order it gave), then the documents it left out, in their old order."""
    ranked = sorted(range(len(results)), key=lambda i: (-results[i].score, i))
    order = [results[i].index for i in ranked]
    named = set(order)
    order.extend(i for i in range(count) if i not in named)
    return order


class HttpReranker:
    """The base of the HTTP rerankers: credentials, the shared HTTP client, checks of the answer.

    ``api_key`` defaults to the environment variable of the provider when ``base_url`` is the
    provider's own (a key from the environment never goes to another server; no header without one);
    ``timeout`` is the per-request timeout in seconds; ``retry`` the
    :class:`~cogitator_memory.http.RetryPolicy`. A client passed as ``http_client`` is used as
    is and not closed by :meth:`aclose`. Subclasses give the request and read the answer.
    """

    provider: ClassVar[str] = "http"
    default_base_url: ClassVar[str] = ""
    default_model: ClassVar[str] = ""
    api_key_env: ClassVar[str] = ""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        chosen = model if model is not None else self.default_model
        if not isinstance(chosen, str) or not chosen.strip():
            raise InvalidArgumentError("model", f"must be a non-empty string, got {chosen!r}")
        url = base_url if base_url is not None else self.default_base_url
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            shown = redact_url(url) if isinstance(url, str) else repr(url)
            raise InvalidArgumentError("base_url", f"must be an http:// or https:// URL, got {shown!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise InvalidArgumentError("api_key", f"must be a string, got {type(api_key).__name__}")
        self.model = chosen
        self.base_url = url.rstrip("/")
        self.timeout = check_timeout(timeout)
        self._api_key = (
            api_key if api_key is not None else env_key_for(self.base_url, self.default_base_url, self.api_key_env)
        )
        self._transport = JsonHttpClient(
            error=self._error,
            timeout=self.timeout,
            retry=retry,
            http_client=http_client,
            secrets=[self._api_key] if self._api_key else [],
        )
        self.retry = self._transport.retry

    def _error(self, status: int | None, detail: str, retryable: bool, attempts: int) -> RerankerError:
        return RerankerError(self.provider, status, detail, retryable=retryable, attempts=attempts)

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    async def aclose(self) -> None:
        """Close the HTTP client if this reranker created it."""
        await self._transport.aclose()

    async def __aenter__(self) -> HttpReranker:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _url(self) -> str:
        raise NotImplementedError

    def _payload(self, query: str, documents: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _list_key(self) -> str:
        return "results"

    async def rerank(self, query: str, documents: Sequence[str]) -> list[RerankResult]:
        """The documents' indexes and relevance scores, best first (raises :class:`RerankerError`)."""
        if not isinstance(query, str):
            raise InvalidArgumentError("query", f"must be a string, got {type(query).__name__}")
        if isinstance(documents, str) or not isinstance(documents, Sequence):
            raise InvalidArgumentError("documents", "must be a list of strings")
        docs: list[str] = []
        for i, doc in enumerate(documents):
            if not isinstance(doc, str):
                raise InvalidArgumentError(f"documents[{i}]", f"must be a string, got {type(doc).__name__}")
            docs.append(doc)
        if not docs:
            return []
        status, body = await self._transport.post_json(self._url(), self._payload(query, docs), self._headers())
        return self._parse(status, body, len(docs))

    def _parse(self, status: int, body: Any, count: int) -> list[RerankResult]:
        key = self._list_key()
        rows = body.get(key) if isinstance(body, Mapping) else None
        if not isinstance(rows, list):
            raise RerankerError(self.provider, status, f"malformed answer: no {key!r} list")
        results: list[RerankResult] = []
        for position, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise RerankerError(self.provider, status, f"malformed answer: {key}[{position}] is not an object")
            index = row.get("index")
            score = row.get("relevance_score")
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise RerankerError(
                    self.provider, status, f"malformed answer: {key}[{position}] names document {index!r} of {count}"
                )
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise RerankerError(
                    self.provider, status, f"malformed answer: {key}[{position}] has relevance_score {score!r}"
                )
            results.append(RerankResult(index, float(score)))
        try:
            return check_results(results, count, self.provider)
        except ValueError as exc:
            raise RerankerError(self.provider, status, f"malformed answer: {exc}") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={redact_url(self.base_url)!r})"


class CohereReranker(HttpReranker):
    """Cohere's rerank API (``POST {base_url}/v2/rerank``), model ``rerank-v3.5`` by default.

    ``top_n`` (default: every document) limits how many results Cohere returns;
    ``max_tokens_per_doc`` is sent when given.
    """

    provider = "cohere"
    default_base_url = "https://api.cohere.com"
    default_model = "rerank-v3.5"
    api_key_env = "COHERE_API_KEY"

    def __init__(self, *, top_n: int | None = None, max_tokens_per_doc: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.top_n = _optional_positive("top_n", top_n)
        self.max_tokens_per_doc = _optional_positive("max_tokens_per_doc", max_tokens_per_doc)

    def _url(self) -> str:
        return endpoint(self.base_url, "v2/rerank")

    def _payload(self, query: str, documents: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "query": query, "documents": documents}
        if self.top_n is not None:
            payload["top_n"] = min(self.top_n, len(documents))
        if self.max_tokens_per_doc is not None:
            payload["max_tokens_per_doc"] = self.max_tokens_per_doc
        return payload


class JinaReranker(HttpReranker):
    """Jina AI's rerank API (``POST {base_url}/v1/rerank``), model
    ``jina-reranker-v2-base-multilingual`` by default; documents are not sent back."""

    provider = "jina"
    default_base_url = "https://api.jina.ai"
    default_model = "jina-reranker-v2-base-multilingual"
    api_key_env = "JINA_API_KEY"

    def __init__(self, *, top_n: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.top_n = _optional_positive("top_n", top_n)

    def _url(self) -> str:
        return endpoint(self.base_url, "v1/rerank")

    def _payload(self, query: str, documents: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "query": query,
            "documents": documents,
            "return_documents": False,
        }
        if self.top_n is not None:
            payload["top_n"] = min(self.top_n, len(documents))
        return payload


class VoyageReranker(HttpReranker):
    """Voyage AI's rerank API (``POST {base_url}/v1/rerank``), model ``rerank-2.5`` by default;
    results come in ``data``, ``top_k`` limits them, long documents are truncated by Voyage."""

    provider = "voyage"
    default_base_url = "https://api.voyageai.com"
    default_model = "rerank-2.5"
    api_key_env = "VOYAGE_API_KEY"

    def __init__(self, *, top_k: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.top_k = _optional_positive("top_k", top_k)

    def _url(self) -> str:
        return endpoint(self.base_url, "v1/rerank")

    def _list_key(self) -> str:
        return "data"

    def _payload(self, query: str, documents: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "query": query,
            "documents": documents,
            "return_documents": False,
            "truncation": True,
        }
        if self.top_k is not None:
            payload["top_k"] = min(self.top_k, len(documents))
        return payload


def _optional_positive(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(name, f"must be a positive integer, got {value!r}")
    return value


__all__ = [
    "CohereReranker",
    "HttpReranker",
    "JinaReranker",
    "RerankResult",
    "Reranker",
    "RerankerError",
    "VoyageReranker",
    "check_results",
    "reranked_order",
]
