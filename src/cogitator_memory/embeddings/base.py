"""The ``EmbeddingService`` protocol, its error class, and the base class the services share.

Users type against :class:`EmbeddingService` (``embed``, ``embed_batch``, ``dimensions``).
Service authors subclass :class:`BaseEmbeddingService`, which checks the input once for every
provider and splits a batch into requests of ``batch_size`` texts; a subclass implements only
:meth:`BaseEmbeddingService._embed_chunk`.

Input rules, the same for every provider (the spec is silent, so this is our choice):

* ``embed_batch([])`` returns ``[]`` and sends nothing.
* A text that is not a ``str``, or that is empty or only whitespace, raises
  :class:`~cogitator_memory.errors.InvalidArgumentError` naming the argument (and the index
  for a batch) before any request is sent. Providers disagree on empty input (OpenAI answers
  400, others return a vector of nothing in particular), and a vector of no text would match
  everything equally badly, so callers skip empty texts instead.
* Vectors come back in the order of the texts, one per text, each of ``dimensions`` floats.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidArgumentError
from ..http import ProviderServiceError


class EmbeddingServiceError(ProviderServiceError):
    """An embedding provider failed: HTTP error, timeout, unreachable server or malformed answer.

    ``provider`` is the provider's name (``"openai"``, ``"ollama"``, ``"google"``, ``"local"``),
    ``status`` the HTTP status of the last answer (``None`` when there was none: timeout,
    connection error, local model), ``retryable`` whether the failure was of a kind that is
    retried (429, 5xx, timeouts, connection errors) and ``attempts`` how many requests were made.
    The message names the provider and the status.
    """

    service = "embeddings"


@runtime_checkable
class EmbeddingService(Protocol):
    """Turns text into vectors of a fixed size.

    ``embed`` and ``embed_batch`` raise :class:`EmbeddingServiceError` when the provider fails
    and :class:`~cogitator_memory.errors.InvalidArgumentError` for empty or non-string input.
    """

    @property
    def dimensions(self) -> int:
        """The size of every vector this service returns."""
        ...

    async def embed(self, text: str) -> list[float]:
        """The vector of one text."""
        ...

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of ``texts``, in the same order."""
        ...


def check_texts(texts: Sequence[str], argument: str = "texts") -> list[str]:
    """Return ``texts`` as a list, or raise ``InvalidArgumentError`` for a bad item.

    A bare ``str`` is refused (it would be taken as a sequence of characters).
    """
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise InvalidArgumentError(argument, f"expected a list of strings, got {type(texts).__name__}")
    out: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidArgumentError(f"{argument}[{i}]", f"expected a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidArgumentError(f"{argument}[{i}]", "is empty; embedding services need some text")
        out.append(text)
    return out


def resolve_model(
    model: object, dimensions: int | None, known: Mapping[str, int], key: str | None = None
) -> tuple[str, int, int | None]:
    """``(model, dimensions, native size)`` of a provider's model.

    ``model`` must be a non-empty string; ``dimensions`` defaults to the model's native size from
    ``known`` (looked up by ``key``, default the model name) and is required when that is unknown.
    """
    if not isinstance(model, str) or not model:
        raise InvalidArgumentError("model", "must be a non-empty string")
    native = known.get(key if key is not None else model)
    if dimensions is None:
        if native is None:
            raise InvalidArgumentError("dimensions", f"is required for model '{model}', whose size is not known")
        dimensions = native
    return model, dimensions, native


def check_positive(argument: str, value: Any) -> int:
    """Return ``value`` if it is a positive int, else raise ``InvalidArgumentError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(argument, f"must be a positive integer, got {value!r}")
    return value


def parse_vector(provider: str, status: int | None, raw: Any, expected: int | None, where: str) -> list[float]:
    """Check one vector of a provider's answer and return it as floats.

    Raises :class:`EmbeddingServiceError` when ``raw`` is not a list of finite numbers (``bool``
    is refused), or has another length than ``expected``.
    """
    if not isinstance(raw, list):
        raise EmbeddingServiceError(provider, status, f"malformed answer: {where} is {type(raw).__name__}, not a list")
    if not raw:
        raise EmbeddingServiceError(provider, status, f"malformed answer: {where} is an empty vector")
    out: list[float] = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EmbeddingServiceError(
                provider, status, f"malformed answer: {where} holds a non-numeric value {value!r:.40}"
            )
        number = float(value)
        if not math.isfinite(number):
            raise EmbeddingServiceError(provider, status, f"malformed answer: {where} holds {number}")
        out.append(number)
    if expected is not None and len(out) != expected:
        raise EmbeddingServiceError(
            provider, status, f"malformed answer: {where} has {len(out)} dimensions, expected {expected}"
        )
    return out


class BaseEmbeddingService(ABC):
    """What every shipped service shares: input checks, batching, ``embed`` from ``embed_batch``.

    Subclasses set ``provider`` and implement :meth:`_embed_chunk` for at most ``batch_size``
    texts. They are async context managers; :meth:`aclose` releases what they hold (an HTTP
    client, a model session) and is safe to call twice.
    """

    provider: str = "embeddings"

    def __init__(self, *, dimensions: int, batch_size: int) -> None:
        self._dimensions = check_positive("dimensions", dimensions)
        self.batch_size = check_positive("batch_size", batch_size)

    @property
    def dimensions(self) -> int:
        """The size of every vector this service returns."""
        return self._dimensions

    async def embed(self, text: str) -> list[float]:
        """The vector of one text (see the module docs for the input rules)."""
        if not isinstance(text, str):
            raise InvalidArgumentError("text", f"expected a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidArgumentError("text", "is empty; embedding services need some text")
        return (await self._embed_chunk([text]))[0]

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of ``texts`` in order, sent in requests of at most ``batch_size`` texts."""
        items = check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            out.extend(await self._embed_chunk(items[start : start + self.batch_size]))
        return out

    @abstractmethod
    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        """Embed at most ``batch_size`` checked, non-empty texts; one vector per text, in order."""

    async def aclose(self) -> None:
        """Release the resources the service holds. The base class holds none."""
        return None

    async def __aenter__(self) -> BaseEmbeddingService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dimensions={self.dimensions}, batch_size={self.batch_size})"


__all__ = [
    "BaseEmbeddingService",
    "EmbeddingService",
    "EmbeddingServiceError",
    "check_positive",
    "check_texts",
    "parse_vector",
]
